#pragma once

/// The node's store: the LMDB environment, the group-commit writer and what
/// recovery found on open (queues, partitions, id counters).

#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "storage/error.hpp"
#include "storage/group_commit.hpp"
#include "storage/lmdb.hpp"
#include "storage/records.hpp"

namespace spool::storage {

struct store_options {
  env_options env;
  commit_options commit;
};

/// What the store holds after recovery.
struct catalog {
  std::vector<queue_record> queues;
  std::vector<partition_record> partitions; ///< of the queues above
  /// Deleted queues whose rows are still to be swept (`mut::sweep_queue`).
  std::vector<queue_id> doomed;
  id_counters counters;
};

class store {
public:
  /// Opens (creating if needed) the store in `opts.env.dir` and recovers the
  /// catalog. Fails with a precise error, never half-open.
  static expected<std::unique_ptr<store>> open(store_options opts);
  ~store();

  env& db() noexcept {
    return *env_;
  }
  /// The group-commit writer thread, started on first use (a process that
  /// writes through the writer actor instead never starts it; never use
  /// both at once).
  group_commit& writer();
  /// The catalog as recovered on open (not updated afterwards).
  const catalog& recovered() const noexcept {
    return recovered_;
  }
  /// Re-reads the catalog from storage.
  expected<catalog> load_catalog();

  /// Fresh ids; they travel in the create mutations.
  queue_id next_queue_id() noexcept;
  partition_id next_partition_id() noexcept;
  /// A fresh DLQ id: unique on this node, above every id given before and
  /// at least `now` (wall-clock microseconds), so ids order dead letters by
  /// their first failure across queues (docs/consumption.md). No counter is
  /// stored: a dead letter's write touches only its queue's keys, and after
  /// a reopen ids continue above every stored one (`open` reads them) and
  /// above the clock.
  std::uint64_t next_dlq_id(micros now) noexcept;

  /// A random RFC 4122 version 4 UUID in text form.
  std::string make_uuid();

  /// Stops the writer after committing what is queued, syncs (relaxed
  /// mode), then closes. Reports a failed final sync.
  expected<void> close();

private:
  store() = default;
  /// The smallest DLQ id above every stored one (and the legacy counter).
  expected<std::uint64_t> first_free_dlq_id();

  std::unique_ptr<env> env_;
  std::unique_ptr<group_commit> writer_;
  commit_options commit_opts_;
  std::once_flag writer_once_;
  catalog recovered_;
  std::atomic<std::uint64_t> next_queue_{1};
  std::atomic<std::uint64_t> next_partition_{1};
  std::atomic<std::uint64_t> next_dlq_{1};
  std::mutex rng_mtx_;
  std::mt19937_64 rng_;
};

/// What the actors may do with the store: read (short read transactions,
/// the catalog) and draw fresh ids. No write path: every write goes
/// through the writer actor, which alone holds the environment for
/// writing. Cheap to copy; converts from the `store*` it views.
class store_view {
public:
  store_view() = default;
  store_view(store* s) noexcept : s_(s) { // NOLINT: a view of it
  }

  explicit operator bool() const noexcept {
    return s_ != nullptr;
  }

  expected<txn> read() const {
    return s_->db().read();
  }
  expected<catalog> load_catalog() const {
    return s_->load_catalog();
  }
  queue_id next_queue_id() const noexcept {
    return s_->next_queue_id();
  }
  partition_id next_partition_id() const noexcept {
    return s_->next_partition_id();
  }
  std::uint64_t next_dlq_id(micros now) const noexcept {
    return s_->next_dlq_id(now);
  }
  std::string make_uuid() const {
    return s_->make_uuid();
  }
  expected<env_usage> usage() const {
    return s_->db().usage();
  }

private:
  store* s_ = nullptr;
};

} // namespace spool::storage
