#pragma once

/// Where a seek moves a cursor (semantics.md §6, the product document's
/// "Seek"): which target of a seek body applies, and the committed position
/// it resolves to on one partition. Pure: no CAF, no storage access; the
/// timestamp walk (`storage::resolve_timestamp`) is the caller's, and its
/// answer is passed in.

#include <cstdint>
#include <optional>

#include "storage/error.hpp"
#include "storage/types.hpp"

namespace spool::core {

/// The body of a seek: `toEnd`, `timestamp` and Spool's additions
/// `toStart`, `offset`, `shiftBy`. An unset field is absent (a false flag
/// too).
struct seek_target {
  bool to_end = false;
  std::optional<storage::micros> timestamp; ///< µs UTC
  bool to_start = false;
  std::optional<std::int64_t> offset; ///< the next offset wanted
  std::optional<std::int64_t> shift_by;
};

/// Which target applies.
enum class seek_rule : std::uint8_t {
  to_end,
  timestamp,
  to_start,
  offset,
  shift_by
};

/// The rule of `t`, by precedence toEnd > timestamp > toStart > offset >
/// shiftBy (the product document: "toEnd wins over a timestamp"); none
/// given: `errc::invalid_argument` "Must specify toEnd=true or a timestamp".
expected<seek_rule> seek_rule_of(const seek_target& t);

/// One partition as a seek sees it.
struct seek_bounds {
  storage::offset watermark;   ///< lowest retained offset
  storage::offset last_offset; ///< readable end - 1
  /// The group's committed here (for a group new here: where its first
  /// contact would seed it).
  storage::offset committed;
  /// The timestamp walk's answer (timestamp rule only; none: nothing that
  /// recent, i.e. lastOffset).
  std::optional<storage::offset> walked;
};

/// The new committed: toEnd → lastOffset; timestamp → the walk; toStart →
/// watermark - 1; offset n → n - 1; shiftBy n → the current position
/// (committed, or watermark - 1 when retention passed it) + n. Every result
/// is clamped to [watermark - 1, lastOffset].
storage::offset seek_position(seek_rule rule, const seek_target& t,
                              const seek_bounds& b);

} // namespace spool::core
