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
#include "vocab/slot.hpp"

namespace spool::storage {

struct store_options {
  env_options env;
  commit_options commit;
  /// The number of slots (1..65536) of a store created by `open`; a store
  /// that exists keeps the number it was created with.
  std::uint32_t slot_count = default_slot_count;
};

/// The store format this code reads and writes: 2 since slots (queue and
/// partition ids carry their slot, id counters are per slot), 3 since a
/// partition uuid carries its queue's id. A store of an earlier format is
/// refused on open (`ec::invalid_argument`), not migrated: a partition's
/// uuid is on the wire (`partitionId`, and every message id is derived
/// from it), so it cannot be rewritten under clients that hold it.
inline constexpr std::uint32_t store_format_version = 3;

/// What the store holds after recovery.
struct catalog {
  std::vector<queue_record> queues;
  std::vector<partition_record> partitions; ///< of the queues above
  /// Deleted queues whose rows are still to be swept (`mut::sweep_queue`).
  std::vector<queue_id> doomed;
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
  /// The catalog's part in slot `s` (its queues, their partitions, its
  /// deletions not finished).
  expected<catalog> load_catalog(slot_t s);
  /// Before a node starts serving slot `s` that another node led (cluster
  /// mode): its id counters as stored (a follower applied the leader's
  /// creations, not its own), and DLQ ids above every stored one.
  expected<void> reload_slot(slot_t s);

  /// The number of slots, fixed when the store was created.
  std::uint32_t slot_count() const noexcept {
    return slot_count_;
  }
  /// The slot of queue `name` in this store.
  slot_t slot_of(std::string_view name) const noexcept {
    return spool::slot_of(name, slot_count_);
  }

  /// Fresh ids, minted per slot; they travel in the create mutations. A
  /// queue's id is of its name's slot, a partition's of its queue's.
  queue_id next_queue_id(std::string_view name) noexcept;
  partition_id next_partition_id(queue_id queue) noexcept;
  /// A fresh DLQ id: unique on this node, above every id given before and
  /// at least `now` (wall-clock microseconds), so ids order dead letters by
  /// their first failure across queues (docs/consumption.md). No counter is
  /// stored: a dead letter's write touches only its queue's keys, and after
  /// a reopen ids continue above every stored one (`open` reads them) and
  /// above the clock.
  std::uint64_t next_dlq_id(micros now) noexcept;

  /// A random RFC 4122 version 4 UUID in text form.
  std::string make_uuid();
  /// Partition `p`'s uuid, of queue `q`: the queue's id in its first twelve
  /// hex digits (`queue_of_id`, so its slot in the first four), then the
  /// partition's per-slot number, then random bits, in a version 4 UUID's
  /// shape. So a queue's uuids sort in the order its partitions were made
  /// (the order a transaction and a seek stage its cursors in).
  std::string make_partition_uuid(queue_id q, partition_id p);

  /// Stops the writer after committing what is queued, syncs (relaxed
  /// mode), then closes. Reports a failed final sync.
  expected<void> close();

private:
  store() = default;
  /// The smallest DLQ id above every stored one.
  expected<std::uint64_t> first_free_dlq_id();
  /// Reads the store's format, writing it to a store created empty;
  /// refuses one of another format.
  expected<void> check_format(std::uint32_t wanted_slots);
  /// Loads every slot's id counters.
  expected<void> load_counters();

  std::unique_ptr<env> env_;
  std::unique_ptr<group_commit> writer_;
  commit_options commit_opts_;
  std::once_flag writer_once_;
  catalog recovered_;
  std::uint32_t slot_count_ = default_slot_count;
  /// Per slot: the next queue and partition number.
  std::unique_ptr<std::atomic<std::uint32_t>[]> next_queue_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> next_partition_;
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
  expected<catalog> load_catalog(slot_t s) const {
    return s_->load_catalog(s);
  }
  expected<void> reload_slot(slot_t s) const {
    return s_->reload_slot(s);
  }
  std::uint32_t slot_count() const noexcept {
    return s_->slot_count();
  }
  slot_t slot_of(std::string_view name) const noexcept {
    return s_->slot_of(name);
  }
  queue_id next_queue_id(std::string_view name) const noexcept {
    return s_->next_queue_id(name);
  }
  partition_id next_partition_id(queue_id queue) const noexcept {
    return s_->next_partition_id(queue);
  }
  std::uint64_t next_dlq_id(micros now) const noexcept {
    return s_->next_dlq_id(now);
  }
  std::string make_uuid() const {
    return s_->make_uuid();
  }
  std::string make_partition_uuid(queue_id q, partition_id p) const {
    return s_->make_partition_uuid(q, p);
  }
  expected<env_usage> usage() const {
    return s_->db().usage();
  }

private:
  store* s_ = nullptr;
};

} // namespace spool::storage
