// core/queue/one_timer.hpp: one timer message in flight, at the earliest
// deadline asked for; superseded and cancelled messages are ignored.

#include <catch2/catch.hpp>

#include "core/queue/one_timer.hpp"

using spool::core::one_timer;

TEST_CASE("one timer is armed at the earliest deadline asked for, and only "
          "its own message fires it",
          "[unit][actors][timer]") {
  one_timer<int> t;
  CHECK_FALSE(t.armed());
  auto first = t.arm(100);
  REQUIRE(first);
  CHECK(t.armed());
  CHECK_FALSE(t.arm(100)); // as early: nothing to send
  CHECK_FALSE(t.arm(150)); // later: the armed one comes first
  auto earlier = t.arm(50);
  REQUIRE(earlier);
  CHECK(*earlier != *first);
  CHECK_FALSE(t.fire(*first)); // superseded
  CHECK(t.armed());
  CHECK(t.fire(*earlier));
  CHECK_FALSE(t.armed());
  auto again = t.arm(200); // disarmed: any deadline arms
  REQUIRE(again);
  t.cancel();
  CHECK_FALSE(t.armed());
  CHECK_FALSE(t.fire(*again)); // cancelled
  CHECK(t.arm(300));
}
