#include "core/partition/visibility.hpp"

#include <algorithm>

namespace spool::core {

visibility_policy visibility_policy::from(const storage::queue_options& opts) {
  visibility_policy p;
  p.delayed_processing = opts.delayed_processing_s * 1'000'000;
  p.window_buffer = opts.window_buffer_s * 1'000'000;
  p.window_buffer_max = opts.window_buffer_max_s.value_or(0) * 1'000'000;
  return p;
}

visible_frames visible_prefix(std::span<const storage::micros> created_at,
                              storage::micros newest, storage::micros now,
                              const visibility_policy& policy) {
  visible_frames out;
  if (created_at.empty())
    return out;
  if (policy.window_buffer > 0) {
    auto wb_max = policy.window_buffer_max > 0 ? policy.window_buffer_max
                                               : 10 * policy.window_buffer;
    auto quiet_at = newest + policy.window_buffer;
    auto overdue_at = created_at.front() + wb_max;
    if (now < quiet_at && now < overdue_at) {
      out.held_back = empty_reason::window_buffer;
      out.next_change = std::min(quiet_at, overdue_at);
      return out;
    }
  }
  for (auto c : created_at) {
    if (policy.delayed_processing > 0 && c + policy.delayed_processing > now) {
      out.held_back = empty_reason::delayed;
      out.next_change = c + policy.delayed_processing;
      break;
    }
    ++out.count;
  }
  return out;
}

} // namespace spool::core
