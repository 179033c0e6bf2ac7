#pragma once

/// Queue options (semantics.md §9) as `configure` changes them: a patch names
/// only the options a request sets, and `apply_options` checks the result
/// against the documented ranges. Pure: no CAF include.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/error.hpp"
#include "storage/records.hpp"

namespace spool::core {

/// The options a `configure` names; every unset one keeps its value
/// (semantics.md §8: configure changes only the options it names).
struct options_patch {
  std::optional<std::int64_t> lease_time_s;
  std::optional<std::int64_t> retry_limit;
  std::optional<std::int64_t> retry_delay_ms;
  std::optional<std::vector<std::int64_t>> retry_backoff_ms;
  std::optional<std::int64_t> max_deliveries;
  std::optional<std::int64_t> max_size;
  std::optional<std::int64_t> delayed_processing_s;
  std::optional<std::int64_t> window_buffer_s;
  std::optional<std::int64_t> window_buffer_max_s;
  std::optional<bool> retention_enabled;
  std::optional<std::int64_t> retention_s;
  std::optional<std::int64_t> completed_retention_s;
  std::optional<std::int64_t> max_wait_time_s;
  std::optional<bool> dead_letter_queue;
  std::optional<bool> dlq_after_max_retries;
  std::optional<std::int64_t> dlq_retention_s;
  std::optional<std::int64_t> dedup_window_s;
  std::optional<std::int64_t> group_idle_s;
  std::optional<std::int64_t> priority;
  std::optional<std::int64_t> ttl_s;
  std::optional<bool> encryption_enabled;
};

/// The inclusive range of an integer option, with its wire name and unit.
struct option_range {
  const char* name; ///< Queen's name, as errors and the wire spell it
  std::int64_t min;
  std::int64_t max;
  const char* unit; ///< "seconds", "ms" or "" (a count)
};

/// The range of every integer option, in §9 order (documented in
/// docs/consumption.md, "Queue options").
const std::vector<option_range>& option_ranges();

/// `base` with `patch` applied, if every option of the result is in range
/// and the combination is allowed (delayedProcessing below a non-zero
/// maxWaitTimeSeconds; windowBufferMax not below windowBuffer). Otherwise an
/// `invalid_argument` error naming the first offending option; nothing is
/// applied then.
expected<storage::queue_options>
apply_options(const storage::queue_options& base, const options_patch& patch);

} // namespace spool::core
