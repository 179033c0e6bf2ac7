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

#include "core/writer/committer.hpp"

namespace spool::actors {

class durability_policy {
public:
  virtual ~durability_policy() = default;
  /// The group's local commit ended with `results` (one per batch; a
  /// failed one was not stored). Calls `durable` exactly once, on any
  /// thread, with the results its batches are answered with. The writer's
  /// stop waits for the committer only: a policy that answers later than
  /// it returns must also be waited for there (not needed by the local one).
  virtual void committed(committer::results results,
                         std::function<void(committer::results)> durable)
      = 0;
  /// Its name, for logs ("local").
  virtual const char* name() const noexcept = 0;
};

/// The local commit is durable: `durable` runs at once with the results.
std::shared_ptr<durability_policy> local_durability();

} // namespace spool::actors
