// Retention's pure rules (semantics.md §7): the deletion bounds, the
// maxWait boundary, the next run, and the cursor's part (overdue frames to
// the DLQ, frames deleted under a lease count as completed).

#include <catch2/catch.hpp>

#include "core/cursor/cursor_core.hpp"
#include "core/partition/retention.hpp"

using namespace spool;
using namespace spool::core;
using namespace std::chrono_literals;
using spool::storage::micros;

namespace {

constexpr micros s = 1'000'000;
const micros now = 1'785'000'000 * s;
const mono_time t0 = mono_time{} + 1000h;

offset off(std::int64_t v) {
  return offset{v};
}

retention_policy policy(std::int64_t retention_s, std::int64_t completed_s,
                        std::int64_t max_wait_s, std::int64_t delayed_s = 0) {
  spool::storage::queue_options o;
  o.retention_s = retention_s;
  o.completed_retention_s = completed_s;
  o.max_wait_time_s = max_wait_s;
  o.delayed_processing_s = delayed_s;
  return retention_policy::from(o);
}

cursor_core cursor(offset committed = off(-1)) {
  spool::storage::cursor_record rec;
  rec.committed = committed;
  cursor_policy p;
  p.lease_time = 30s;
  return cursor_core{rec, p};
}

lease_info pop(cursor_core& c, offset watermark, offset last, std::size_t n,
               mono_time at = t0) {
  auto plan = c.plan(at, watermark, last, n);
  REQUIRE(std::holds_alternative<delivery_plan>(plan));
  auto& p = std::get<delivery_plan>(plan);
  auto g = c.grant(p, p.deliver.size(), "L", at);
  REQUIRE(g.lease);
  return *g.lease;
}

std::vector<std::int64_t> offsets(const std::vector<dead_letter>& dead) {
  std::vector<std::int64_t> out;
  for (auto& d : dead)
    out.push_back(d.off.value);
  return out;
}

} // namespace

TEST_CASE("retentionSeconds bounds deletion by age up to the readable end, "
          "consumed or not",
          "[retention][unit]") {
  auto b = deletion_bounds(policy(60, 0, 0), now, off(41), std::nullopt);
  REQUIRE(b.size() == 1);
  CHECK(b[0].created_before == now - 60 * s);
  CHECK(b[0].through == off(41));
}

TEST_CASE("completedRetentionSeconds bounds deletion by age and by what "
          "every interested group committed, nobody interested deletes "
          "nothing",
          "[retention][unit]") {
  auto p = policy(0, 30, 0);
  CHECK(deletion_bounds(p, now, off(41), std::nullopt).empty());
  auto b = deletion_bounds(p, now, off(41), off(7));
  REQUIRE(b.size() == 1);
  CHECK(b[0].created_before == now - 30 * s);
  CHECK(b[0].through == off(7));
  // Never past the readable end.
  CHECK(deletion_bounds(p, now, off(5), off(7))[0].through == off(5));
  // Both rules: each bound names a prefix, tried in order.
  CHECK(deletion_bounds(policy(60, 30, 0), now, off(41), off(7)).size() == 2);
}

TEST_CASE("retentionEnabled=false switches the three rules off",
          "[retention][unit]") {
  spool::storage::queue_options o;
  o.retention_s = 60;
  o.completed_retention_s = 30;
  o.max_wait_time_s = 10;
  o.retention_enabled = false;
  auto p = retention_policy::from(o);
  CHECK_FALSE(p.active()); // the partition runs no retention at all
  CHECK_FALSE(next_run(p, now, 10 * s, now - 100 * s, now - 100 * s));
  o.retention_enabled = true;
  CHECK(retention_policy::from(o).active());
  CHECK_FALSE(policy(0, 0, 0).active());
}

TEST_CASE("maxWaitTimeSeconds counts from created_at plus delayedProcessing",
          "[retention][unit]") {
  CHECK_FALSE(overdue_before(policy(0, 0, 0), now));
  CHECK(overdue_before(policy(0, 0, 20), now) == now - 20 * s);
  CHECK(overdue_before(policy(0, 0, 20, 5), now) == now - 25 * s);
}

TEST_CASE("the next retention run is when a rule can become due, never "
          "sooner than one interval, and none without frames",
          "[retention][unit]") {
  auto interval = 10 * s;
  // Nothing retained: nothing can become due until a push.
  CHECK_FALSE(
      next_run(policy(60, 0, 0), now, interval, std::nullopt, std::nullopt));
  // The oldest frame qualifies just after created_at + retentionSeconds.
  CHECK(next_run(policy(60, 0, 0), now, interval, now - 5 * s, std::nullopt)
        == now + 55 * s + 1);
  // Due already (blocked by a group): looked at again one interval later.
  CHECK(next_run(policy(0, 30, 0), now, interval, now - 100 * s, std::nullopt)
        == now + interval);
  // maxWait looks at the oldest frame above the overdue boundary.
  CHECK(next_run(policy(0, 0, 100, 20), now, interval, now - 500 * s,
                 now - 30 * s)
        == now + 90 * s + 1);
  CHECK_FALSE(
      next_run(policy(0, 0, 100), now, interval, now - 500 * s, std::nullopt));
}

TEST_CASE("overdue frames the group has not consumed go to the DLQ in "
          "bounded steps",
          "[retention][cursor][unit]") {
  auto c = cursor(off(1)); // consumed 0..1
  c.set_overdue(off(6));
  auto first = c.judge_overdue(3);
  CHECK(offsets(first) == std::vector<std::int64_t>{2, 3, 4});
  CHECK(first[0].error == "maxWaitTimeSeconds exceeded");
  CHECK(c.committed() == off(4));
  CHECK(offsets(c.judge_overdue(3)) == std::vector<std::int64_t>{5, 6});
  CHECK(c.judge_overdue(3).empty());
  CHECK(c.committed() == off(6));
  // Frames deleted already are not dead-lettered (the pop skips them).
  auto d = cursor();
  d.note_watermark(off(4));
  d.set_overdue(off(5));
  CHECK(offsets(d.judge_overdue(10)) == std::vector<std::int64_t>{4, 5});
}

TEST_CASE("a leased overdue frame is judged when its lease ends",
          "[retention][cursor][unit]") {
  auto c = cursor();
  auto l = pop(c, off(0), off(9), 3); // 0..2 leased
  c.set_overdue(off(4));
  // 3..4 go now; the leased 0..2 wait.
  CHECK(offsets(c.judge_overdue(10)) == std::vector<std::int64_t>{3, 4});
  CHECK(c.judge_overdue(10).empty());
  // 0 completed under the lease; 1..2 expire with it.
  ack_request a;
  a.lease_id = l.id;
  a.off = off(0);
  REQUIRE(c.ack(a, off(9), t0).error == ack_error::none);
  c.expire(t0 + 31s);
  CHECK(offsets(c.judge_overdue(10)) == std::vector<std::int64_t>{1, 2});
  CHECK(c.committed() == off(4));
}

TEST_CASE("a seek exempts what was overdue at the seek from maxWait",
          "[retention][cursor][unit]") {
  auto c = cursor();
  c.set_overdue(off(3));
  CHECK(c.judge_overdue(10).size() == 4);
  c.seek(off(-1)); // replay from the start
  CHECK(c.judge_overdue(10).empty());
  c.set_overdue(off(5)); // newly overdue frames are judged again
  CHECK(offsets(c.judge_overdue(10)) == std::vector<std::int64_t>{4, 5});
}

TEST_CASE("frames deleted under a live lease count as completed when the "
          "lease ends",
          "[retention][cursor][unit]") {
  SECTION("by expiry: deleted frames are not isolated or charged") {
    auto c = cursor();
    pop(c, off(0), off(9), 4); // 0..3
    c.note_watermark(off(3));  // 0..2 deleted under the lease
    auto [changed, dead] = c.expire(t0 + 31s);
    CHECK(changed);
    CHECK(dead.empty());
    CHECK(c.committed() == off(2));
    // 3 was alone left unsettled: charged, not isolated.
    CHECK_FALSE(c.isolated());
    CHECK(c.head_failures() == 1);
  }
  SECTION("by a retry: everything deleted counts as completed") {
    auto c = cursor();
    auto l = pop(c, off(0), off(9), 3);
    c.note_watermark(off(5));
    ack_request a;
    a.lease_id = l.id;
    a.off = off(1);
    a.status = ack_status::retry;
    CHECK(c.ack(a, off(9), t0).lease_released);
    CHECK(c.committed() == off(2));
  }
  SECTION("a lease lost to a restart") {
    spool::storage::cursor_record rec;
    rec.leased = std::pair{off(0), off(3)};
    cursor_core c{rec, cursor_policy{}};
    c.note_watermark(off(2));
    c.recover_lost_lease();
    CHECK(c.committed() == off(1));
    CHECK(c.isolated() == offset_range{off(2), off(3)});
  }
}

TEST_CASE("a group's first contact starts at its seed, within what is "
          "retained and readable",
          "[core][retention][first-contact]") {
  using spool::storage::offset;
  // watermark 5, next offset 10: positions -1..9 become 4..9.
  CHECK(clamp_first_contact(offset{-1}, offset{5}, offset{10}) == offset{4});
  CHECK(clamp_first_contact(offset{7}, offset{5}, offset{10}) == offset{7});
  CHECK(clamp_first_contact(offset{12}, offset{5}, offset{10}) == offset{9});
  // Everything deleted (watermark past the next offset): at watermark - 1.
  CHECK(clamp_first_contact(offset{-1}, offset{10}, offset{8}) == offset{9});
}

TEST_CASE("consumed by all is the lowest position of every interested group, "
          "none while one is unsettled",
          "[core][retention][consumed]") {
  using spool::storage::offset;
  interest none;
  CHECK_FALSE(consumed_by_all(none)); // nobody interested
  interest g;
  g.stored = {offset{7}, offset{4}};
  g.seeds = {offset{5}};
  CHECK(consumed_by_all(g) == offset{4});
  g.seeds = {offset{2}}; // a registered group not met here yet
  CHECK(consumed_by_all(g) == offset{2});
  auto unstored = g;
  unstored.unstored_cursor = true;
  CHECK_FALSE(consumed_by_all(unstored));
  auto seeking = g;
  seeking.seek_open = true;
  CHECK_FALSE(consumed_by_all(seeking));
}
