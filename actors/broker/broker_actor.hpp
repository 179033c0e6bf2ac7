#pragma once

/// The broker: one per node. Recovers every queue at start (spawning its
/// coordinator with its partitions), creates queues on their first push, and
/// commits a push that spans queues as one batch (each queue prepares its
/// part; the broker writes them together and settles each).

#include <caf/fwd.hpp>

#include <functional>

#include "actors/interfaces.hpp"
#include "storage/store.hpp"

namespace spool::actors {

struct broker_config {
  storage::store* store = nullptr;
  writer_actor writer;
  storage::segment_limits segments;
  storage::frame_limits frames;
  storage::compression codec = storage::compression::zstd_when_smaller;
  std::function<storage::micros()> wall;
  std::size_t max_parked = 10'000;

  storage::expected<void> validate() const;
};

/// Validates `cfg`, loads the catalog and spawns the broker with a
/// coordinator per recovered queue.
storage::expected<broker_actor> spawn_broker(caf::actor_system& sys,
                                             broker_config cfg);

/// The namespace and task Queen derives from a queue name: the text before
/// the first '.', and between the first and the second '.'.
std::pair<std::string, std::string> namespace_and_task(const std::string& q);

} // namespace spool::actors
