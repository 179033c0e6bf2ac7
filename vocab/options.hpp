#pragma once

/// Queue options (semantics.md §9): every option as a queue stores it, and
/// the patch a `configure` names. Plain structs (the storage serializes
/// `queue_options` by its `fields`); the ranges and rules are in
/// `core/queue/options.hpp`.

#include <cstdint>
#include <optional>
#include <vector>

namespace spool {

/// Queue options, Queen's names (semantics.md §9). Stored as given; the
/// broker validates them when a queue is configured.
struct queue_options {
  std::int64_t lease_time_s = 300;
  std::int64_t retry_limit = 3;
  std::int64_t retry_delay_ms = 0;
  std::vector<std::int64_t> retry_backoff_ms;
  std::int64_t max_deliveries = 0;
  std::int64_t max_size = 0;
  std::int64_t delayed_processing_s = 0;
  std::int64_t window_buffer_s = 0;
  std::optional<std::int64_t> window_buffer_max_s;
  bool retention_enabled = true;
  std::int64_t retention_s = 0;
  std::int64_t completed_retention_s = 0;
  std::int64_t max_wait_time_s = 0;
  std::optional<bool> dead_letter_queue;
  std::optional<bool> dlq_after_max_retries;
  std::int64_t dlq_retention_s = 14 * 24 * 3600;
  std::int64_t dedup_window_s = 0;
  std::int64_t group_idle_s = 0;
  std::int64_t priority = 0;
  std::int64_t ttl_s = 0;
  bool encryption_enabled = false;

  friend bool operator==(const queue_options&, const queue_options&) = default;

  template <class F>
  friend auto fields(F& f, queue_options& x) {
    return f(x.lease_time_s, x.retry_limit, x.retry_delay_ms,
             x.retry_backoff_ms, x.max_deliveries, x.max_size,
             x.delayed_processing_s, x.window_buffer_s, x.window_buffer_max_s,
             x.retention_enabled, x.retention_s, x.completed_retention_s,
             x.max_wait_time_s, x.dead_letter_queue, x.dlq_after_max_retries,
             x.dlq_retention_s, x.dedup_window_s, x.group_idle_s, x.priority,
             x.ttl_s, x.encryption_enabled);
  }
};

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

/// The wire's names of the options a patch holds (Queen's), for the readers
/// and writers of both ends: the integer and boolean ones (the list
/// `retryBackoffMs` is read on its own).
struct int_option_name {
  const char* name;
  std::optional<std::int64_t> options_patch::*field;
};
struct bool_option_name {
  const char* name;
  std::optional<bool> options_patch::*field;
};

inline constexpr int_option_name int_option_names[] = {
    {"leaseTime", &options_patch::lease_time_s},
    {"retryLimit", &options_patch::retry_limit},
    {"retryDelay", &options_patch::retry_delay_ms},
    {"maxDeliveries", &options_patch::max_deliveries},
    {"maxSize", &options_patch::max_size},
    {"delayedProcessing", &options_patch::delayed_processing_s},
    {"windowBuffer", &options_patch::window_buffer_s},
    {"windowBufferMax", &options_patch::window_buffer_max_s},
    {"retentionSeconds", &options_patch::retention_s},
    {"completedRetentionSeconds", &options_patch::completed_retention_s},
    {"maxWaitTimeSeconds", &options_patch::max_wait_time_s},
    {"dlqRetentionSeconds", &options_patch::dlq_retention_s},
    {"dedupWindowSeconds", &options_patch::dedup_window_s},
    {"groupIdleSeconds", &options_patch::group_idle_s},
    {"priority", &options_patch::priority},
    {"ttl", &options_patch::ttl_s},
};

inline constexpr bool_option_name bool_option_names[] = {
    {"retentionEnabled", &options_patch::retention_enabled},
    {"deadLetterQueue", &options_patch::dead_letter_queue},
    {"dlqAfterMaxRetries", &options_patch::dlq_after_max_retries},
    {"encryptionEnabled", &options_patch::encryption_enabled},
};

} // namespace spool
