// Where a group starts: the timestamp grammar and the mode precedence of a
// first pop (semantics.md §5).

#include <catch2/catch.hpp>

#include "core/queue/subscription.hpp"

using namespace spool;
using core::parse_timestamp;
using core::registration;
using storage::subscription_mode;

namespace {
// 2026-07-30T00:00:00Z in µs.
constexpr storage::micros july30 = 1'785'369'600'000'000;
} // namespace

TEST_CASE("timestamps are RFC 3339 date-times compared in integer µs UTC",
          "[unit][subscription]") {
  CHECK(parse_timestamp("2026-07-30T00:00:00Z") == july30);
  CHECK(parse_timestamp("2026-07-30t00:00:00z") == july30);
  CHECK(parse_timestamp("2026-07-30 00:00:00Z") == july30);
  CHECK(parse_timestamp("2026-07-30T02:00:00+02:00") == july30);
  CHECK(parse_timestamp("2026-07-29T19:30:00-04:30") == july30);
  CHECK(parse_timestamp("2026-07-30T00:00:00.5Z") == july30 + 500'000);
  CHECK(parse_timestamp("2026-07-30T00:00:00.000001Z") == july30 + 1);
  // Digits beyond µs are truncated.
  CHECK(parse_timestamp("2026-07-30T00:00:00.0000019Z") == july30 + 1);
  CHECK(parse_timestamp("1970-01-01T00:00:00Z") == 0);
  CHECK(parse_timestamp("1969-12-31T23:59:59Z") == -1'000'000);
  CHECK(parse_timestamp("2024-02-29T00:00:00Z").has_value());
  // A leap second, at the end of a UTC day only.
  CHECK(parse_timestamp("2016-12-31T23:59:60Z")
        == parse_timestamp("2017-01-01T00:00:00Z"));
  CHECK(parse_timestamp("2017-01-01T00:59:60+01:00")
        == parse_timestamp("2017-01-01T00:00:00Z"));
  CHECK_FALSE(parse_timestamp("2026-07-30T12:00:60Z"));
}

TEST_CASE("anything else is not a timestamp", "[unit][subscription]") {
  for (auto bad :
       {"", "now", "yesterday", "2026-07-30", "2026-07-30T00:00:00",
        "2026-07-30T00:00Z", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2025-02-29T00:00:00Z", "2026-07-30T24:00:00Z", "2026-07-30T00:60:00Z",
        "2026-07-30T00:00:00.Z", "2026-07-30T00:00:00+2:00",
        "2026-07-30T00:00:00+24:00", "2026-07-30T00:00:00Zjunk",
        " 2026-07-30T00:00:00Z", "2026-7-30T00:00:00Z", "1785369600"})
    CHECK_FALSE(parse_timestamp(bad));
}

TEST_CASE("mode precedence: subscriptionFrom timestamp, then now, then "
          "subscriptionMode, then the server default",
          "[unit][subscription]") {
  auto now = july30 + 42;
  auto all = subscription_mode::all;
  auto ts = registration("g", {"all", "2026-07-30T00:00:00Z"}, all, now);
  CHECK(ts.mode == subscription_mode::timestamp);
  CHECK(ts.timestamp == july30);
  CHECK(ts.registered_mode == subscription_mode::timestamp);
  CHECK(ts.registered_at == now);
  auto at_now = registration("g", {"all", "now"}, all, now);
  CHECK(at_now.mode == subscription_mode::new_only);
  CHECK(at_now.timestamp == now);
  CHECK(registration("g", {"new", ""}, all, now).mode
        == subscription_mode::new_only);
  CHECK(registration("g", {"new-only", ""}, all, now).mode
        == subscription_mode::new_only);
  for (auto other : {"all", "from_beginning", "whatever"})
    CHECK(registration("g", {other, ""}, subscription_mode::new_only, now).mode
          == all);
  CHECK(registration("g", {}, subscription_mode::new_only, now).mode
        == subscription_mode::new_only);
  CHECK(registration("g", {}, all, now).mode == all);
  CHECK(registration("g", {}, all, now).timestamp == 0);
}

TEST_CASE("an unparsable subscriptionFrom means registration-time new",
          "[unit][subscription]") {
  auto r = registration("g", {"all", "last tuesday"}, subscription_mode::all,
                        july30);
  CHECK(r.mode == subscription_mode::new_only);
  CHECK(r.timestamp == july30);
}

TEST_CASE("queue mode always registers as all", "[unit][subscription]") {
  auto r = registration(core::queue_mode_group, {"new", "now"},
                        subscription_mode::new_only, july30);
  CHECK(r.mode == subscription_mode::all);
  CHECK(r.registered_mode == subscription_mode::all);
}

TEST_CASE("registrations of a queue get strictly increasing stamps, also "
          "after a restart and with the clock stepping back",
          "[core][subscription][registration]") {
  spool::core::registration_clock c;
  CHECK(c.next(100) == 100);
  CHECK(c.next(100) == 101); // the same microsecond
  CHECK(c.next(50) == 102);  // the clock stepped back
  CHECK(c.next(500) == 500);
  spool::core::registration_clock restarted;
  restarted.saw(700); // stored records seed it
  restarted.saw(300);
  CHECK(restarted.next(600) == 701);
}
