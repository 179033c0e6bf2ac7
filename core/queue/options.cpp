#include "core/queue/options.hpp"

namespace spool::core {

namespace {

constexpr std::int64_t day_s = 24 * 3600;
constexpr std::int64_t year_s = 365 * day_s;
/// Long enough for any use, short enough that µs arithmetic cannot overflow.
constexpr std::int64_t century_s = 100 * year_s;
constexpr std::int64_t day_ms = day_s * 1000;

enum option_index : std::size_t {
  lease_time,
  retry_limit,
  retry_delay,
  retry_backoff,
  max_deliveries,
  max_size,
  delayed_processing,
  window_buffer,
  window_buffer_max,
  retention,
  completed_retention,
  max_wait_time,
  dlq_retention,
  dedup_window,
  group_idle,
  priority,
  ttl,
};

/// Longest `retryBackoffMs` list.
constexpr std::size_t max_backoff_steps = 64;

api_error out_of_range(const option_range& r, std::int64_t got) {
  return make_error(errc::invalid_argument, "option ", r.name,
                    " must be between ", r.min, " and ", r.max,
                    *r.unit ? " " : "", r.unit, ", got ", got);
}

} // namespace

const std::vector<option_range>& option_ranges() {
  static const std::vector<option_range> ranges{
      {"leaseTime", 1, 7 * day_s, "seconds"},
      {"retryLimit", 0, 1'000'000, ""},
      {"retryDelay", 0, day_ms, "ms"},
      {"retryBackoffMs", 0, day_ms, "ms"},
      {"maxDeliveries", 0, 1'000'000, ""},
      {"maxSize", 0, INT64_MAX, ""},
      {"delayedProcessing", 0, year_s, "seconds"},
      {"windowBuffer", 0, year_s, "seconds"},
      {"windowBufferMax", 0, year_s, "seconds"},
      {"retentionSeconds", 0, century_s, "seconds"},
      {"completedRetentionSeconds", 0, century_s, "seconds"},
      {"maxWaitTimeSeconds", 0, century_s, "seconds"},
      {"dlqRetentionSeconds", 0, century_s, "seconds"},
      {"dedupWindowSeconds", 0, century_s, "seconds"},
      {"groupIdleSeconds", 0, century_s, "seconds"},
      {"priority", -1'000'000, 1'000'000, ""},
      {"ttl", 0, century_s, "seconds"},
  };
  return ranges;
}

expected<storage::queue_options>
apply_options(const storage::queue_options& base, const options_patch& p,
              bool encryption_keys) {
  auto out = base;
  auto& r = option_ranges();
  // Sets `field` from `value` when the patch names it, checking its range.
  std::optional<api_error> failure;
  auto set = [&](std::int64_t& field, const std::optional<std::int64_t>& value,
                 option_index i) {
    if (failure || !value)
      return;
    if (*value < r[i].min || *value > r[i].max)
      failure = out_of_range(r[i], *value);
    else
      field = *value;
  };
  set(out.lease_time_s, p.lease_time_s, lease_time);
  set(out.retry_limit, p.retry_limit, retry_limit);
  set(out.retry_delay_ms, p.retry_delay_ms, retry_delay);
  if (p.retry_backoff_ms && !failure) {
    if (p.retry_backoff_ms->size() > max_backoff_steps)
      failure = make_error(
          errc::invalid_argument, "option retryBackoffMs must have at most ",
          max_backoff_steps, " entries, got ", p.retry_backoff_ms->size());
    for (auto v : *p.retry_backoff_ms)
      if (!failure && (v < r[retry_backoff].min || v > r[retry_backoff].max))
        failure = out_of_range(r[retry_backoff], v);
    if (!failure)
      out.retry_backoff_ms = *p.retry_backoff_ms;
  }
  set(out.max_deliveries, p.max_deliveries, max_deliveries);
  set(out.max_size, p.max_size, max_size);
  set(out.delayed_processing_s, p.delayed_processing_s, delayed_processing);
  set(out.window_buffer_s, p.window_buffer_s, window_buffer);
  if (p.window_buffer_max_s && !failure) {
    std::int64_t v = 0;
    set(v, p.window_buffer_max_s, window_buffer_max);
    if (!failure)
      out.window_buffer_max_s = v;
  }
  if (p.retention_enabled)
    out.retention_enabled = *p.retention_enabled;
  set(out.retention_s, p.retention_s, retention);
  set(out.completed_retention_s, p.completed_retention_s, completed_retention);
  set(out.max_wait_time_s, p.max_wait_time_s, max_wait_time);
  if (p.dead_letter_queue)
    out.dead_letter_queue = p.dead_letter_queue;
  if (p.dlq_after_max_retries)
    out.dlq_after_max_retries = p.dlq_after_max_retries;
  set(out.dlq_retention_s, p.dlq_retention_s, dlq_retention);
  set(out.dedup_window_s, p.dedup_window_s, dedup_window);
  set(out.group_idle_s, p.group_idle_s, group_idle);
  set(out.priority, p.priority, priority);
  set(out.ttl_s, p.ttl_s, ttl);
  if (p.encryption_enabled)
    out.encryption_enabled = *p.encryption_enabled;
  if (failure)
    return *failure;
  // Combinations, judged on the result (an option named earlier may meet
  // one that was already stored).
  if (out.encryption_enabled && !encryption_keys)
    return make_error(
        errc::invalid_argument,
        "option encryptionEnabled: this server has no encryption key; start "
        "spoold with --encryption-key-file (docs/security.md, \"Encryption "
        "at rest\")");
  if (out.max_wait_time_s > 0
      && out.delayed_processing_s >= out.max_wait_time_s)
    return make_error(
        errc::invalid_argument,
        "option delayedProcessing must be below maxWaitTimeSeconds (",
        out.max_wait_time_s, "), got ", out.delayed_processing_s);
  if (out.window_buffer_max_s && *out.window_buffer_max_s < out.window_buffer_s)
    return make_error(errc::invalid_argument,
                      "option windowBufferMax must not be below windowBuffer (",
                      out.window_buffer_s, "), got ", *out.window_buffer_max_s);
  return out;
}

} // namespace spool::core
