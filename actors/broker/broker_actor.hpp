#pragma once

/// The broker: one per node. Recovers every queue at start (spawning its
/// coordinator with its partitions), creates queues on their first push, and
/// commits a push that spans queues as one batch (each queue prepares its
/// part; the broker writes them together and settles each).

#include <caf/fwd.hpp>

#include <functional>

#include "actors/interfaces.hpp"
#include "actors/node_context.hpp"
#include "config/options.hpp"
#include "core/replica/slot_directory.hpp"
#include "storage/store.hpp"

namespace spool::actors {

struct broker_config {
  node_context node;
  /// Caps on pops; the parked-pop cap counts across every queue.
  config::pop_limits pop;
  /// Caps on one push or transaction (items, payload bytes).
  config::push_limits push;
  /// How long the answers of client-given transaction ids are kept.
  core::txn_retention txn_retention;
  /// Cluster mode: who serves each slot. The broker then starts with no
  /// queue and runs a slot's queues only while this node serves it
  /// (`slot_atom`); everything else of the slot is refused with the
  /// directory's answer. None: one node, every slot served.
  std::shared_ptr<const core::slot_directory> slots;

  expected<void> validate() const;
};

/// Validates `cfg`, loads the catalog and spawns the broker with a
/// coordinator per recovered queue.
expected<broker_actor> spawn_broker(caf::actor_system& sys, broker_config cfg);

/// Checks a pop against the server's caps (`core::check_pop`) and lowers
/// its byte budget to `pop.maxBytes`.
expected<void> check_pop(const config::pop_limits& limits,
                         queue_pop_request& req);

} // namespace spool::actors
