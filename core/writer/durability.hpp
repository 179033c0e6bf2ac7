#pragma once

/// When a committed group of write batches counts as durable: the writer
/// answers its batches (and so every push, ack and seek waiting on them)
/// only once its durability policy says so. On one node the local LMDB
/// commit, synced as the environment's durability mode says (strict: every
/// commit; relaxed: on the sync interval), is durable. In a cluster a
/// slot's writes are durable once a majority of its replicas synced them in
/// the epoch they were stamped with (core/replica/replica_host.hpp). No
/// CAF.

#include <functional>
#include <memory>
#include <vector>

#include "core/writer/committer.hpp"

namespace spool::actors {

/// The highest seq a committed group numbered in one slot, and the epoch
/// its entries carry (0 on one node).
struct durable_mark {
  storage::slot_seq at;
  std::uint64_t epoch = 0;
  friend bool operator==(const durable_mark&, const durable_mark&) = default;
};

/// A slot whose writes in a group did not become durable, and why (its
/// leader was deposed, no quorum within the deadline, the node stopped):
/// their outcome is unknown, as they may still commit.
struct lost_slot {
  storage::slot_t slot = 0;
  api_error why;
};

/// A group's outcome: the slots lost (empty: every mark is durable).
using durable_fn = std::function<void(std::vector<lost_slot>)>;

class durability_policy {
public:
  virtual ~durability_policy() = default;
  /// A group's local commit ended with `marks` (empty when it stored
  /// nothing). Calls `done` exactly once, on any thread, once each mark is
  /// durable or lost. The writer goes on committing meanwhile, and answers
  /// groups in the order they were committed; at its stop it answers a
  /// group still waiting with `unavailable` (outcome unknown).
  virtual void committed(std::vector<durable_mark> marks, durable_fn done) = 0;
  /// Its name, for logs ("local").
  virtual const char* name() const noexcept = 0;
};

/// The marks of `report`, each with its epoch.
std::vector<durable_mark> marks_of(const commit_report& report);

/// The local commit is durable: `done` runs at once.
std::shared_ptr<durability_policy> local_durability();

} // namespace spool::actors
