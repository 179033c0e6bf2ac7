#pragma once

/// What every broker-core actor takes from its node: the store, the writer,
/// segment and frame limits, the codec and the wall clock. One struct, passed
/// down from the broker to queues and partitions.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

#include "actors/interfaces.hpp"
#include "actors/metrics.hpp"
#include "cipher/keyring.hpp"
#include "core/writer/durable_marks.hpp"
#include "storage/store.hpp"

namespace spool::actors {

struct node_context {
  /// Reads and fresh ids only: writes go through `writer`.
  storage::store_view store;
  writer_actor writer;
  /// In a cluster, the epoch of the slot's leadership a queue (and its
  /// partitions and cursors) was loaded in: every batch it writes carries
  /// it, and the replica host refuses it under a later epoch
  /// (docs/cluster.md, "Serving"). `no_term` on one node and in the
  /// broker's own context (its writes name their slot's term).
  std::uint64_t term = 0;
  /// How far each slot is durable (the writer's `marks`): an answer that
  /// writes nothing checks what it read against it (`durable.hpp`). None:
  /// such answers ask the writer.
  std::shared_ptr<const durable_marks> durable;
  storage::segment_limits segments;
  storage::frame_limits frames;
  storage::compression codec = storage::compression::zstd_when_smaller;
  /// The keys of encryption at rest (docs/security.md): a queue with
  /// `encryptionEnabled` has its payloads encrypted as its partitions seal
  /// them. None: no key is configured, and no queue may enable it.
  std::shared_ptr<const cipher::keyring> encryption_keys;
  /// Wall clock in µs (created_at stamps, visibility, DLQ times).
  std::function<storage::micros()> wall;
  /// Counters (none: not counted).
  std::shared_ptr<node_metrics> metrics;
  /// Where a group starts when its first pop names no mode
  /// (`defaultSubscriptionMode`, semantics.md §5).
  storage::subscription_mode default_subscription
      = storage::subscription_mode::all;
  /// Retention runs on each partition at least this often
  /// (`retention.intervalSeconds`, semantics.md §7).
  std::chrono::seconds retention_interval{10};
  /// Passivation (docs/architecture.md): a partition actor untouched this
  /// long is asked to stop (zero: never), and past this many live
  /// partition actors on the node the least recently used idle ones are
  /// asked first (zero: no cap).
  std::chrono::milliseconds partition_idle{60'000};
  std::size_t max_partition_actors = 100'000;
  /// Segments one deletion step (retention, purge, maxSize trim) removes in
  /// one write at most; frames one maxWaitTimeSeconds step dead-letters.
  std::size_t delete_step = 1024;
  /// Keys one step of removing a deleted queue's rows deletes in one write
  /// at most (`mut::sweep_queue`).
  std::size_t sweep_step = 10'000;
  /// The most one lease extend adds (`lease.maxExtendSeconds`).
  std::chrono::milliseconds max_extend{3'600'000};

  /// Errors name `who` ("broker: no store").
  expected<void> validate(const char* who) const;
};

} // namespace spool::actors
