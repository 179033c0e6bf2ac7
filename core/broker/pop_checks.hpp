#pragma once

/// What the broker checks of a pop before it goes to a queue (semantics.md
/// §3, api.md), and where a queue name puts it (Queen's namespace and task).
/// Pure: no CAF include.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "config/options.hpp"
#include "vocab/expected.hpp"
#include "vocab/time.hpp"

namespace spool::core {

/// The fields of a pop the server's caps bound.
struct pop_shape {
  std::string_view group;
  const std::string* partition = nullptr; ///< none: a wildcard pop
  std::size_t batch = 1;
  std::size_t partitions = 1;
  bool wait = false;
  milliseconds timeout{0};
  std::size_t max_bytes = SIZE_MAX;
};

/// A pop within the caps: a group (queue mode is `__QUEUE_MODE__`, never
/// empty) and names that pass `check_name`, `batch` 1..`pop.maxBatch`,
/// a wildcard's `partitions` 1..`pop.maxPartitions`, a long poll's
/// `timeout` 0..`pop.maxTimeoutMs`. Answers the pop's byte budget, lowered
/// to `pop.maxBytes`; an `invalid_argument` error names the field.
expected<std::size_t> check_pop(const config::pop_limits& limits,
                                const pop_shape& pop);

/// The namespace and task Queen derives from a queue name: the text before
/// the first '.', and between the first and the second '.'.
std::pair<std::string, std::string> namespace_and_task(const std::string& q);

} // namespace spool::core
