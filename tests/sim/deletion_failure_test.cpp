// The deleting writes under injected failures (issue 11): retention, purge,
// maxSize trims and an explicit group deletion. Each writes before it
// applies, so a failed write answers its error (or, for retention, is
// retried by a later run) and leaves memory equal to the stored rows; the
// steps already durable stay.

#include "sim/fault_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct deletion_sim : fault_fixture {
  actors::purge_reply purge(const std::string& q) {
    auto r = request<actors::purge_reply>(
        broker, actors::purge_atom::value, q,
        actors::purge_request{std::nullopt, std::nullopt});
    REQUIRE(r);
    return *r;
  }

  /// Fails every batch that deletes segments (`times` of them).
  void fail_deletions(std::size_t times = SIZE_MAX) {
    gate_st->inject(fail_batches_with<storage::mut::delete_segments>(times));
  }
};

using ints = std::vector<std::int64_t>;

} // namespace

TEST_CASE("a failed retention write deletes nothing, other queues keep "
          "serving, and a later run deletes it",
          "[failure][retention]") {
  deletion_sim fx;
  core::options_patch o;
  o.retention_s = 60;
  fx.configure("q", o);
  fx.push("q", "p", {"a", "b"});
  fx.push("other", "p", {"x"});
  fx.fail_deletions();
  fx.advance(75s); // past retentionSeconds: the runs fail
  REQUIRE(fx.gate_st->failed >= 1);
  CHECK(fx.watermark("q", "p") == 0);
  CHECK(fx.browse("q", "p") == ints{0, 1});
  CHECK(fx.metrics->retention_frames_deleted == 0);
  // Another queue serves meanwhile.
  fx.push("other", "p", {"y"});
  CHECK(fx.popped("other", "p", "g") == ints{0, 1});
  // The disk heals: the next run deletes the segment.
  fx.gate_st->inject({});
  fx.advance(20s);
  CHECK(fx.watermark("q", "p") == 2);
  CHECK(fx.browse("q", "p").empty());
  CHECK(fx.metrics->retention_frames_deleted == 2);
}

TEST_CASE("a failed purge answers the error and moves nothing, a retry "
          "purges",
          "[failure][purge]") {
  deletion_sim fx;
  fx.push("q", "p", {"a"});
  fx.push("q", "p", {"b", "c"});
  fx.fail_deletions(1);
  auto failed = fx.purge("q");
  REQUIRE(failed.failure);
  CHECK(failed.failure->code == errc::internal);
  CHECK(fx.watermark("q", "p") == 0);
  CHECK(fx.browse("q", "p") == ints{0, 1, 2});
  // A group still reads from the start, nothing skipped.
  auto r = fx.pop("q", fx.pop_request("g", "p"));
  REQUIRE(r.claimed.size() == 1);
  CHECK_FALSE(r.claimed[0].reply.skipped);
  CHECK(r.claimed[0].reply.messages.size() == 3);
  auto ok = fx.purge("q");
  REQUIRE_FALSE(ok.failure);
  CHECK(ok.partitions == 1);
  CHECK(fx.watermark("q", "p") == 3);
}

TEST_CASE("a purge failing midway keeps the steps already durable and "
          "answers the error",
          "[failure][purge]") {
  deletion_sim fx;
  fx.delete_step = 1; // one segment per write
  fx.start();
  for (auto x : {"a", "b", "c"})
    fx.push("q", "p", {x});
  fault_plan f;
  f.nth = 2; // the second step's write
  f.times = 1;
  fx.gate_st->inject(f);
  auto failed = fx.purge("q");
  REQUIRE(failed.failure);
  CHECK(fx.watermark("q", "p") == 1);
  CHECK(fx.browse("q", "p") == ints{1, 2});
  fx.start(); // a restart recovers the same watermark
  CHECK(fx.watermark("q", "p") == 1);
  REQUIRE_FALSE(fx.purge("q").failure);
  CHECK(fx.watermark("q", "p") == 3);
}

TEST_CASE("a failed maxSize trim refuses the push with the write's error, "
          "stores nothing of it and deletes nothing",
          "[failure][max-size]") {
  deletion_sim fx;
  core::options_patch o;
  o.max_size = 4;
  fx.configure("q", o);
  fx.push("q", "p", {"a", "b"}); // segment 0..1
  fx.push("q", "p", {"c", "d"}); // segment 2..3: the queue is full
  fx.consume("q", "p", "g");     // every segment may go to make room
  fx.fail_deletions(1);
  std::vector<actors::broker_push_item> items{{"q", {"p", msg("e")}}};
  auto refused = fx.request<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, items);
  REQUIRE(refused);
  REQUIRE(refused->failure);
  // Not "full": room could be made, the write failed (a retry may succeed).
  CHECK(refused->failure->code == errc::internal);
  CHECK(fx.watermark("q", "p") == 0);
  CHECK(fx.partition("q", "p").next_offset == offset{4});
  CHECK(fx.browse("q", "p") == ints{0, 1, 2, 3});
  // The retry trims and fits.
  auto fits = fx.request<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, items);
  REQUIRE(fits);
  REQUIRE_FALSE(fits->failure);
  CHECK(fits->results.at(0).result.off == offset{4});
  // One step deletes every segment all groups committed past.
  CHECK(fx.watermark("q", "p") == 4);
}

TEST_CASE("a failed group deletion answers the error and leaves the group "
          "registered, its lease and parked pop live",
          "[failure][groups]") {
  deletion_sim fx;
  fx.push("q", "p", {"a", "b", "c"});
  auto g = fx.pop("q", fx.pop_request("g", "p", 2));
  REQUIRE(g.claimed.size() == 1);
  auto lease = g.claimed[0].reply.lease->id;
  REQUIRE(fx.ack("q", "p", "g", lease, 0) == ack_error::none);
  // g parks a wildcard pop: its lease holds the only partition.
  auto w = fx.pop_request("g", std::nullopt);
  w.wait = true;
  w.timeout = 60s;
  auto parked = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, w);
  fx.run();
  REQUIRE_FALSE(*parked);
  fx.gate_st->inject(fail_batches_with<storage::mut::delete_cursor>(1));
  auto del = fx.request<actors::delete_group_reply>(
      fx.broker, actors::delete_atom::value,
      actors::delete_group_request{"g", std::string{"q"}, true});
  REQUIRE(del);
  REQUIRE(del->failure);
  CHECK(del->failure->code == errc::internal);
  CHECK(del->deleted_partitions == 0);
  // Registered where it was: the stored row and subscription stay.
  auto row = fx.cursor("q", "p", "g");
  REQUIRE(row);
  CHECK(row->committed == offset{0});
  {
    auto t = fx.store.store->db().read();
    REQUIRE(t);
    auto sub = storage::tables::get_subscription(*t, fx.queue_id("q"), "g");
    REQUIRE(sub);
    CHECK(sub->has_value());
  }
  // The parked pop is still parked, the lease still live: acking its last
  // frame ends it, and the parked pop gets the next frame.
  CHECK_FALSE(*parked);
  CHECK(fx.ack("q", "p", "g", lease, 1) == ack_error::none);
  fx.run();
  REQUIRE(*parked);
  REQUIRE((*parked)->claimed.size() == 1);
  CHECK((*parked)->claimed[0].reply.messages.at(0).frame.off == offset{2});
  CHECK(fx.cursor("q", "p", "g")->committed == offset{1});
  // The retry deletes it.
  auto again = fx.request<actors::delete_group_reply>(
      fx.broker, actors::delete_atom::value,
      actors::delete_group_request{"g", std::string{"q"}, true});
  REQUIRE(again);
  REQUIRE_FALSE(again->failure);
  CHECK(again->deleted_partitions == 1);
  CHECK_FALSE(fx.cursor("q", "p", "g"));
}
