// delayedProcessing and windowBuffer(Max) as pure rules.

#include <catch2/catch.hpp>

#include "core/partition/visibility.hpp"

using namespace spool;
using namespace spool::core;
using spool::storage::micros;

namespace {
constexpr micros s = 1'000'000;
constexpr micros t = 1'800'000'000 * s;
} // namespace

TEST_CASE("delayedProcessing hides a frame until created_at + delay and holds "
          "back later frames",
          "[visibility][delayed]") {
  visibility_policy p;
  p.delayed_processing = 10 * s;
  std::vector<micros> stamps{t, t + 2 * s, t + 5 * s};
  auto v = visible_prefix(stamps, t + 5 * s, t + 11 * s, p);
  CHECK(v.count == 1);
  CHECK(v.held_back == empty_reason::delayed);
  CHECK(v.next_change == t + 12 * s);
  CHECK(visible_prefix(stamps, t + 5 * s, t + 9 * s, p).count == 0);
  CHECK(visible_prefix(stamps, t + 5 * s, t + 15 * s, p).count == 3);
  CHECK(!visible_prefix(stamps, t + 5 * s, t + 15 * s, p).held_back);
}

TEST_CASE("windowBuffer hides a partition until its newest frame is that old",
          "[visibility][window]") {
  visibility_policy p;
  p.window_buffer = 5 * s;
  std::vector<micros> stamps{t, t + 3 * s};
  auto v = visible_prefix(stamps, t + 3 * s, t + 7 * s, p);
  CHECK(v.count == 0);
  CHECK(v.held_back == empty_reason::window_buffer);
  CHECK(v.next_change == t + 8 * s);
  CHECK(visible_prefix(stamps, t + 3 * s, t + 8 * s, p).count == 2);
}

TEST_CASE("windowBufferMax shows a partition whose oldest undelivered frame is "
          "that old despite a steady trickle",
          "[visibility][window]") {
  visibility_policy p;
  p.window_buffer = 5 * s;
  p.window_buffer_max = 20 * s;
  std::vector<micros> stamps{t,          t + 4 * s,  t + 8 * s,
                             t + 12 * s, t + 16 * s, t + 19 * s};
  // A frame arrives every 4 s: the partition is never quiet for 5 s.
  CHECK(visible_prefix(stamps, t + 19 * s, t + 19 * s, p).count == 0);
  CHECK(visible_prefix(stamps, t + 19 * s, t + 20 * s, p).count == 6);
  // Default windowBufferMax: 10 × windowBuffer.
  p.window_buffer_max = 0;
  CHECK(visible_prefix(stamps, t + 49 * s, t + 49 * s, p).count == 0);
  CHECK(visible_prefix(stamps, t + 49 * s, t + 50 * s, p).count == 6);
}
