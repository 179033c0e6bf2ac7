#pragma once

/// `maxSize` (semantics.md §2): whether a push fits the frames a queue
/// retains, how many frames its partitions must free first (they delete the
/// oldest segments every interested group has committed past), and what the
/// push gets after they tried. Pure: the queue actor asks the partitions.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "vocab/errors.hpp"

namespace spool::core {

/// Before anything is freed.
struct room_check {
  enum class outcome : std::uint8_t { fits, trim, full };
  outcome result = outcome::fits;
  std::int64_t need = 0; ///< with `trim`: frames to free
};

/// A push of `incoming` frames into a queue of `max_size` (> 0) retaining
/// `retained`: fits, needs `need` frames freed, or can never fit (more
/// frames than `maxSize` alone).
room_check check_room(std::int64_t max_size, std::int64_t retained,
                      std::int64_t incoming);

/// One partition's part of making room: the frames it freed, or the error
/// that stopped it (a trim step that failed; the steps before it stay).
struct trim_share {
  std::int64_t freed = 0;
  std::optional<api_error> failure;
};

/// After the partitions tried: fits (none), "Queue <name> is full"
/// (`queue_full`: nothing failed, there is no more room), or the first
/// failure, as "Queue <name>: making room failed: …" with its code (the
/// room might have been made: a retry may fit).
std::optional<api_error> after_trims(const std::string& queue,
                                     std::int64_t max_size,
                                     std::int64_t retained,
                                     std::int64_t incoming,
                                     std::span<const trim_share> shares);

/// "Queue <name> is full" (429).
api_error queue_full(const std::string& queue);

} // namespace spool::core
