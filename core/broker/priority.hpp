#pragma once

/// The order in which a namespace/task pop tries its queues (semantics.md
/// §9): higher `priority` first, but a queue whose oldest waiting frame has
/// waited longer than `priority.maxStarvationSeconds` goes before all others
/// (the longest-starved first), so low priorities are never starved. Pure:
/// no CAF include.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/types.hpp"

namespace spool::core {

/// Whether a queue in namespace `ns` with task `task` serves a namespace pop
/// of `pop_ns` and, when it names one, `pop_task` (semantics.md §9). A queue
/// in no namespace serves none.
bool serves(std::string_view ns, std::string_view task, std::string_view pop_ns,
            const std::optional<std::string>& pop_task);

struct queue_candidate {
  std::string name;
  std::int64_t priority = 0;
  /// created_at of the oldest frame waiting for the group (none: nothing).
  std::optional<storage::micros> oldest_waiting;
};

/// Indices of the candidates with something waiting, in serving order:
/// starved ones (waited > `max_starvation` µs at `now`) oldest first, then
/// by priority (highest first), then by name.
std::vector<std::size_t> serving_order(std::span<const queue_candidate> qs,
                                       storage::micros now,
                                       storage::micros max_starvation);

} // namespace spool::core
