#include "core/partition/retention.hpp"

#include <algorithm>

namespace spool::core {

namespace {

constexpr storage::micros us_per_s = 1'000'000;

} // namespace

retention_policy retention_policy::from(const storage::queue_options& opts) {
  retention_policy p;
  p.enabled = opts.retention_enabled;
  p.retention = opts.retention_s * us_per_s;
  p.completed = opts.completed_retention_s * us_per_s;
  p.max_wait = opts.max_wait_time_s * us_per_s;
  p.delayed = opts.delayed_processing_s * us_per_s;
  return p;
}

bool retention_policy::active() const noexcept {
  return enabled && (retention > 0 || completed > 0 || max_wait > 0);
}

std::vector<storage::retention_rule>
deletion_bounds(const retention_policy& policy, storage::micros now,
                storage::offset last_readable,
                std::optional<storage::offset> consumed_by_all) {
  std::vector<storage::retention_rule> out;
  auto bound = [&](storage::micros before, storage::offset through) {
    auto& r = out.emplace_back();
    r.created_before = before;
    r.through = through;
  };
  if (policy.retention > 0)
    bound(now - policy.retention, last_readable);
  if (policy.completed > 0 && consumed_by_all)
    bound(now - policy.completed, std::min(*consumed_by_all, last_readable));
  return out;
}

std::optional<storage::micros> overdue_before(const retention_policy& policy,
                                              storage::micros now) {
  if (policy.max_wait <= 0)
    return std::nullopt;
  return now - policy.delayed - policy.max_wait;
}

std::optional<storage::micros>
next_run(const retention_policy& policy, storage::micros now,
         storage::micros interval, std::optional<storage::micros> oldest,
         std::optional<storage::micros> oldest_unjudged) {
  if (!policy.active())
    return std::nullopt;
  std::optional<storage::micros> due;
  auto consider = [&](storage::micros at) {
    if (!due || at < *due)
      due = at;
  };
  // A segment qualifies once it is strictly older than the limit.
  if (oldest && policy.retention > 0)
    consider(*oldest + policy.retention + 1);
  if (oldest && policy.completed > 0)
    consider(*oldest + policy.completed + 1);
  if (oldest_unjudged && policy.max_wait > 0)
    consider(*oldest_unjudged + policy.delayed + policy.max_wait + 1);
  if (!due)
    return std::nullopt;
  return std::max(*due, now + interval);
}

storage::offset clamp_first_contact(storage::offset seeded,
                                    storage::offset watermark,
                                    storage::offset next_offset) {
  return std::clamp(seeded, watermark - 1,
                    std::max(watermark, next_offset) - 1);
}

std::optional<storage::offset> consumed_by_all(const interest& groups) {
  if (groups.unstored_cursor || groups.seek_open)
    return std::nullopt;
  std::optional<storage::offset> low;
  for (auto* v : {&groups.stored, &groups.seeds})
    for (auto off : *v)
      if (!low || off < *low)
        low = off;
  return low;
}

} // namespace spool::core
