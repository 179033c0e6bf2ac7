#pragma once

/// Where a seek moves a cursor (semantics.md §6, the product document's
/// "Seek"): which target of a seek body applies, and the committed position
/// it resolves to on one partition. Pure: no CAF, no storage access; the
/// timestamp walk (`storage::resolve_timestamp`) is the caller's, and its
/// answer is passed in.

#include <cstdint>
#include <optional>

#include "core/cursor/cursor_core.hpp"
#include "storage/error.hpp"
#include "storage/records.hpp"
#include "storage/types.hpp"
#include "vocab/queries.hpp"

namespace spool::core {

using spool::seek_target;

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

/// A seek of one group on one partition, staged: where its cursor stands,
/// where it moves, and the record the seek's write stores.
struct seek_plan {
  storage::offset before;
  storage::offset after;
  storage::cursor_record record;
};

/// What seeking `core` does at `wall` on a partition of `watermark` and
/// `last_offset` (`walked`: the timestamp walk's answer): the record after
/// `seek` and `touch`, computed without changing `core`. The one rule for a
/// live cursor's staged seek and a seek the partition holds for a group
/// without one.
seek_plan plan_seek(const cursor_core& core, seek_rule rule,
                    const seek_target& t, storage::offset watermark,
                    storage::offset last_offset,
                    std::optional<storage::offset> walked,
                    storage::micros wall);

} // namespace spool::core
