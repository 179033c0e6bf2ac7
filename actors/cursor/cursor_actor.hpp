#pragma once

/// The cursor actor: one consumer group on one partition, a child of the
/// partition actor. A thin shell over `core::cursor_core`: it reads frames in
/// short read transactions of its own, persists the cursor record (and dead
/// letters) through the writer before answering, and keeps one timer for its
/// next deadline.

#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <string>

#include "actors/interfaces.hpp"
#include "actors/metrics.hpp"
#include "cipher/keyring.hpp"
#include "core/partition/visibility.hpp"
#include "storage/store.hpp"

namespace spool::actors {

struct cursor_config {
  storage::store_view store; ///< reads and fresh ids only
  writer_actor writer;
  /// The epoch its partition's queue was loaded in (`node_context::term`).
  std::uint64_t term = 0;
  storage::queue_id queue;
  storage::partition_id partition;
  std::string group;
  core::cursor_policy policy;
  core::visibility_policy visibility;
  /// Wall clock in µs (created_at comparisons, DLQ failure times).
  std::function<storage::micros()> wall;
  /// Where a cursor the group never had starts: committed = this.
  storage::offset initial_committed{-1};
  /// The partition's watermark when the cursor is spawned (retention).
  storage::offset watermark{0};
  /// Most frames one maxWaitTimeSeconds step dead-letters in one write.
  std::size_t overdue_step = 1024;
  /// After a failed write, changes the timer makes (lease expiry, a lease
  /// lost to a restart) are retried this much later.
  std::chrono::milliseconds write_retry{1000};
  /// Told of every dead letter written (none: nobody); a weak reference to
  /// a `dlq_watcher` (the queue, which owns the cursor's partition).
  caf::actor_addr watcher;
  /// Counts dropped dead letters, skipped and overdue frames (none: not
  /// counted).
  std::shared_ptr<node_metrics> metrics;
  /// The node's keys of encryption at rest: a pop delivers an encrypted
  /// frame only when its key is here (none: no key configured).
  std::shared_ptr<const cipher::keyring> encryption_keys;
};

/// A seek its partition staged for a group whose cursor was not live (no
/// cursor spawned just to be moved): the record is in the queue's batch.
/// A cursor spawned before it settles starts with it staged, exactly as if
/// it had staged it itself, and gets its settle through the partition.
struct held_seek {
  storage::offset to{-1};
  storage::micros wall = 0;
};

/// Spawns the cursor as a child of `parent` (its partition, which checked
/// what `cfg` holds: the node's store, writer and clock, a group named by
/// a checked request), from the
/// group's `stored` cursor record (a lease recorded there was lost to a
/// restart and ends as an expiry), or at `cfg.initial_committed` when no
/// record is stored; with `held`, that seek staged.
expected<cursor_actor>
spawn_cursor(caf::local_actor* parent, cursor_config cfg,
             std::optional<storage::cursor_record> stored,
             std::optional<held_seek> held = std::nullopt);

} // namespace spool::actors
