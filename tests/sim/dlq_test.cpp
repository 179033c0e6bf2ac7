// The dead-letter queue through the broker (semantics.md §4): listing,
// requeue to the entry's group only, delete, retention, and the option pair
// that drops dead letters instead.

#include "sim/broker_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct dlq_fixture : broker_sim {
  /// Creates queue `name` with `opts` (as configure will), then restarts
  /// the broker so it serves it.
  void make_queue(const std::string& name, storage::queue_options opts) {
    storage::queue_record rec;
    rec.id = store.store->next_queue_id(name);
    rec.name = name;
    rec.options = opts;
    auto r = request<actors::write_result>(
        writer, actors::write_atom::value,
        storage::write_batch{{storage::mut::create_queue{rec}}});
    REQUIRE(r);
    REQUIRE(r->ok());
    start();
  }

  actors::pop_reply pop(const std::string& q, const std::string& p,
                        const std::string& group, std::size_t batch = 10) {
    actors::queue_pop_request req;
    req.partition = p;
    req.group = group;
    req.batch = batch;
    req.lease_id = "L" + std::to_string(++lease_no);
    auto r = request<actors::queue_pop_reply>(broker, actors::pop_atom::value,
                                              q, req);
    REQUIRE(r);
    REQUIRE(!r->failure);
    if (r->claimed.empty()) {
      actors::pop_reply empty;
      empty.reason = r->reason;
      return empty;
    }
    return r->claimed.front().reply;
  }

  std::vector<std::int64_t> offsets(const actors::pop_reply& r) {
    std::vector<std::int64_t> out;
    for (auto& m : r.messages)
      out.push_back(m.frame.off.value);
    return out;
  }

  actors::ack_reply ack(const std::string& q, const std::string& p,
                        const std::string& group, const actors::pop_reply& r,
                        std::int64_t off, ack_status s = ack_status::completed,
                        std::string error = "boom") {
    ack_request a;
    REQUIRE(r.lease);
    a.lease_id = r.lease->id;
    a.off = offset{off};
    a.status = s;
    a.error = std::move(error);
    auto res = ack_located(q, p, group, std::vector<ack_request>{a});
    REQUIRE(res);
    REQUIRE(res->size() == 1);
    REQUIRE(!res->front().failure);
    return res->front();
  }

  /// Pops and dead-letters every frame of `p` for `group` with `error`.
  void bury_all(const std::string& q, const std::string& p,
                const std::string& group, const std::string& error = "bad") {
    auto r = pop(q, p, group, 100);
    for (auto& m : r.messages)
      ack(q, p, group, r, m.frame.off.value, ack_status::dlq, error);
  }

  actors::dlq_list_reply list(core::dlq_query q) {
    auto r = request<actors::dlq_list_reply>(broker,
                                             actors::dlq_list_atom::value, q);
    REQUIRE(r);
    return *r;
  }

  core::dlq_page page(core::dlq_filter f, std::size_t limit = 100) {
    core::dlq_query q;
    q.filter = std::move(f);
    q.limit = limit;
    auto r = list(q);
    REQUIRE(!r.failure);
    return r.page;
  }

  actors::dlq_count_reply requeue(core::dlq_filter f) {
    auto r = request<actors::dlq_count_reply>(broker,
                                              actors::requeue_atom::value, f);
    REQUIRE(r);
    return *r;
  }

  actors::dlq_count_reply remove(core::dlq_filter f) {
    auto r = request<actors::dlq_count_reply>(broker,
                                              actors::dlq_del_atom::value, f);
    REQUIRE(r);
    return *r;
  }

  /// Every stored DLQ entry (straight from the store, not the listing).
  std::vector<storage::dlq_entry> stored() {
    std::vector<storage::dlq_entry> out;
    auto t = store.store->db().read();
    REQUIRE(t);
    auto qs = storage::tables::all_queues(*t);
    REQUIRE(qs);
    for (auto& q : *qs)
      REQUIRE(storage::tables::scan_queue_dlq(
          *t, q.id, [&](std::string_view, const storage::dlq_entry& e) {
            out.push_back(e);
            return true;
          }));
    return out;
  }

  static core::dlq_filter ids(std::vector<std::uint64_t> v) {
    core::dlq_filter f;
    f.ids = std::move(v);
    return f;
  }

  static core::dlq_filter group(std::string g) {
    core::dlq_filter f;
    f.group = std::move(g);
    return f;
  }

  int lease_no = 0;
};

storage::queue_options options(std::int64_t retry_limit = 3) {
  storage::queue_options o;
  o.lease_time_s = 30;
  o.retry_limit = retry_limit;
  return o;
}

} // namespace

TEST_CASE("a requeued dead letter is delivered again to its group only, "
          "before new frames",
          "[sim][dlq][requeue]") {
  dlq_fixture fx;
  fx.make_queue("q", options());
  fx.push("q", "p", {"a", "b", "c"});
  for (auto g : {"g1", "g2"}) {
    auto r = fx.pop("q", "p", g);
    REQUIRE(fx.offsets(r) == std::vector<std::int64_t>{0, 1, 2});
    fx.ack("q", "p", g, r, 0);
    fx.ack("q", "p", g, r, 1, ack_status::dlq, "bad b");
    fx.ack("q", "p", g, r, 2);
  }
  auto g1 = fx.page(dlq_fixture::group("g1"));
  REQUIRE(g1.items.size() == 1);
  auto id = g1.items[0].entry.id;
  CHECK(g1.items[0].entry.error == "bad b");
  CHECK(g1.items[0].entry.message.data.payload == "b");
  fx.push("q", "p", {"d", "e"});
  // g1 holds a lease on the new frames: the requeue waits for it to end.
  auto held = fx.pop("q", "p", "g1", 1);
  REQUIRE(fx.offsets(held) == std::vector<std::int64_t>{3});
  auto rq = fx.requeue(dlq_fixture::ids({id}));
  REQUIRE(!rq.failure);
  CHECK(rq.count == 1);
  CHECK(fx.pop("q", "p", "g1").reason == empty_reason::lease_held);
  CHECK(fx.page(dlq_fixture::group("g1")).items.at(0).entry.requeued);
  fx.ack("q", "p", "g1", held, 3);
  // Delivered alone, ahead of frame 4, with its original offset and ids.
  auto again = fx.pop("q", "p", "g1");
  REQUIRE(again.messages.size() == 1);
  CHECK(again.messages[0].frame.off == offset{1});
  CHECK(again.messages[0].frame.data.payload == "b");
  CHECK(again.messages[0].requeued == std::optional<std::uint64_t>{id});
  CHECK(again.messages[0].frame.data.transaction_id
        == g1.items[0].entry.message.data.transaction_id);
  // g2 never sees it.
  auto other = fx.pop("q", "p", "g2");
  CHECK(fx.offsets(other) == std::vector<std::int64_t>{3, 4});
  for (auto& m : other.messages)
    CHECK(!m.requeued);
  // The ordinary ack settles it although offset 1 is below committed, and
  // the entry leaves the DLQ.
  auto done = fx.ack("q", "p", "g1", again, 1);
  CHECK(done.error == ack_error::none);
  CHECK(done.lease_released);
  CHECK(fx.page(dlq_fixture::group("g1")).total == 0);
  CHECK(fx.stored().size() == 1); // g2's entry only
  CHECK(fx.offsets(fx.pop("q", "p", "g1")) == std::vector<std::int64_t>{4});
}

TEST_CASE("a requeued entry that fails past retryLimit returns to the DLQ",
          "[sim][dlq][requeue]") {
  dlq_fixture fx;
  fx.make_queue("q", options(1));
  fx.push("q", "p", {"a", "b"});
  auto r = fx.pop("q", "p", "g", 1);
  fx.ack("q", "p", "g", r, 0, ack_status::dlq, "first");
  auto id = fx.page({}).items.at(0).entry.id;
  REQUIRE(fx.requeue(dlq_fixture::ids({id})).count == 1);
  auto a = fx.pop("q", "p", "g");
  REQUIRE(fx.offsets(a) == std::vector<std::int64_t>{0});
  CHECK(a.messages[0].delivery_count == 1);
  fx.ack("q", "p", "g", a, 0, ack_status::failed, "again 1");
  CHECK(fx.page({}).items.at(0).entry.requeued); // still pending
  auto b = fx.pop("q", "p", "g");
  REQUIRE(fx.offsets(b) == std::vector<std::int64_t>{0});
  CHECK(b.messages[0].delivery_count == 2);
  auto back = fx.ack("q", "p", "g", b, 0, ack_status::failed, "again 2");
  CHECK(back.dead_lettered);
  auto entries = fx.page({});
  REQUIRE(entries.total == 1);
  auto& e = entries.items[0].entry;
  CHECK(e.id == id); // the same entry, back
  CHECK(!e.requeued);
  CHECK(e.error == "again 2");
  CHECK(e.deliveries == 3); // 1 before, 2 since the requeue
  // It is not delivered any more: the next pop has the next frame.
  CHECK(fx.offsets(fx.pop("q", "p", "g")) == std::vector<std::int64_t>{1});
}

TEST_CASE("a pending requeue survives a restart, one leased at the restart "
          "is charged",
          "[sim][dlq][requeue][restart]") {
  dlq_fixture fx;
  fx.make_queue("q", options(0));
  fx.push("q", "p", {"a", "b"});
  auto r = fx.pop("q", "p", "g");
  fx.ack("q", "p", "g", r, 0, ack_status::dlq);
  fx.ack("q", "p", "g", r, 1, ack_status::dlq);
  auto all = fx.page({});
  REQUIRE(all.total == 2);
  auto newer = all.items[0].entry.id; // offset 1
  auto older = all.items[1].entry.id; // offset 0
  REQUIRE(fx.requeue(dlq_fixture::ids({older, newer})).count == 2);
  fx.start();
  auto a = fx.pop("q", "p", "g");
  REQUIRE(a.messages.size() == 1);
  CHECK(a.messages[0].requeued == std::optional<std::uint64_t>{older});
  // Lost to a second restart while leased: charged, and past retryLimit 0
  // it returns to the DLQ; the other is still pending.
  fx.start();
  auto b = fx.pop("q", "p", "g");
  REQUIRE(b.messages.size() == 1);
  CHECK(b.messages[0].requeued == std::optional<std::uint64_t>{newer});
  auto listed = fx.page({});
  for (auto& x : listed.items)
    CHECK(x.entry.requeued == (x.entry.id == newer));
  auto back = std::find_if(listed.items.begin(), listed.items.end(),
                           [&](auto& x) { return x.entry.id == older; });
  REQUIRE(back != listed.items.end());
  CHECK(back->entry.error == "lease lost to a restart");
  fx.ack("q", "p", "g", b, 1);
  CHECK(fx.page({}).total == 1);
}

TEST_CASE("DLQ listing is newest first with a stable after cursor and an "
          "exact total",
          "[sim][dlq][list]") {
  dlq_fixture fx;
  fx.make_queue("q", options());
  fx.make_queue("r", options());
  fx.push("q", "p1", {"a", "b", "c"});
  fx.push("q", "p2", {"d", "e"});
  fx.push("r", "p1", {"f"});
  auto t0 = fx.page({}); // nothing yet
  CHECK(t0.total == 0);
  auto before = fx.wall();
  fx.bury_all("q", "p1", "g");
  fx.advance(10s);
  fx.bury_all("q", "p2", "g");
  fx.bury_all("q", "p2", "h");
  fx.advance(10s);
  fx.bury_all("r", "p1", "g");
  auto all = fx.page({});
  REQUIRE(all.total == 8);
  for (std::size_t i = 1; i < all.items.size(); ++i)
    CHECK(all.items[i - 1].entry.id > all.items[i].entry.id);
  CHECK(all.items[0].queue == "r");
  // Pages of 3 with `after`: exact, and stable when an entry of the page
  // already read is deleted meanwhile.
  core::dlq_query q;
  q.limit = 3;
  auto p1 = fx.list(q).page;
  CHECK(p1.total == 8);
  REQUIRE(p1.items.size() == 3);
  REQUIRE(fx.remove(dlq_fixture::ids({p1.items[1].entry.id})).count == 1);
  q.after = p1.items[2].entry.id;
  auto p2 = fx.list(q).page;
  CHECK(p2.total == 7);
  REQUIRE(p2.items.size() == 3);
  CHECK(p2.items[0].entry.id == all.items[3].entry.id);
  q.offset = 2;
  auto p3 = fx.list(q).page;
  REQUIRE(p3.items.size() == 3);
  CHECK(p3.items[0].entry.id == all.items[5].entry.id);
  // Filters: queue, group, partition, failure time; the total follows.
  // (The entry deleted above was h's newest on q/p2.)
  core::dlq_filter f;
  f.queue = "q";
  CHECK(fx.page(f).total == 6);
  f.group = "h";
  CHECK(fx.page(f).total == 1);
  f.group.reset();
  f.partition = "p1";
  CHECK(fx.page(f).total == 3);
  f.partition.reset();
  f.from = before + 5'000'000;
  f.to = before + 15'000'000;
  auto mid = fx.page(f);
  CHECK(mid.total == 3); // q/p2 for g and h
  for (auto& x : mid.items)
    CHECK(x.partition == "p2");
  // The page holds the whole entry.
  CHECK(!mid.items[0].entry.message.data.payload.empty());
}

TEST_CASE("a wrong DLQ request is an error naming the problem and changes "
          "nothing",
          "[sim][dlq][bad-input]") {
  dlq_fixture fx;
  fx.make_queue("q", options());
  fx.push("q", "p", {"a"});
  fx.bury_all("q", "p", "g");
  auto id = fx.page({}).items.at(0).entry.id;
  auto message = [&](core::dlq_filter f) {
    auto r = fx.remove(f);
    REQUIRE(r.failure);
    auto rq = fx.requeue(f);
    REQUIRE(rq.failure);
    CHECK(rq.failure->message == r.failure->message);
    core::dlq_query q;
    q.filter = f;
    auto l = fx.list(q);
    REQUIRE(l.failure);
    return r.failure->message;
  };
  core::dlq_filter f;
  f.queue = "nope";
  CHECK(message(f) == "Queue not found: nope");
  f.queue = "q";
  f.group = "nobody";
  CHECK(message(f) == "Consumer group not found: nobody");
  f.group.reset();
  f.partition = "x";
  CHECK(message(f) == "Partition not found: x");
  CHECK(message(dlq_fixture::ids({id, id + 100}))
        == "DLQ entry not found: " + std::to_string(id + 100));
  core::dlq_filter times;
  times.from = 10;
  times.to = 5;
  CHECK(message(times) == "Invalid DLQ filter: from is after to");
  core::dlq_query zero;
  zero.limit = 0;
  CHECK(fx.list(zero).failure);
  // Nothing changed.
  auto left = fx.stored();
  REQUIRE(left.size() == 1);
  CHECK(!left[0].requeued);
  CHECK(fx.pop("q", "p", "g").messages.empty());
}

TEST_CASE("DLQ entries are deleted by id or by filter", "[sim][dlq][delete]") {
  dlq_fixture fx;
  fx.make_queue("q", options());
  fx.push("q", "p", {"a", "b", "c"});
  fx.bury_all("q", "p", "g");
  fx.bury_all("q", "p", "h");
  auto all = fx.page({});
  REQUIRE(all.total == 6);
  auto r = fx.remove(dlq_fixture::ids({all.items[0].entry.id}));
  REQUIRE(!r.failure);
  CHECK(r.count == 1);
  CHECK(fx.stored().size() == 5);
  auto byg = fx.remove(dlq_fixture::group("g"));
  CHECK(byg.count == 3);
  auto left = fx.page({});
  REQUIRE(left.total == 2);
  for (auto& x : left.items)
    CHECK(x.group == "h");
  CHECK(fx.stored().size() == 2);
}

TEST_CASE("DLQ entries expire after dlqRetentionSeconds",
          "[sim][dlq][retention]") {
  dlq_fixture fx;
  auto o = options();
  o.dlq_retention_s = 600;
  fx.make_queue("q", o);
  fx.push("q", "p", {"a", "b"});
  auto r = fx.pop("q", "p", "g", 1);
  fx.ack("q", "p", "g", r, 0, ack_status::dlq);
  fx.advance(300s);
  auto s = fx.pop("q", "p", "g", 1);
  fx.ack("q", "p", "g", s, 1, ack_status::dlq);
  REQUIRE(fx.stored().size() == 2);
  fx.advance(299s);
  CHECK(fx.stored().size() == 2);
  fx.advance(1s); // the first is 600 s old: the one sweep timer fires
  auto left = fx.stored();
  REQUIRE(left.size() == 1);
  CHECK(left[0].message.off == offset{1});
  CHECK(fx.metrics->dead_letters_expired == 1);
  // After a restart the queue finds the remaining entry's expiry itself.
  fx.start();
  fx.run();
  fx.advance(299s);
  CHECK(fx.stored().size() == 1);
  fx.advance(61s); // past 600 s, within the sweep gap
  CHECK(fx.stored().empty());
  CHECK(fx.metrics->dead_letters_expired == 2);
}

TEST_CASE("a DLQ sweep whose delete fails is retried after a backoff: "
          "expired entries do not stay stored",
          "[sim][dlq][retention][failure]") {
  dlq_fixture fx;
  auto o = options();
  o.dlq_retention_s = 600;
  fx.make_queue("q", o);
  fx.push("q", "p", {"a", "b"});
  fx.bury_all("q", "p", "g");
  REQUIRE(fx.stored().size() == 2);
  fx.gate_st->inject(fail_batches_with<storage::mut::delete_dlq>(1));
  fx.advance(600s); // both expired: the sweep's delete fails
  CHECK(fx.gate_st->failed == 1);
  CHECK(fx.stored().size() == 2);
  fx.advance(2s); // retried after the backoff, with nothing new to arm it
  CHECK(fx.stored().empty());
  CHECK(fx.metrics->dead_letters_expired == 2);
}

TEST_CASE("an expired DLQ entry is not listed before the sweep removes it",
          "[sim][dlq][retention]") {
  dlq_fixture fx;
  auto o = options();
  o.dlq_retention_s = 10;
  fx.make_queue("q", o);
  fx.push("q", "p", {"a", "b"});
  fx.bury_all("q", "p", "g");
  fx.advance(5s);
  CHECK(fx.page({}).total == 2);
  // The sweep gap (60 s) is longer than the retention: the listing hides
  // them on time anyway.
  fx.sched.clock().current_time += 5s; // no timer fires
  CHECK(fx.page({}).total == 0);
}

TEST_CASE("deadLetterQueue=false and dlqAfterMaxRetries=false drop the frame",
          "[sim][dlq][options]") {
  dlq_fixture fx;
  auto both = options(0);
  both.dead_letter_queue = false;
  both.dlq_after_max_retries = false;
  fx.make_queue("drop", both);
  auto one = options(0);
  one.dead_letter_queue = false; // alone: the DLQ stays
  fx.make_queue("keep", one);
  for (auto q : {"drop", "keep"}) {
    fx.push(q, "p", {"a", "b"});
    auto r = fx.pop(q, "p", "g", 1);
    auto a = fx.ack(q, "p", "g", r, 0, ack_status::failed);
    CHECK(a.dead_lettered);
    // Either way the frame counts as done.
    CHECK(fx.offsets(fx.pop(q, "p", "g")) == std::vector<std::int64_t>{1});
  }
  core::dlq_filter f;
  f.queue = "drop";
  CHECK(fx.page(f).total == 0);
  f.queue = "keep";
  CHECK(fx.page(f).total == 1);
  CHECK(fx.stored().size() == 1);
  CHECK(fx.metrics->dead_letters_dropped == 1);
}

TEST_CASE("a requeued entry deleted while pending is forgotten, with autoAck "
          "a requeued delivery leaves the DLQ at once",
          "[sim][dlq][requeue]") {
  dlq_fixture fx;
  fx.make_queue("q", options());
  fx.push("q", "p", {"a", "b", "c"});
  auto r = fx.pop("q", "p", "g", 2);
  fx.ack("q", "p", "g", r, 0, ack_status::dlq);
  fx.ack("q", "p", "g", r, 1, ack_status::dlq);
  auto all = fx.page({});
  REQUIRE(all.total == 2);
  REQUIRE(fx.requeue(dlq_fixture::group("g")).count == 2);
  // The older one (offset 0) is deleted before its turn.
  REQUIRE(fx.remove(dlq_fixture::ids({all.items[1].entry.id})).count == 1);
  actors::queue_pop_request req;
  req.partition = "p";
  req.group = "g";
  req.batch = 10;
  req.auto_ack = true;
  req.lease_id = "auto";
  auto got = fx.request<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, req);
  REQUIRE(got);
  REQUIRE(got->claimed.size() == 1);
  auto& msgs = got->claimed[0].reply.messages;
  REQUIRE(msgs.size() == 1);
  CHECK(msgs[0].frame.off == offset{1});
  CHECK(msgs[0].requeued
        == std::optional<std::uint64_t>{all.items[0].entry.id});
  CHECK(fx.stored().empty());
  CHECK(fx.offsets(fx.pop("q", "p", "g")) == std::vector<std::int64_t>{2});
}

TEST_CASE("a configure that shortens dlqRetentionSeconds expires entries by "
          "the new value",
          "[sim][dlq][retention][configure]") {
  dlq_fixture fx;
  fx.make_queue("q", options());
  fx.push("q", "p", {"a"});
  fx.bury_all("q", "p", "g");
  fx.advance(120s);
  REQUIRE(fx.stored().size() == 1);
  actors::configure_request req;
  req.queue = "q";
  req.options.dlq_retention_s = 100;
  auto r = fx.request<actors::configure_reply>(
      fx.broker, actors::configure_atom::value, req);
  REQUIRE(r);
  REQUIRE(!r->failure);
  fx.run();
  // 120 s old, retention now 100 s: swept at once, not in 14 days.
  CHECK(fx.stored().empty());
}

TEST_CASE("deleting a group forgets its pending requeues: their entries stay "
          "and expire again",
          "[sim][dlq][requeue][groups]") {
  dlq_fixture fx;
  fx.make_queue("q", options());
  fx.push("q", "p", {"a", "b"});
  auto r = fx.pop("q", "p", "g");
  fx.ack("q", "p", "g", r, 0, ack_status::dlq, "bad a");
  fx.ack("q", "p", "g", r, 1);
  auto id = fx.page(dlq_fixture::group("g")).items.at(0).entry.id;
  fx.push("q", "p", {"c"});
  auto held = fx.pop("q", "p", "g", 1); // the requeue waits behind it
  REQUIRE(fx.requeue(dlq_fixture::ids({id})).count == 1);
  REQUIRE(fx.page(dlq_fixture::group("g")).items.at(0).entry.requeued);
  auto del = fx.request<actors::delete_group_reply>(
      fx.broker, actors::delete_atom::value,
      actors::delete_group_request{"g", std::nullopt, true});
  REQUIRE(del);
  REQUIRE_FALSE(del->failure);
  auto after = fx.page(dlq_fixture::group("g"));
  REQUIRE(after.items.size() == 1); // DLQ entries stay
  CHECK_FALSE(after.items[0].entry.requeued);
}

TEST_CASE("a requeue puts the entry's partition back among the candidates of "
          "the group's wildcard pops",
          "[sim][dlq][requeue][candidates]") {
  dlq_fixture fx;
  fx.make_queue("q", options());
  fx.push("q", "p", {"a"});
  auto r = fx.pop("q", "p", "g", 1);
  fx.ack("q", "p", "g", r, 0, ack_status::dlq, "bad");
  auto wildcard = [&] {
    actors::queue_pop_request req;
    req.group = "g";
    req.batch = 10;
    req.lease_id = "W" + std::to_string(++fx.lease_no);
    auto out = fx.request<actors::queue_pop_reply>(
        fx.broker, actors::pop_atom::value, std::string{"q"}, req);
    REQUIRE(out);
    REQUIRE_FALSE(out->failure);
    return *out;
  };
  CHECK(wildcard().claimed.empty()); // p found empty: left out
  auto id = fx.page({}).items.at(0).entry.id;
  REQUIRE(fx.requeue(dlq_fixture::ids({id})).count == 1);
  auto again = wildcard();
  REQUIRE(again.claimed.size() == 1);
  REQUIRE(again.claimed[0].reply.messages.size() == 1);
  CHECK(again.claimed[0].reply.messages[0].requeued == id);
}

TEST_CASE("a requeue takes at most max_requeued pending per cursor: the rest "
          "stays in the DLQ and the answer says how many remain",
          "[sim][dlq][requeue][bounded]") {
  dlq_fixture fx;
  fx.make_queue("q", options());
  fx.push("q", "p", {"a"});
  auto r = fx.pop("q", "p", "g", 1);
  fx.ack("q", "p", "g", r, 0, ack_status::dlq, "bad");
  // More entries of the group on p than one cursor keeps pending, written
  // straight to the store (as many failures over time would leave them).
  auto stored = fx.stored();
  REQUIRE(stored.size() == 1);
  auto qid = fx.queue_id("q");
  constexpr std::size_t extra = core::cursor_core::max_requeued + 4;
  storage::write_batch b;
  for (std::size_t i = 0; i < extra; ++i) {
    auto e = stored[0];
    e.id = stored[0].id + 1 + i; // newer than the original
    b.mutations.emplace_back(storage::mut::put_dlq{qid, "g", e});
  }
  auto w = fx.request<actors::write_result>(fx.writer,
                                            actors::write_atom::value, b);
  REQUIRE(w);
  REQUIRE(w->ok());
  auto first = fx.requeue(dlq_fixture::group("g"));
  REQUIRE_FALSE(first.failure);
  CHECK(first.count == core::cursor_core::max_requeued);
  CHECK(first.remaining == extra + 1 - core::cursor_core::max_requeued);
  std::size_t marked = 0;
  for (auto& e : fx.stored())
    marked += e.requeued;
  CHECK(marked == core::cursor_core::max_requeued); // the rest is untouched
  // The oldest went first: the original entry is among them.
  auto row = fx.cursor("q", "p", "g");
  REQUIRE(row);
  REQUIRE(row->requeued.size() == core::cursor_core::max_requeued);
  CHECK(row->requeued.front().dlq_id == stored[0].id);
  // Consuming one frees one place: the next call takes one more.
  auto again = fx.pop("q", "p", "g", 1);
  REQUIRE(again.messages.size() == 1);
  REQUIRE(again.messages[0].requeued);
  fx.ack("q", "p", "g", again, again.messages[0].frame.off.value);
  auto second = fx.requeue(dlq_fixture::group("g"));
  REQUIRE_FALSE(second.failure);
  CHECK(second.count == 1); // the one free place; pending ones not again
  CHECK(second.remaining == extra - core::cursor_core::max_requeued);
  // Full again: nothing is taken, and the answer says what is left.
  auto full = fx.requeue(dlq_fixture::group("g"));
  REQUIRE_FALSE(full.failure);
  CHECK(full.count == 0);
  CHECK(full.remaining == extra - core::cursor_core::max_requeued);
  // Another group's newer entries are not held back by g's full cursor.
  storage::write_batch h;
  for (std::uint64_t i = 0; i < 3; ++i) {
    auto e = stored[0];
    e.id = stored[0].id + 5'000 + i;
    h.mutations.emplace_back(storage::mut::put_dlq{qid, "h", e});
  }
  w = fx.request<actors::write_result>(fx.writer, actors::write_atom::value, h);
  REQUIRE(w);
  REQUIRE(w->ok());
  auto third = fx.requeue({});
  REQUIRE_FALSE(third.failure);
  CHECK(third.count == 3); // h's three; g has no free place
  CHECK(third.remaining == extra - core::cursor_core::max_requeued);
}

TEST_CASE("DLQ requests beyond their bounds are refused: too many ids, an "
          "offset past dlq_max_offset",
          "[sim][dlq][bounded]") {
  dlq_fixture fx;
  fx.make_queue("q", options());
  core::dlq_filter many;
  for (std::uint64_t i = 0; i <= core::dlq_max_batch; ++i)
    many.ids.push_back(i);
  auto r = fx.requeue(many);
  REQUIRE(r.failure);
  CHECK(r.failure->code == errc::invalid_argument);
  CHECK(r.failure->message.find("at most 10000 ids") != std::string::npos);
  core::dlq_query deep;
  deep.offset = core::dlq_max_offset + 1;
  auto l = fx.list(deep);
  REQUIRE(l.failure);
  CHECK(l.failure->message.find("use after") != std::string::npos);
  deep.offset = core::dlq_max_offset;
  CHECK_FALSE(fx.list(deep).failure);
}
