#pragma once

/// RAII wrapper around one LMDB environment with Spool's named databases.
///
/// Threading: any thread may hold short read transactions (MDB_NOTLS, so they
/// are not tied to a thread); exactly one thread writes (the group commit
/// writer). The map grows on demand: the writer aborts, takes the resize lock
/// exclusively (readers hold it shared for their lifetime), grows, retries.
/// Never wait for a write while holding a read transaction.

#include <lmdb.h>

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "storage/error.hpp"

namespace spool::storage {

/// How much of each slot's log is kept: its last `entries` entries, and
/// no more than `bytes` of them (but always the newest entry).
struct log_window {
  std::uint64_t entries = 100'000;
  std::uint64_t bytes = std::uint64_t{64} << 20;
};

/// Whether a commit is durable against power loss (docs/reliability.md).
enum class durability : std::uint8_t {
  /// Data and meta page synced per commit (default): every answered write
  /// survives an OS crash or power loss.
  strict,
  /// `MDB_NOMETASYNC`: data pages synced per commit, the meta page with the
  /// next commit. Survives a process crash or kill -9 whole; an OS crash
  /// may undo the last committed transaction(s), never corrupts the store.
  relaxed,
};

/// The named databases (DESIGN.md, "Storage layout").
struct dbis {
  MDB_dbi segments = 0;
  MDB_dbi segment_time = 0;
  MDB_dbi partitions = 0;
  MDB_dbi queues = 0;
  MDB_dbi cursors = 0;
  MDB_dbi subscriptions = 0;
  MDB_dbi dedup = 0;
  MDB_dbi dlq = 0;
  MDB_dbi meta = 0;
  MDB_dbi txns = 0;
  MDB_dbi txn_time = 0;
  MDB_dbi traces = 0;
  MDB_dbi trace_names = 0;
  /// Not a slot's data: each slot's numbered log (`storage/slot_log.hpp`).
  MDB_dbi slot_log = 0;
  /// Not a slot's data: the pieces of a snapshot a follower is taking,
  /// until it installs them (`storage/slot_replica.hpp`). Emptied when the
  /// store opens.
  MDB_dbi slot_staging = 0;

  /// The databases a slot's data lives in, in a fixed order: an undo image
  /// names its table by its index here.
  static constexpr std::size_t data_tables = 13;
  MDB_dbi data_table(std::size_t i) const noexcept {
    const MDB_dbi all[data_tables]
        = {segments,      segment_time, partitions, queues, cursors,
           subscriptions, dedup,        dlq,        meta,   txns,
           txn_time,      traces,       trace_names};
    return all[i];
  }
  /// The index of data table `dbi`, or `data_tables` for another one.
  std::size_t index_of(MDB_dbi dbi) const noexcept {
    for (std::size_t i = 0; i < data_tables; ++i)
      if (data_table(i) == dbi)
        return i;
    return data_tables;
  }
};

/// One key's value before a write changed it (`txn::record_undo`): applied
/// back, in reverse order of the writes, the images undo them exactly.
struct undo_image {
  std::uint8_t table = 0; ///< `dbis::data_table` index
  std::string key;
  std::optional<std::string> before; ///< none: the key was absent

  friend bool operator==(const undo_image&, const undo_image&) = default;

  template <class F>
  friend auto fields(F& f, undo_image& x) {
    return f(x.table, x.key, x.before);
  }
};

struct env_options {
  std::filesystem::path dir;
  durability mode = durability::strict;
  std::size_t initial_map_bytes = std::size_t{1} << 30;
  /// Growth stops here (then writes fail with ec::storage_full).
  std::size_t max_map_bytes = std::size_t{1} << 40;
  /// How much of each slot's log is kept (`slot_log::append`).
  log_window slot_log;
};

/// Wraps an LMDB return code into an error with context.
error lmdb_error(int rc, std::string_view context);

class txn;

/// Forward iteration over a key range of one database.
class cursor {
public:
  cursor(const cursor&) = delete;
  cursor& operator=(const cursor&) = delete;
  cursor(cursor&& other) noexcept;
  ~cursor();

  /// Positions at the first key >= `key`; false when none.
  expected<bool> seek(std::string_view key);
  /// Positions at the exact key; false when absent.
  expected<bool> seek_exact(std::string_view key);
  expected<bool> first();
  expected<bool> last();
  expected<bool> next();
  expected<bool> prev();
  std::string_view key() const noexcept {
    return key_;
  }
  std::string_view value() const noexcept {
    return value_;
  }
  /// Deletes the current entry (write transactions only).
  expected<void> del();

private:
  friend class txn;
  cursor(MDB_cursor* c, std::vector<undo_image>* undo, std::uint8_t table) :
      cur_(c), undo_(undo), table_(table) {
  }
  expected<bool> move(MDB_cursor_op op, std::string_view key = {});

  MDB_cursor* cur_ = nullptr;
  std::vector<undo_image>* undo_ = nullptr;
  std::uint8_t table_ = 0;
  std::string_view key_;
  std::string_view value_;
};

/// A transaction; read-only ones hold the resize lock shared, the write one is
/// owned by the writer. Aborts in the destructor unless committed.
class txn {
public:
  txn(const txn&) = delete;
  txn& operator=(const txn&) = delete;
  txn(txn&& other) noexcept;
  ~txn();

  const dbis& db() const noexcept {
    return *dbis_;
  }

  /// The value at `key`, or nullopt. Views stay valid until the txn ends.
  expected<std::optional<std::string_view>> get(MDB_dbi dbi,
                                                std::string_view key);
  expected<void> put(MDB_dbi dbi, std::string_view key, std::string_view value);
  /// Deletes `key`; absence is not an error (returns false).
  expected<bool> del(MDB_dbi dbi, std::string_view key);
  expected<cursor> open_cursor(MDB_dbi dbi);

  /// Calls `f(key, value)` for each key with `prefix`, in order, while it
  /// returns true.
  expected<void>
  scan_prefix(MDB_dbi dbi, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& f);

  /// A nested write transaction (all-or-nothing for one batch).
  expected<txn> begin_child();

  /// From now on, every put and delete in a data table (`dbis::data_table`)
  /// through this transaction or its cursors appends the key's value
  /// before it to `undo` (none: stop). The slot log keeps them to undo a
  /// batch (`truncate`).
  void record_undo(std::vector<undo_image>* undo) noexcept {
    undo_ = undo;
  }

  expected<void> commit();
  void abort() noexcept;

  MDB_txn* raw() const noexcept {
    return txn_;
  }

private:
  friend class env;
  txn(MDB_txn* t, const dbis* d, std::shared_lock<std::shared_mutex> lock) :
      txn_(t), dbis_(d), lock_(std::move(lock)) {
  }

  /// Where a put or delete records the value it replaces (`record_undo`);
  /// false when `dbi` is not a data table.
  bool recording(MDB_dbi dbi, std::uint8_t& table) const noexcept;

  MDB_txn* txn_ = nullptr;
  const dbis* dbis_ = nullptr;
  std::shared_lock<std::shared_mutex> lock_;
  std::vector<undo_image>* undo_ = nullptr;
};

/// How much of the LMDB map is in use (`env::usage`).
struct env_usage {
  std::uint64_t map_bytes = 0;     ///< the map's size now (it grows)
  std::uint64_t used_bytes = 0;    ///< pages up to the last one in use
  std::uint64_t max_map_bytes = 0; ///< the size it may grow to
};

/// One LMDB environment: the node's whole store.
class env {
public:
  static expected<std::unique_ptr<env>> open(const env_options& opts);
  ~env();
  env(const env&) = delete;
  env& operator=(const env&) = delete;

  const dbis& db() const noexcept {
    return dbis_;
  }
  durability mode() const noexcept {
    return opts_.mode;
  }
  const std::filesystem::path& dir() const noexcept {
    return opts_.dir;
  }
  const env_options& options() const noexcept {
    return opts_;
  }
  std::size_t map_bytes() const noexcept {
    return map_bytes_;
  }

  /// The map's use as of the last commit (any thread; waits for a growth
  /// in progress).
  expected<env_usage> usage();
  /// A short read-only transaction. Never hold it across a wait for a write.
  expected<txn> read();
  /// The write transaction (writer thread only).
  expected<txn> write();
  /// A read-only transaction held across calls (a snapshot a leader sends
  /// in pieces, docs/cluster.md "Snapshots"): writer thread only, like
  /// `write`, and at most `max` at once (none past it). Unlike `read`, it
  /// does not hold the resize lock: a growth of the map (on the same thread)
  /// ends every held one first, after which `held` finds it no more.
  expected<std::optional<std::uint64_t>> hold_read(std::size_t max);
  /// The held transaction `id`; none once released or ended by a growth.
  txn* held(std::uint64_t id);
  void release(std::uint64_t id);
  std::size_t held_count() const noexcept {
    return held_.size();
  }
  /// Doubles the map size (writer only, no write txn open). New readers wait
  /// while it waits for the running ones to finish.
  expected<void> grow();
  /// Forces an fsync of everything committed (relaxed mode at shutdown).
  expected<void> sync();
  /// The LMDB environment flags (MDB_NOMETASYNC in relaxed mode, ...).
  unsigned flags() const;
  /// A failed growth left LMDB without a map (it unmaps the old one before
  /// mapping the new size, and cannot map it again): every later
  /// transaction fails (`io_error`) instead of touching an unmapped map.
  /// Fatal for the process (spoold exits and is restarted).
  bool broken() const noexcept {
    return broken_.load();
  }

private:
  env(MDB_env* e, env_options opts) : env_(e), opts_(std::move(opts)) {
  }

  expected<void> check_usable() const;
  /// The map held shared (no growth meanwhile), once it is usable.
  expected<std::shared_lock<std::shared_mutex>> shared_use();

  MDB_env* env_ = nullptr;
  env_options opts_;
  dbis dbis_;
  std::size_t map_bytes_ = 0;
  /// The data directory's exclusive lock (`spool.lock`): one process per
  /// directory.
  int lock_fd_ = -1;
  std::atomic<bool> broken_{false};
  std::mutex gate_;
  std::shared_mutex resize_mtx_;
  /// `hold_read`'s transactions (writer thread only).
  std::map<std::uint64_t, txn> held_;
  std::uint64_t last_hold_ = 0;
};

} // namespace spool::storage
