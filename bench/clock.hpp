#pragma once

// Clocks the benchmarks share: process CPU time and the wall clock in µs.

#include <sys/resource.h>

#include <chrono>

#include "storage/types.hpp"

namespace spool::bench {

/// User + system CPU seconds of the whole process so far.
inline double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec)
         + static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/// Wall-clock µs since the epoch (the brokers' `node_context::wall`).
inline storage::micros wall_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace spool::bench
