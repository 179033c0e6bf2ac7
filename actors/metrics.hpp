#pragma once

/// Counters the broker-core actors bump; shared by every actor of a node
/// (atomics: actors run on several threads). Read by metrics endpoints.

#include <atomic>
#include <cstdint>

namespace spool::actors {

struct node_metrics {
  /// Frames dropped instead of dead-lettered (`deadLetterQueue=false` and
  /// `dlqAfterMaxRetries=false`).
  std::atomic<std::uint64_t> dead_letters_dropped{0};
  /// DLQ entries removed by `dlqRetentionSeconds`.
  std::atomic<std::uint64_t> dead_letters_expired{0};
};

} // namespace spool::actors
