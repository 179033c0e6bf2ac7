// Administration (semantics.md §8): listings, browse, group introspection,
// group deletion, queue deletion, purge.

#include "sim/broker_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct admin_fixture : broker_sim {
  actors::queue_pop_reply pop(const std::string& queue,
                              actors::queue_pop_request r) {
    auto out = request<actors::queue_pop_reply>(broker, actors::pop_atom::value,
                                                queue, r);
    REQUIRE(out);
    return *out;
  }

  std::vector<actors::ack_reply> ack(const std::string& queue,
                                     const std::string& partition,
                                     const std::string& group,
                                     const std::string& lease, offset off) {
    ack_request a;
    a.lease_id = lease;
    a.off = off;
    auto out = ack_located(queue, partition, group, std::vector{a});
    REQUIRE(out);
    return *out;
  }

  actors::queues_reply info(std::optional<std::string> queue = {}) {
    auto r = request<actors::queues_reply>(broker, actors::info_atom::value,
                                           queue);
    REQUIRE(r);
    return *r;
  }

  actors::groups_reply groups(std::optional<std::string> group = {},
                              std::optional<std::string> queue = {}) {
    auto r = request<actors::groups_reply>(
        broker, actors::groups_atom::value,
        actors::groups_request{std::move(group), std::move(queue)});
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    return *r;
  }

  actors::browse_reply browse(const std::string& queue,
                              const std::string& partition, offset from,
                              std::size_t n) {
    actors::browse_request b;
    b.partition = partition;
    b.from = from;
    b.max_frames = n;
    auto r = request<actors::browse_reply>(broker, actors::browse_atom::value,
                                           queue, b);
    REQUIRE(r);
    return *r;
  }

  actors::purge_reply purge(const std::string& queue,
                            std::optional<offset> below,
                            std::optional<std::string> partition = {}) {
    auto r = request<actors::purge_reply>(
        broker, actors::purge_atom::value, queue,
        actors::purge_request{std::move(partition), below});
    REQUIRE(r);
    return *r;
  }

  std::optional<storage::cursor_record>
  stored_cursor(const std::string& queue, const std::string& partition,
                const std::string& group) {
    auto i = info(queue);
    REQUIRE(i.queues.size() == 1);
    for (auto& p : i.queues[0].partitions)
      if (p.name == partition) {
        auto t = store.store->db().read();
        REQUIRE(t);
        auto c = storage::tables::get_cursor(*t, i.queues[0].record.id, p.id,
                                             group);
        REQUIRE(c);
        return *c;
      }
    FAIL("no partition " << partition);
    return std::nullopt;
  }
};

} // namespace

TEST_CASE("listing shows queues with options, partitions, lastOffset and "
          "watermark",
          "[sim][admin]") {
  admin_fixture fx;
  fx.push("orders", "p1", {"a", "b", "c"});
  fx.push("orders", "p2", {"d"});
  core::options_patch o;
  o.lease_time_s = 45;
  fx.configure("billing", o);
  auto all = fx.info();
  REQUIRE_FALSE(all.failure);
  REQUIRE(all.queues.size() == 2);
  CHECK(all.queues[0].record.name == "billing");
  CHECK(all.queues[0].record.options.lease_time_s == 45);
  REQUIRE(all.queues[0].partitions.size() == 1);
  CHECK(all.queues[0].partitions[0].next_offset == offset{0}); // lastOffset -1
  auto& orders = all.queues[1];
  CHECK(orders.record.name == "orders");
  CHECK(orders.record.options.lease_time_s == 300);
  REQUIRE(orders.partitions.size() == 2);
  CHECK(orders.partitions[0].name == "p1");
  CHECK(orders.partitions[0].next_offset == offset{3});
  CHECK(orders.partitions[0].watermark == offset{0});
  CHECK(orders.partitions[1].name == "p2");
  CHECK(orders.partitions[1].next_offset == offset{1});
  auto one = fx.info("orders");
  REQUIRE(one.queues.size() == 1);
  auto none = fx.info("nope");
  REQUIRE(none.failure);
  CHECK(none.failure->code == errc::not_found);
  CHECK(none.failure->message == "Queue not found");
}

TEST_CASE("browsing reads by offset without a lease or a commit",
          "[sim][admin]") {
  admin_fixture fx;
  fx.push("q", "p", {"m0", "m1", "m2", "m3", "m4"});
  auto b = fx.browse("q", "p", offset{2}, 2);
  REQUIRE_FALSE(b.failure);
  REQUIRE(b.frames.size() == 2);
  CHECK(b.frames[0].off == offset{2});
  CHECK(b.frames[1].data.payload == "m3");
  CHECK(b.next == offset{4});
  auto end = fx.browse("q", "p", offset{5}, 10);
  REQUIRE_FALSE(end.failure);
  CHECK(end.frames.empty());
  CHECK(end.next == offset{5});
  // Nobody's position moved: a new group still starts at offset 0.
  auto r = fx.pop("q", fx.pop_request("g", "p"));
  REQUIRE(r.claimed.size() == 1);
  CHECK(r.claimed[0].reply.messages.front().frame.off == offset{0});
  CHECK(r.claimed[0].reply.messages.front().delivery_count == 1);
  auto unknown = fx.browse("q", "nope", offset{0}, 1);
  REQUIRE(unknown.failure);
  CHECK(unknown.failure->message == "Partition not found");
  auto bad = fx.browse("q", "p", offset{-1}, 1);
  REQUIRE(bad.failure);
  CHECK(bad.failure->code == errc::invalid_argument);
  CHECK(fx.browse("nope", "p", offset{0}, 1).failure->message
        == "Queue not found");
}

TEST_CASE("group introspection shows committed, exact lag, time lag, the live "
          "lease and idle time",
          "[sim][admin]") {
  admin_fixture fx;
  auto first = fx.push("q", "p", {"a", "b"});
  fx.advance(5s);
  fx.push("q", "p", {"c", "d", "e"});
  auto r = fx.pop("q", fx.pop_request("g", "p", 3));
  REQUIRE(r.claimed.size() == 1);
  auto lease = *r.claimed[0].reply.lease;
  fx.advance(2s);
  REQUIRE(fx.ack("q", "p", "g", lease.id, offset{0})[0].error
          == ack_error::none);
  auto acked_at = fx.wall();
  fx.advance(3s);
  auto gs = fx.groups("g");
  REQUIRE(gs.cursors.size() == 1);
  auto& c = gs.cursors[0];
  CHECK(c.queue == "q");
  CHECK(c.partition == "p");
  CHECK(c.group == "g");
  CHECK(c.committed == offset{0});
  CHECK(c.last_offset == offset{4});
  CHECK(c.lag == 4);
  // Offset 1 is the oldest not committed: it came with the first push.
  CHECK(c.oldest_unconsumed_at == first.created_at);
  REQUIRE(c.lease);
  CHECK(c.lease->id == lease.id);
  CHECK(c.lease->range == offset_range{offset{0}, offset{2}});
  // 300 s lease taken 5 s ago.
  CHECK(c.lease_expires_at == fx.wall() + 295'000'000);
  CHECK(c.last_activity == acked_at);
  // A second group; filters by group and by queue.
  fx.pop("q", fx.pop_request("h", "p", 1));
  CHECK(fx.groups().cursors.size() == 2);
  CHECK(fx.groups({}, "q").cursors.size() == 2);
  CHECK(fx.groups("h").cursors.size() == 1);
  CHECK(fx.groups("nobody").cursors.empty());
  // After a restart the stored cursors are listed, without leases.
  fx.start();
  auto after = fx.groups("g");
  REQUIRE(after.cursors.size() == 1);
  CHECK(after.cursors[0].committed == offset{0});
  CHECK_FALSE(after.cursors[0].lease);
}

TEST_CASE("deleting a group removes its cursors, ends its leases and answers "
          "its parked pops empty, a later pop is a first contact",
          "[sim][admin][groups]") {
  admin_fixture fx;
  fx.push("q", "p", {"a", "b", "c"});
  auto g = fx.pop("q", fx.pop_request("g", "p", 3));
  REQUIRE(g.claimed.size() == 1);
  auto lease = g.claimed[0].reply.lease->id;
  REQUIRE(fx.ack("q", "p", "g", lease, offset{0})[0].error == ack_error::none);
  auto h = fx.pop("q", fx.pop_request("h", "p", 1));
  REQUIRE(h.claimed.size() == 1);
  REQUIRE(
      fx.ack("q", "p", "h", h.claimed[0].reply.lease->id, offset{0})[0].error
      == ack_error::none);
  // g parks a wildcard pop: its lease holds the only partition.
  auto w = fx.pop_request("g");
  w.wait = true;
  w.timeout = 60s;
  auto parked = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, w);
  fx.run();
  CHECK_FALSE(*parked);
  auto del = fx.request<actors::delete_group_reply>(
      fx.broker, actors::delete_atom::value,
      actors::delete_group_request{"g", std::nullopt, true});
  REQUIRE(del);
  REQUIRE_FALSE(del->failure);
  CHECK(del->deleted_partitions == 1);
  REQUIRE(*parked);
  CHECK((*parked)->claimed.empty());
  CHECK_FALSE(fx.stored_cursor("q", "p", "g"));
  // Its old lease is gone: a late ack fails.
  CHECK(fx.ack("q", "p", "g", lease, offset{1})[0].error
        == ack_error::invalid_lease);
  // h is untouched.
  auto hc = fx.stored_cursor("q", "p", "h");
  REQUIRE(hc);
  CHECK(hc->committed == offset{0});
  // A later pop by g is a first contact: everything again, first delivery.
  auto again = fx.pop("q", fx.pop_request("g", "p", 3));
  REQUIRE(again.claimed.size() == 1);
  auto& ms = again.claimed[0].reply.messages;
  REQUIRE(ms.size() == 3);
  CHECK(ms[0].frame.off == offset{0});
  CHECK(ms[0].delivery_count == 1);
  // An unknown group: success with 0.
  auto unknown = fx.request<actors::delete_group_reply>(
      fx.broker, actors::delete_atom::value,
      actors::delete_group_request{"nobody", std::nullopt, true});
  REQUIRE(unknown);
  CHECK_FALSE(unknown->failure);
  CHECK(unknown->deleted_partitions == 0);
}

TEST_CASE("deleting a group whose only cursor was never stored ends that "
          "cursor",
          "[sim][admin][groups]") {
  admin_fixture fx;
  fx.push("q", "p", {"a"});
  // A late ack spawns g's cursor on p; nothing of it is stored.
  CHECK(fx.ack("q", "p", "g", "gone", offset{0})[0].error != ack_error::none);
  REQUIRE_FALSE(fx.stored_cursor("q", "p", "g"));
  REQUIRE(fx.groups("g", "q").cursors.size() == 1);
  // The deletion stops it (a part of the deletion's batch) and ends it.
  auto del = fx.request<actors::delete_group_reply>(
      fx.broker, actors::delete_atom::value,
      actors::delete_group_request{"g", std::nullopt, true});
  REQUIRE(del);
  REQUIRE_FALSE(del->failure);
  CHECK(fx.groups("g", "q").cursors.empty());
}

TEST_CASE("deleting a queue removes everything of it and answers its parked "
          "pops empty, a later push creates a new queue with default options",
          "[sim][admin][queues]") {
  admin_fixture fx;
  core::options_patch o;
  o.lease_time_s = 60;
  fx.configure("q", o);
  fx.push("q", "p", {"a", "b"});
  auto popped = fx.pop("q", fx.pop_request("g", "p"));
  REQUIRE(popped.claimed.size() == 1);
  auto old_id = fx.info("q").queues.at(0).record.id;
  auto w = fx.pop_request("h", "later");
  w.wait = true;
  w.timeout = 60s;
  auto parked = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, w);
  fx.run();
  CHECK_FALSE(*parked);
  auto del = fx.request<actors::delete_queue_reply>(
      fx.broker, actors::delete_atom::value, std::string{"q"});
  REQUIRE(del);
  REQUIRE_FALSE(del->failure);
  CHECK(del->existed);
  REQUIRE(*parked);
  CHECK((*parked)->claimed.empty());
  CHECK(fx.info("q").failure);
  {
    auto t = fx.store.store->db().read();
    REQUIRE(t);
    CHECK(storage::tables::all_queues(*t)->empty());
    CHECK(storage::tables::all_partitions(*t)->empty());
  }
  CHECK(fx.info().queues.empty());
  // A later push creates a new queue: default options, new id, offset 0.
  auto again = fx.push("q", "p", {"x"});
  CHECK(again.results[0].result.off == offset{0});
  auto fresh = fx.info("q");
  REQUIRE(fresh.queues.size() == 1);
  CHECK(fresh.queues[0].record.options.lease_time_s == 300);
  CHECK(fresh.queues[0].record.id != old_id);
  auto r = fx.pop("q", fx.pop_request("g", "p"));
  REQUIRE(r.claimed.size() == 1);
  CHECK(r.claimed[0].reply.messages.size() == 1);
  CHECK(r.claimed[0].reply.messages[0].frame.data.payload == "x");
  auto gone = fx.request<actors::delete_queue_reply>(
      fx.broker, actors::delete_atom::value, std::string{"nope"});
  REQUIRE(gone);
  CHECK_FALSE(gone->existed);
  CHECK_FALSE(gone->failure);
  // Survives a restart as deleted.
  fx.start();
  CHECK(fx.info().queues.size() == 1);
}

TEST_CASE("purge deletes whole segments below an offset and moves the "
          "watermark",
          "[sim][admin][purge]") {
  admin_fixture fx;
  fx.push("q", "p", {"s0"});
  fx.push("q", "p", {"s1"});
  fx.push("q", "p", {"s2"});
  fx.push("q", "p", {"s3", "s4"}); // one segment: 3..4
  auto g = fx.pop("q", fx.pop_request("g", "p", 1));
  REQUIRE(
      fx.ack("q", "p", "g", g.claimed.at(0).reply.lease->id, offset{0})[0].error
      == ack_error::none);
  auto r = fx.purge("q", offset{2});
  REQUIRE_FALSE(r.failure);
  CHECK(r.partitions == 1);
  auto p = fx.info("q").queues.at(0).partitions.at(0);
  CHECK(p.watermark == offset{2});
  CHECK(p.next_offset == offset{5});
  // g resumes at the oldest retained offset; the pop says what it skipped.
  auto next = fx.pop("q", fx.pop_request("g", "p", 1));
  REQUIRE(next.claimed.size() == 1);
  CHECK(next.claimed[0].reply.messages[0].frame.off == offset{2});
  REQUIRE(next.claimed[0].reply.skipped);
  CHECK(*next.claimed[0].reply.skipped == offset_range{offset{1}, offset{1}});
  // Below 4: the segment 3..4 is kept whole.
  REQUIRE_FALSE(fx.purge("q", offset{4}, "p").failure);
  CHECK(fx.info("q").queues.at(0).partitions.at(0).watermark == offset{3});
  // Nothing more to delete below 4: no partition moved.
  CHECK(fx.purge("q", offset{4}).partitions == 0);
  // All: the watermark passes lastOffset, which stays.
  REQUIRE_FALSE(fx.purge("q", std::nullopt).failure);
  auto all = fx.info("q").queues.at(0).partitions.at(0);
  CHECK(all.watermark == offset{5});
  CHECK(all.next_offset == offset{5});
  CHECK(fx.browse("q", "p", offset{0}, 10).frames.empty());
  CHECK(fx.purge("nope", std::nullopt).failure->message == "Queue not found");
  CHECK(fx.purge("q", offset{-1}).failure->code == errc::invalid_argument);
  CHECK(fx.purge("q", std::nullopt, "zz").failure->message
        == "Partition not found");
}

TEST_CASE("a group idle for groupIdleSeconds is deleted with its records, "
          "one holding a lease is kept",
          "[sim][admin][groups][idle]") {
  admin_fixture fx;
  core::options_patch o;
  o.group_idle_s = 10;
  fx.configure("q", o);
  fx.push("q", "p", {"a", "b"});
  auto g = fx.pop("q", fx.pop_request("g", "p", 1));
  REQUIRE(
      fx.ack("q", "p", "g", g.claimed.at(0).reply.lease->id, offset{0})[0].error
      == ack_error::none);
  auto h = fx.pop("q", fx.pop_request("h", "p", 1)); // holds its lease (300 s)
  REQUIRE(h.claimed.size() == 1);
  fx.advance(9s);
  CHECK(fx.stored_cursor("q", "p", "g"));
  fx.advance(6s);
  // Activity keeps a group: k pops and acks at 15 s.
  auto k = fx.pop("q", fx.pop_request("k", "p", 1));
  REQUIRE(
      fx.ack("q", "p", "k", k.claimed.at(0).reply.lease->id, offset{0})[0].error
      == ack_error::none);
  fx.advance(6s); // sweeps at 10 s (g idle 10 s: deleted) and 20 s (k: 5 s)
  CHECK_FALSE(fx.stored_cursor("q", "p", "g"));
  CHECK(fx.stored_cursor("q", "p", "h")); // idle, but its lease lives
  CHECK(fx.stored_cursor("q", "p", "k"));
  CHECK(fx.groups("g").cursors.empty());
  // A later pop by g is a first contact.
  auto again = fx.pop("q", fx.pop_request("g", "p", 1));
  REQUIRE(again.claimed.size() == 1);
  CHECK(again.claimed[0].reply.messages[0].frame.off == offset{0});
  CHECK(again.claimed[0].reply.messages[0].delivery_count == 1);
}

TEST_CASE("maxSize refuses a push when a partition does not answer its "
          "size: it is not counted as empty",
          "[sim][push][max-size][failure]") {
  admin_fixture fx;
  core::options_patch o;
  o.max_size = 3;
  fx.configure("q", o);
  fx.push("q", "p", {"a", "b", "c"}); // the queue is full
  // p dies; its respawn waits behind a held write barrier, so a push
  // meanwhile asks the dead actor its size.
  fx.gate_st->closed = true;
  actors::browse_request b;
  b.partition = "p";
  auto browse = fx.request_later<actors::browse_reply>(
      fx.broker, actors::browse_atom::value, std::string{"q"}, b);
  REQUIRE(fx.kill_next("spool.partition"));
  fx.run();
  auto late = fx.request_later<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value,
      std::vector<actors::broker_push_item>{{"q", {"r", msg("d")}}});
  fx.run();
  fx.gate_st->closed = false;
  caf::anon_send(fx.gated, actors::flush_atom::value);
  fx.run();
  REQUIRE(*late);
  REQUIRE((*late)->failure);
  CHECK((*late)->failure->message.starts_with("Queue q: size check failed: "));
  std::size_t stored = 0;
  auto listed = fx.info("q"); // the loop below ranges over a part of it
  for (auto& part : listed.queues.at(0).partitions)
    stored += static_cast<std::size_t>(part.next_offset.value);
  CHECK(stored == 3);
}

TEST_CASE("maxSize first deletes segments every group has committed past, "
          "then refuses the push with nothing stored",
          "[sim][push][max-size]") {
  admin_fixture fx;
  core::options_patch o;
  o.max_size = 4;
  fx.configure("q", o);
  fx.push("q", "p", {"a", "b"}); // segment 0..1
  fx.push("q", "p", {"c", "d"}); // segment 2..3: the queue is full
  auto push_one = [&](std::vector<std::string> payloads) {
    std::vector<actors::broker_push_item> v;
    for (auto& p : payloads)
      v.push_back({"q", {"p", msg(p)}});
    auto r = fx.request<actors::queue_push_reply>(fx.broker,
                                                  actors::push_atom::value, v);
    REQUIRE(r);
    return *r;
  };
  // Partition p (configure created Default first).
  auto part = [&] { return fx.info("q").queues.at(0).partitions.at(1); };
  auto next_offset = [&] { return part().next_offset; };
  REQUIRE(part().name == "p");
  // No group consumed anything: nothing may go, the push is refused.
  auto refused = push_one({"e"});
  REQUIRE(refused.failure);
  CHECK(refused.failure->code == errc::queue_full);
  CHECK(refused.failure->message == "Queue q is full");
  CHECK(next_offset() == offset{4});
  // g consumes the first segment: it can go to make room.
  auto g = fx.pop("q", fx.pop_request("g", "p", 2));
  auto lease = g.claimed.at(0).reply.lease->id;
  REQUIRE(fx.ack("q", "p", "g", lease, offset{0})[0].error == ack_error::none);
  REQUIRE(fx.ack("q", "p", "g", lease, offset{1})[0].error == ack_error::none);
  auto fits = push_one({"e"});
  REQUIRE_FALSE(fits.failure);
  CHECK(fits.results.at(0).result.off == offset{4});
  CHECK(part().watermark == offset{2});
  // Unconsumed frames are never deleted for room.
  auto still = push_one({"f", "g"});
  REQUIRE(still.failure);
  CHECK(still.failure->code == errc::queue_full);
  CHECK(next_offset() == offset{5});
  // Larger than maxSize alone: refused at once.
  CHECK(push_one({"1", "2", "3", "4", "5"}).failure->code == errc::queue_full);
  // The group's view is intact: it gets c, d, e next.
  auto rest = fx.pop("q", fx.pop_request("g", "p", 10));
  REQUIRE(rest.claimed.size() == 1);
  CHECK(rest.claimed[0].reply.messages.size() == 3);
  CHECK(rest.claimed[0].reply.messages[0].frame.data.payload == "c");
}

TEST_CASE("requests in flight when their queue is deleted are still answered",
          "[sim][admin][queues]") {
  admin_fixture fx;
  fx.push("q", "p", {"a"});
  std::vector<actors::broker_push_item> v{{"q", {"fresh", msg("b")}}};
  // A push that must create a partition, a pop, then the deletion.
  auto pushed = fx.request_later<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, v);
  auto popped = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"},
      fx.pop_request("g"));
  auto del = fx.request_later<actors::delete_queue_reply>(
      fx.broker, actors::delete_atom::value, std::string{"q"});
  fx.run();
  REQUIRE(*del);
  CHECK((*del)->existed);
  REQUIRE(*pushed); // answered: stored before the deletion, or refused
  REQUIRE(*popped);
  CHECK(fx.info().queues.empty());
}
