#pragma once

/// What a seek, a DLQ operation and a token's queues claim select
/// (semantics.md §4, §6): plain structs shared by the cores, the actors and
/// the node API.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vocab/time.hpp"

namespace spool {

/// `name` starts with one of `prefixes` (a token's `queues` claim); none:
/// every name does.
inline bool named_by_prefixes(
    std::string_view name,
    const std::optional<std::vector<std::string>>& prefixes) noexcept {
  if (!prefixes)
    return true;
  for (auto& p : *prefixes)
    if (name.starts_with(p))
      return true;
  return false;
}

/// The body of a seek: `toEnd`, `timestamp` and Spool's additions
/// `toStart`, `offset`, `shiftBy`. An unset field is absent (a false flag
/// too).
struct seek_target {
  bool to_end = false;
  std::optional<micros> timestamp; ///< µs UTC
  bool to_start = false;
  std::optional<std::int64_t> offset; ///< the next offset wanted
  std::optional<std::int64_t> shift_by;
};

/// Which entries an operation applies to; every field narrows the set.
struct dlq_filter {
  std::optional<std::string> queue;
  std::optional<std::string> group;
  std::optional<std::string> partition; ///< by name
  std::optional<micros> from;           ///< failed_at >= from
  std::optional<micros> to;             ///< failed_at <= to
  /// Non-empty: exactly these entries (each must exist and match).
  std::vector<std::uint64_t> ids;
  /// Set by a cluster node, never by a client: only the queues of these
  /// slots (the ones it serves).
  std::optional<std::vector<std::uint16_t>> slots;
};

/// A listing: the filter, then `after` (entries older than that id), then
/// `offset` entries skipped, then at most `limit`.
struct dlq_query {
  dlq_filter filter;
  std::size_t limit = 100;
  std::size_t offset = 0;
  std::optional<std::uint64_t> after;
};

} // namespace spool
