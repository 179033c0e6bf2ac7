#pragma once

/// When a committed group of write batches counts as durable: the writer
/// answers its batches (and so every push, ack and seek waiting on them)
/// only once its durability policy says so. Today one policy: the local
/// LMDB commit, synced as the environment's durability mode says (strict:
/// every commit; relaxed: on the sync interval), is durable. A cluster's
/// policy (a replication quorum) will hold the answers until enough
/// replicas stored the group. No CAF.

#include <functional>
#include <memory>
#include <vector>

#include "core/writer/committer.hpp"

namespace spool::actors {

class durability_policy {
public:
  virtual ~durability_policy() = default;
  /// A group's local commit ended and numbered `marks` (the highest seq of
  /// each slot it wrote; empty when it stored nothing). Calls `durable`
  /// exactly once, on any thread, once those seqs are durable. Groups are
  /// declared durable in the order they were committed. The writer goes on
  /// committing meanwhile and answers each group only once it is durable;
  /// at its stop it answers a group still waiting with `unavailable`
  /// (outcome unknown).
  virtual void committed(std::vector<storage::slot_seq> marks,
                         std::function<void()> durable)
      = 0;
  /// Its name, for logs ("local").
  virtual const char* name() const noexcept = 0;
};

/// The local commit is durable: `durable` runs at once.
std::shared_ptr<durability_policy> local_durability();

} // namespace spool::actors
