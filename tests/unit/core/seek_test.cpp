// Seek targets, the pure rules (semantics.md §6, the product document's
// "Seek"): which target of a body applies, and where each one puts
// committed on a partition, clamped to the retained window.

#include <catch2/catch.hpp>

#include <limits>

#include "core/cursor/seek.hpp"

using namespace spool;
using namespace spool::core;
using spool::storage::ec;
using spool::storage::offset;

namespace {

/// A partition retaining offsets 100..199 with the group at 150.
const seek_bounds window{offset{100}, offset{199}, offset{150}, std::nullopt};

offset resolve(const seek_target& t, seek_bounds b = window) {
  auto rule = seek_rule_of(t);
  REQUIRE(rule);
  return seek_position(*rule, t, b);
}

} // namespace

TEST_CASE("a seek without a target is refused: Must specify toEnd=true or a "
          "timestamp",
          "[seek]") {
  seek_target none;
  auto r = seek_rule_of(none);
  REQUIRE_FALSE(r);
  CHECK(r.err().code == errc::invalid_argument);
  CHECK(r.err().message == "Must specify toEnd=true or a timestamp");
  seek_target off_flags;
  off_flags.to_end = false;
  off_flags.to_start = false;
  CHECK_FALSE(seek_rule_of(off_flags));
}

TEST_CASE("toEnd wins over a timestamp, then toStart, offset, shiftBy",
          "[seek]") {
  seek_target t;
  t.to_end = true;
  t.timestamp = 5;
  t.to_start = true;
  t.offset = 3;
  t.shift_by = -1;
  CHECK(*seek_rule_of(t) == seek_rule::to_end);
  t.to_end = false;
  CHECK(*seek_rule_of(t) == seek_rule::timestamp);
  t.timestamp.reset();
  CHECK(*seek_rule_of(t) == seek_rule::to_start);
  t.to_start = false;
  CHECK(*seek_rule_of(t) == seek_rule::offset);
  t.offset.reset();
  CHECK(*seek_rule_of(t) == seek_rule::shift_by);
}

TEST_CASE("toEnd sets committed to lastOffset, toStart to watermark - 1",
          "[seek]") {
  seek_target end;
  end.to_end = true;
  CHECK(resolve(end) == offset{199});
  seek_target start;
  start.to_start = true;
  CHECK(resolve(start) == offset{99});
  // An empty partition: both are -1.
  seek_bounds empty{offset{0}, offset{-1}, offset{-1}, std::nullopt};
  CHECK(resolve(end, empty) == offset{-1});
  CHECK(resolve(start, empty) == offset{-1});
}

TEST_CASE("a timestamp seek takes the walk's answer, or lastOffset when "
          "nothing is that recent",
          "[seek]") {
  seek_target t;
  t.timestamp = 1'000;
  auto b = window;
  b.walked = offset{129};
  CHECK(resolve(t, b) == offset{129}); // backwards from 150
  b.walked = offset{189};
  CHECK(resolve(t, b) == offset{189});
  b.walked.reset();
  CHECK(resolve(t, b) == offset{199});
}

TEST_CASE("offset n sets committed to n - 1 clamped to [watermark - 1, "
          "lastOffset]",
          "[seek]") {
  seek_target t;
  t.offset = 120;
  CHECK(resolve(t) == offset{119});
  t.offset = 5; // below the retained window
  CHECK(resolve(t) == offset{99});
  t.offset = 500; // past the end
  CHECK(resolve(t) == offset{199});
  t.offset = std::numeric_limits<std::int64_t>::min();
  CHECK(resolve(t) == offset{99});
  t.offset = 0;
  CHECK(resolve(t) == offset{99});
}

TEST_CASE("shiftBy moves from the current position, same clamp", "[seek]") {
  seek_target t;
  t.shift_by = -20;
  CHECK(resolve(t) == offset{130});
  t.shift_by = 10;
  CHECK(resolve(t) == offset{160});
  t.shift_by = -1000;
  CHECK(resolve(t) == offset{99});
  t.shift_by = std::numeric_limits<std::int64_t>::max();
  CHECK(resolve(t) == offset{199});
  t.shift_by = std::numeric_limits<std::int64_t>::min();
  CHECK(resolve(t) == offset{99});
  // A cursor retention passed counts from watermark - 1.
  auto behind = window;
  behind.committed = offset{10};
  t.shift_by = 5;
  CHECK(resolve(t, behind) == offset{104});
}

TEST_CASE("a staged seek answers before and after and the record it writes, "
          "leaving the cursor as it was",
          "[core][seek]") {
  spool::storage::cursor_record rec;
  rec.committed = offset{4};
  cursor_core cur(rec, cursor_policy{});
  seek_target t;
  t.to_start = true;
  auto plan = plan_seek(cur, seek_rule::to_start, t, offset{2}, offset{9},
                        std::nullopt, 1'000);
  CHECK(plan.before == offset{4});
  CHECK(plan.after == offset{1}); // watermark - 1
  CHECK(plan.record.committed == offset{1});
  CHECK(plan.record.last_activity == 1'000);
  CHECK(cur.committed() == offset{4}); // nothing changed yet
}
