#pragma once

/// The queue coordinator: one per queue. Owns the queue's partitions by name
/// (created on first push), makes a push spanning partitions one durable
/// batch, serves pops on a named partition or any (wildcard, rotating so no
/// partition starves), parks long-poll pops and wakes them when a push
/// lands or their timeout passes, and routes acks by partition uuid.

#include <caf/fwd.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "actors/interfaces.hpp"
#include "actors/node_context.hpp"
#include "storage/store.hpp"

namespace spool::actors {

struct queue_config {
  node_context node;
  storage::queue_record record;
  /// The queue's partitions as recovered (each spawned at its first
  /// contact).
  std::vector<storage::partition_record> partitions;
  /// Parked long-poll pops across the server (shared by every queue), and
  /// the count beyond which a pop is refused instead of parked.
  std::shared_ptr<std::atomic<std::size_t>> parked_total
      = std::make_shared<std::atomic<std::size_t>>(0);
  std::size_t max_parked = 10'000;
  /// DLQ retention: entries deleted per sweep step, and the least time
  /// (µs) between sweeps that are not catching up.
  std::size_t dlq_sweep_step = 1'000;
  storage::micros dlq_sweep_gap = 60'000'000;
  /// A DLQ sweep whose read or delete failed runs again this much later.
  std::chrono::milliseconds write_retry{1000};
  /// Told of every partition this queue creates and every push it stores
  /// in a namespace queue (a `queue_watcher`, the broker; none: nobody).
  caf::actor_addr watcher;

  expected<void> validate() const;
};

expected<queue_actor> spawn_queue(caf::actor_system& sys, queue_config cfg);

/// The partition a push or configure uses when it names none.
inline constexpr const char* default_partition = "Default";

/// A new partition's record: fresh internal id and uuid, created now.
storage::partition_record new_partition_record(const node_context& node,
                                               storage::queue_id queue,
                                               std::string name);

} // namespace spool::actors
