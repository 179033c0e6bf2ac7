#pragma once

/// The partition actor: owns its log (seal, dedup, offsets, created_at) and
/// spawns one cursor child per consumer group on first contact, forwarding
/// pops, acks and extends to it with a view of the partition.

#include <caf/fwd.hpp>

#include <functional>

#include "actors/interfaces.hpp"
#include "actors/node_context.hpp"
#include "core/partition/visibility.hpp"
#include "storage/store.hpp"

namespace spool::actors {

struct partition_config {
  node_context node;
  storage::partition_record record;
  storage::queue_options options;
  /// Told of every dead letter its cursors write (none: nobody). A weak
  /// reference: the watcher (its queue) owns this partition.
  caf::actor_addr watcher;
  expected<void> validate() const;
};

expected<partition_actor> spawn_partition(caf::actor_system& sys,
                                          partition_config cfg);

} // namespace spool::actors
