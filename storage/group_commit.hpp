#pragma once

/// Group commit: one writer applies the write batches of many callers in one
/// LMDB write transaction, syncs once (LMDB's commit, durability::strict), then
/// reports each batch durable. Each batch is all or nothing: a failing batch
/// is reported failed and leaves no trace, the others of its group commit.
///
/// `commit_group` is the pure core (also usable from an actor); `group_commit`
/// runs it on a thread of its own that drains a queue of submissions.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "storage/mutation.hpp"

namespace spool::storage {

struct slot_seq;

/// Applies `batches` in one write transaction and commits it. Fast path: all
/// batches in the parent transaction; if one fails, the group is redone with
/// each batch in a nested transaction so only the failing ones are dropped.
/// Grows the map and retries when it is full. Each batch that commits is
/// numbered in the slot log of every slot it touches, in the same
/// transaction (`storage/slot_log.hpp`); `numbers`, when given, gets each
/// batch's numbers (none for a failed one).
std::vector<expected<void>>
commit_group(env& e, std::span<const write_batch* const> batches,
             std::vector<std::vector<slot_seq>>* numbers = nullptr);

struct commit_options {
  /// A group stops taking batches at this many bytes (LMDB caps the dirty
  /// pages of one transaction).
  std::size_t max_group_bytes = std::size_t{64} << 20;
  std::size_t max_group_batches = 8192;
};

struct commit_stats {
  std::uint64_t commits = 0;
  std::uint64_t batches = 0;
  std::uint64_t failed_batches = 0;
};

class group_commit {
public:
  /// Called on the writer thread once the batch is durable (or failed).
  using callback = std::function<void(expected<void>)>;

  group_commit(env& e, commit_options opts = {});
  ~group_commit();
  group_commit(const group_commit&) = delete;
  group_commit& operator=(const group_commit&) = delete;

  /// Queues a batch; `done` runs after its commit.
  void submit(write_batch batch, callback done);
  /// Queues a batch; the future is ready once it is durable.
  std::future<expected<void>> submit(write_batch batch);
  /// Commits what is queued, then stops taking batches and joins the thread.
  void stop();

  commit_stats stats() const;

private:
  struct item {
    write_batch batch;
    callback done;
  };

  void run();

  env& env_;
  commit_options opts_;
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<item> queue_;
  bool stopping_ = false;
  commit_stats stats_;
  std::thread thread_;
};

} // namespace spool::storage
