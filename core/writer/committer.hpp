#pragma once

/// Who runs the writer actor's commits: one group at a time, inline or on a
/// thread of its own. The committer's thread is the node's one LMDB writer:
/// replication's own writes (a follower's applies, a leader's epoch start)
/// run there too, as jobs in the same order (`run`). No CAF.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "storage/group_commit.hpp"
#include "storage/lmdb.hpp"
#include "storage/slot_log.hpp"
#include "vocab/errors.hpp"

namespace spool::actors {

/// How one group's commit ended.
struct commit_report {
  /// One per batch: the error of a batch that was not stored (none: it
  /// was).
  std::vector<std::optional<api_error>> failures;
  /// One per batch: its number in each slot it touched (none for a failed
  /// batch, or when the whole commit failed).
  std::vector<std::vector<storage::slot_seq>> numbers;
  /// One per entry of `marks()`: the epoch its slot's entries were stamped
  /// with (empty on one node: a commit hook fills it).
  std::vector<std::uint64_t> epochs;
  /// The highest seq of each slot the group numbered, by slot.
  std::vector<storage::slot_seq> marks() const;
};

/// What replication asks of every commit, on the committer's thread
/// (core/replica/replica_host.hpp).
class commit_hook {
public:
  virtual ~commit_hook() = default;
  /// An error refuses batch `b` before LMDB sees it (a slot this node does
  /// not lead, a batch over several slots).
  virtual std::optional<api_error> admit(const storage::write_batch& b) = 0;
  /// A group committed and synced with `marks` (`commit_report::marks`):
  /// the epoch each mark's entry carries, in the same order.
  virtual std::vector<std::uint64_t>
  committed(const std::vector<storage::slot_seq>& marks) = 0;
};

/// Commits `batches` as one group in the caller's thread: what a committer
/// runs, and the writer's stop.
commit_report
commit_now(storage::env& env,
           const std::vector<const storage::write_batch*>& batches,
           commit_hook* hook);

/// Commits one group at a time for the writer.
class committer {
public:
  virtual ~committer() = default;
  /// Starts committing `batches` (alive until `done` runs) as one LMDB
  /// transaction; `done` runs once, on any thread, with its report.
  virtual void start(std::vector<const storage::write_batch*> batches,
                     std::function<void(commit_report)> done)
      = 0;
  /// Runs `job` where the commits run, after every commit and job started
  /// before it (inline: at once).
  virtual void run(std::function<void()> job) = 0;
  /// Blocks until no commit runs or waits (the writer's stop); jobs of
  /// `run` do not count.
  virtual void wait_idle() = 0;
  /// The hook every later commit goes through (none: one node). Set it
  /// on the committer's thread (`run`), or before its first commit.
  virtual void set_hook(std::shared_ptr<commit_hook> hook) = 0;
  /// The hook (none: one node).
  virtual commit_hook* hook() const noexcept = 0;
};

/// Commits in the caller, at once (tests; `done` runs inside `start`).
std::shared_ptr<committer> inline_committer(storage::env& env);
/// Commits on a thread of its own (production: it blocks in fsync).
std::shared_ptr<committer> thread_committer(storage::env& env);

} // namespace spool::actors
