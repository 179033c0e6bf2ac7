// Between the cursor's plan and its grant: the byte cap and visibility cut,
// and autoAck's settlement (semantics.md §3).

#include <catch2/catch.hpp>

#include "core/cursor/delivery.hpp"

using namespace spool;
using namespace spool::core;
using namespace std::chrono_literals;

namespace {

const mono_time t0 = mono_time{} + 1000h;
constexpr storage::micros wall = 1'700'000'000'000'000;

} // namespace

TEST_CASE("a pop stops adding frames at its byte budget, at least one",
          "[core][cursor][delivery]") {
  std::vector<storage::micros> at{wall - 10, wall - 9, wall - 8};
  std::vector<std::size_t> bytes{40, 40, 40};
  visibility_policy none;
  CHECK(cut_delivery(at, bytes, wall - 8, wall, none, 100).count == 2);
  CHECK(cut_delivery(at, bytes, wall - 8, wall, none, 120).count == 3);
  // The first frame always goes, over the budget too.
  CHECK(cut_delivery(at, bytes, wall - 8, wall, none, 10).count == 1);
}

TEST_CASE("a pop delivers only the visible prefix, and says why and until "
          "when the rest waits",
          "[core][cursor][delivery]") {
  visibility_policy delayed;
  delayed.delayed_processing = 5'000'000; // 5 s
  std::vector<storage::micros> at{wall - 6'000'000, wall - 1'000'000};
  std::vector<std::size_t> bytes{1, 1};
  auto cut = cut_delivery(at, bytes, at.back(), wall, delayed, SIZE_MAX);
  CHECK(cut.count == 1);

  std::vector<storage::micros> young{wall - 1'000'000};
  cut = cut_delivery(young, bytes, young.back(), wall, delayed, SIZE_MAX);
  CHECK(cut.count == 0);
  CHECK(cut.held_back == empty_reason::delayed);
  CHECK(cut.next_change == wall + 4'000'000);
  // The shell waits that long on the monotonic clock.
  CHECK(mono_of(*cut.next_change, wall, t0) == t0 + 4s);
  CHECK(mono_of(wall - 1, wall, t0) == t0);
}

TEST_CASE("autoAck settles every frame it delivered at once and commits "
          "past them",
          "[core][cursor][delivery]") {
  cursor_policy p;
  p.lease_time = 30s;
  cursor_core cur(storage::cursor_record{}, p);
  auto plan = std::get<delivery_plan>(cur.plan(t0, offset{0}, offset{9}, 3));
  auto granted = cur.grant(plan, 3, "L1", t0);
  REQUIRE(granted.lease);
  auto done = auto_ack(cur, *granted.lease, plan.deliver, offset{9}, t0);
  CHECK(done.empty()); // no requeued dead letter among them
  CHECK(cur.committed() == offset{2});
  CHECK_FALSE(cur.lease()); // everything settled: the lease ended
}

TEST_CASE("autoAck of a requeued dead letter removes its DLQ entry",
          "[core][cursor][delivery]") {
  cursor_policy p;
  cursor_core cur(storage::cursor_record{}, p);
  REQUIRE(cur.requeue(77, offset{4}) == cursor_core::requeue_result::added);
  auto plan = std::get<delivery_plan>(cur.plan(t0, offset{0}, offset{9}, 3));
  REQUIRE(plan.requeued == 77u);
  auto granted = cur.grant(plan, 1, "L1", t0);
  REQUIRE(granted.lease);
  offset off = granted.lease->range.first;
  auto done = auto_ack(cur, *granted.lease, {&off, 1}, offset{9}, t0);
  CHECK(done == std::vector<std::uint64_t>{77});
  CHECK(cur.requeued().empty());
}
