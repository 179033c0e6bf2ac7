#pragma once

/// Who runs the writer actor's commits: one group at a time, inline or on a
/// thread of its own. No CAF.

#include <functional>
#include <memory>
#include <vector>

#include "storage/group_commit.hpp"
#include "storage/lmdb.hpp"

namespace spool::actors {

/// Commits one group at a time for the writer.
class committer {
public:
  using results = std::vector<storage::expected<void>>;
  virtual ~committer() = default;
  /// Starts committing `batches` (alive until `done` runs) as one LMDB
  /// transaction; `done` runs once, on any thread, with one result each.
  virtual void start(std::vector<const storage::write_batch*> batches,
                     std::function<void(results)> done)
      = 0;
  /// Blocks until no commit runs (the writer's stop).
  virtual void wait_idle() = 0;
};

/// Commits in the caller, at once (tests; `done` runs inside `start`).
std::shared_ptr<committer> inline_committer(storage::env& env);
/// Commits on a thread of its own (production: it blocks in fsync).
std::shared_ptr<committer> thread_committer(storage::env& env);

} // namespace spool::actors
