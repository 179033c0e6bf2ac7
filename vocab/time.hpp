#pragma once

/// The two clocks (DESIGN.md "Time"): the monotonic one for leases,
/// long-poll deadlines and retry delays; the wall clock (µs since the Unix
/// epoch, UTC) for `created_at`, visibility, retention and timestamps. Both
/// are injected; deterministic tests simulate them.

#include <chrono>
#include <cstdint>

namespace spool {

using mono_clock = std::chrono::steady_clock;
using mono_time = mono_clock::time_point;
using milliseconds = std::chrono::milliseconds;

/// Wall-clock time in microseconds since the Unix epoch (UTC).
using micros = std::int64_t;

/// The system's wall clock now (what a real node injects; tests inject
/// their own).
inline micros system_wall_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The wall-clock time at which a monotonic deadline falls, seen from a
/// moment known on both clocks.
constexpr micros wall_of(mono_time t, mono_time mono_now, micros wall_now) {
  return wall_now
         + std::chrono::duration_cast<std::chrono::microseconds>(t - mono_now)
               .count();
}

/// The monotonic time at which a wall-clock moment falls (now if it is
/// past), seen from a moment known on both clocks.
constexpr mono_time mono_of(micros t, micros wall_now, mono_time mono_now) {
  return mono_now + std::chrono::microseconds{t > wall_now ? t - wall_now : 0};
}

} // namespace spool
