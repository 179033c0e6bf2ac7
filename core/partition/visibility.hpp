#pragma once

/// Which leading frames of a partition a pop may see now (semantics.md §3):
/// `delayedProcessing` hides a frame until `created_at + delay` and, frames
/// being in order, everything after it; `windowBuffer` hides the partition
/// until its newest frame is at least that old, or its oldest undelivered
/// frame is at least `windowBufferMax` old. Pure: wall time is an argument.

#include <cstddef>
#include <optional>
#include <span>

#include "storage/records.hpp"
#include "vocab/delivery.hpp"

namespace spool::core {

struct visibility_policy {
  storage::micros delayed_processing = 0; ///< µs, 0 = off
  storage::micros window_buffer = 0;      ///< µs, 0 = off
  storage::micros window_buffer_max = 0;  ///< µs; 0 = 10 × window_buffer

  static visibility_policy from(const storage::queue_options& opts);
};

struct visible_frames {
  std::size_t count = 0; ///< how many leading frames are visible
  /// Why not all are, when count < the frames offered.
  std::optional<empty_reason> held_back;
  /// When the next one may become visible (wall µs).
  std::optional<storage::micros> next_change;
};

/// `created_at` of the candidate frames in offset order (oldest undelivered
/// first); `newest` the partition's newest stamp.
visible_frames visible_prefix(std::span<const storage::micros> created_at,
                              storage::micros newest, storage::micros now,
                              const visibility_policy& policy);

} // namespace spool::core
