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
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "storage/error.hpp"

namespace spool::storage {

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
};

struct env_options {
  std::filesystem::path dir;
  durability mode = durability::strict;
  std::size_t initial_map_bytes = std::size_t{1} << 30;
  /// Growth stops here (then writes fail with ec::storage_full).
  std::size_t max_map_bytes = std::size_t{1} << 40;
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
  explicit cursor(MDB_cursor* c) : cur_(c) {
  }
  expected<bool> move(MDB_cursor_op op, std::string_view key = {});

  MDB_cursor* cur_ = nullptr;
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

  MDB_txn* txn_ = nullptr;
  const dbis* dbis_ = nullptr;
  std::shared_lock<std::shared_mutex> lock_;
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
};

} // namespace spool::storage
