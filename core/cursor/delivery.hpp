#pragma once

/// The parts of a pop between the cursor's plan and its grant (semantics.md
/// §3): how many of the planned frames go out, and autoAck's settlement of
/// what went out. Pure: the cursor actor reads the frames and feeds their
/// stamps and sizes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/cursor/cursor_core.hpp"
#include "core/partition/visibility.hpp"

namespace spool::core {

/// How many leading frames of a plan a pop delivers.
struct delivery_cut {
  std::size_t count = 0;
  /// With `count` 0: why nothing is visible (none: plain `empty`).
  std::optional<empty_reason> held_back;
  /// With `count` 0: when the next frame may become visible (wall µs).
  std::optional<storage::micros> next_change;
};

/// The frames read for a plan, in plan order (a frame deleted meanwhile
/// ends the run before it is offered): the visible prefix
/// (`visible_prefix`: delayedProcessing, windowBuffer) cut where the
/// payload bytes pass `max_bytes`; the first frame always fits.
delivery_cut cut_delivery(std::span<const storage::micros> created_at,
                          std::span<const std::size_t> payload_bytes,
                          storage::micros newest, storage::micros wall,
                          const visibility_policy& visibility,
                          std::size_t max_bytes);

/// autoAck (semantics.md §3): every frame `lease` delivered (`offsets`) is
/// settled `completed` at once; answers the requeued dead letters that
/// settled (their DLQ entries are removed with the same write).
std::vector<std::uint64_t> auto_ack(cursor_core& core, const lease_info& lease,
                                    std::span<const offset> offsets,
                                    offset last_offset, mono_time now);

} // namespace spool::core
