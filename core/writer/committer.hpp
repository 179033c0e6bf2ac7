#pragma once

/// Who runs the writer actor's commits: one group at a time, inline or on a
/// thread of its own. No CAF.

#include <functional>
#include <memory>
#include <vector>

#include "storage/group_commit.hpp"
#include "storage/lmdb.hpp"
#include "storage/slot_log.hpp"

namespace spool::actors {

/// How one group's commit ended.
struct commit_report {
  /// One per batch: a failed one was not stored.
  std::vector<storage::expected<void>> results;
  /// One per batch: its number in each slot it touched (none for a failed
  /// batch, or when the whole commit failed).
  std::vector<std::vector<storage::slot_seq>> numbers;
  /// The highest seq of each slot the group numbered.
  std::vector<storage::slot_seq> marks() const;
};

/// Commits one group at a time for the writer.
class committer {
public:
  virtual ~committer() = default;
  /// Starts committing `batches` (alive until `done` runs) as one LMDB
  /// transaction; `done` runs once, on any thread, with its report.
  virtual void start(std::vector<const storage::write_batch*> batches,
                     std::function<void(commit_report)> done)
      = 0;
  /// Blocks until no commit runs (the writer's stop).
  virtual void wait_idle() = 0;
};

/// Commits in the caller, at once (tests; `done` runs inside `start`).
std::shared_ptr<committer> inline_committer(storage::env& env);
/// Commits on a thread of its own (production: it blocks in fsync).
std::shared_ptr<committer> thread_committer(storage::env& env);

} // namespace spool::actors
