#include "storage/lmdb.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <system_error>

namespace spool::storage {

namespace {

MDB_val to_val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view from_val(const MDB_val& v) {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

} // namespace

error lmdb_error(int rc, std::string_view context) {
  auto code = rc == MDB_MAP_FULL ? ec::storage_full : ec::lmdb_error;
  return make_error(code, context, ": ", mdb_strerror(rc));
}

// -- cursor -------------------------------------------------------------------

cursor::cursor(cursor&& other) noexcept :
    cur_(std::exchange(other.cur_, nullptr)),
    undo_(other.undo_),
    table_(other.table_),
    key_(other.key_),
    value_(other.value_) {
}

cursor::~cursor() {
  if (cur_ != nullptr)
    mdb_cursor_close(cur_);
}

expected<bool> cursor::move(MDB_cursor_op op, std::string_view key) {
  MDB_val k = to_val(key);
  MDB_val v{0, nullptr};
  auto rc = mdb_cursor_get(cur_, &k, &v, op);
  if (rc == MDB_NOTFOUND)
    return false;
  if (rc != 0)
    return lmdb_error(rc, "cursor move");
  key_ = from_val(k);
  value_ = from_val(v);
  return true;
}

expected<bool> cursor::seek(std::string_view key) {
  // LMDB rejects empty keys; every key is >= the empty one.
  if (key.empty())
    return move(MDB_FIRST);
  return move(MDB_SET_RANGE, key);
}

expected<bool> cursor::seek_exact(std::string_view key) {
  return move(MDB_SET_KEY, key);
}

expected<bool> cursor::first() {
  return move(MDB_FIRST);
}

expected<bool> cursor::last() {
  return move(MDB_LAST);
}

expected<bool> cursor::next() {
  return move(MDB_NEXT);
}

expected<bool> cursor::prev() {
  return move(MDB_PREV);
}

expected<void> cursor::del() {
  if (undo_ != nullptr) {
    // The entry as it is now (a write since the last move may have moved
    // the view).
    MDB_val k{0, nullptr};
    MDB_val v{0, nullptr};
    if (auto rc = mdb_cursor_get(cur_, &k, &v, MDB_GET_CURRENT); rc != 0)
      return lmdb_error(rc, "cursor delete");
    undo_->push_back(
        {table_, std::string{from_val(k)}, std::string{from_val(v)}});
  }
  if (auto rc = mdb_cursor_del(cur_, 0); rc != 0)
    return lmdb_error(rc, "cursor delete");
  return {};
}

// -- txn ----------------------------------------------------------------------

txn::txn(txn&& other) noexcept :
    txn_(std::exchange(other.txn_, nullptr)),
    dbis_(other.dbis_),
    lock_(std::move(other.lock_)),
    undo_(other.undo_) {
}

txn::~txn() {
  abort();
}

expected<std::optional<std::string_view>> txn::get(MDB_dbi dbi,
                                                   std::string_view key) {
  MDB_val k = to_val(key);
  MDB_val v{0, nullptr};
  auto rc = mdb_get(txn_, dbi, &k, &v);
  if (rc == MDB_NOTFOUND)
    return std::optional<std::string_view>{};
  if (rc != 0)
    return lmdb_error(rc, "get");
  return std::optional<std::string_view>{from_val(v)};
}

bool txn::recording(MDB_dbi dbi, std::uint8_t& table) const noexcept {
  if (undo_ == nullptr)
    return false;
  auto i = dbis_->index_of(dbi);
  table = static_cast<std::uint8_t>(i);
  return i < dbis::data_tables;
}

expected<void> txn::put(MDB_dbi dbi, std::string_view key,
                        std::string_view value) {
  MDB_val k = to_val(key);
  MDB_val v = to_val(value);
  std::uint8_t table = 0;
  if (recording(dbi, table)) {
    // One lookup for a new key: MDB_NOOVERWRITE stores it, or hands back
    // the value it holds (the before image), then it is overwritten.
    auto rc = mdb_put(txn_, dbi, &k, &v, MDB_NOOVERWRITE);
    if (rc == 0) {
      undo_->push_back({table, std::string{key}, std::nullopt});
      return {};
    }
    if (rc != MDB_KEYEXIST)
      return lmdb_error(rc, "put");
    undo_->push_back({table, std::string{key}, std::string{from_val(v)}});
    v = to_val(value);
  }
  if (auto rc = mdb_put(txn_, dbi, &k, &v, 0); rc != 0)
    return lmdb_error(rc, "put");
  return {};
}

expected<bool> txn::del(MDB_dbi dbi, std::string_view key) {
  MDB_val k = to_val(key);
  std::uint8_t table = 0;
  if (recording(dbi, table)) {
    MDB_val old{0, nullptr};
    auto rc = mdb_get(txn_, dbi, &k, &old);
    if (rc == MDB_NOTFOUND)
      return false;
    if (rc != 0)
      return lmdb_error(rc, "delete");
    undo_->push_back({table, std::string{key}, std::string{from_val(old)}});
  }
  auto rc = mdb_del(txn_, dbi, &k, nullptr);
  if (rc == MDB_NOTFOUND)
    return false;
  if (rc != 0)
    return lmdb_error(rc, "delete");
  return true;
}

expected<cursor> txn::open_cursor(MDB_dbi dbi) {
  MDB_cursor* c = nullptr;
  if (auto rc = mdb_cursor_open(txn_, dbi, &c); rc != 0)
    return lmdb_error(rc, "open cursor");
  std::uint8_t table = 0;
  if (recording(dbi, table))
    return cursor{c, undo_, table};
  return cursor{c, nullptr, 0};
}

expected<void> txn::scan_prefix(
    MDB_dbi dbi, std::string_view prefix,
    const std::function<bool(std::string_view, std::string_view)>& f) {
  auto cur = open_cursor(dbi);
  if (!cur)
    return std::move(cur).err();
  auto found = cur->seek(prefix);
  while (found && *found && cur->key().substr(0, prefix.size()) == prefix) {
    if (!f(cur->key(), cur->value()))
      return {};
    found = cur->next();
  }
  if (!found)
    return std::move(found).err();
  return {};
}

expected<txn> txn::begin_child() {
  MDB_txn* child = nullptr;
  if (auto rc = mdb_txn_begin(mdb_txn_env(txn_), txn_, 0, &child); rc != 0)
    return lmdb_error(rc, "begin nested transaction");
  return txn{child, dbis_, {}};
}

expected<void> txn::commit() {
  auto* t = std::exchange(txn_, nullptr);
  auto rc = mdb_txn_commit(t);
  if (lock_.owns_lock()) // only once the transaction is over
    lock_.unlock();
  if (rc != 0)
    return lmdb_error(rc, "commit");
  return {};
}

void txn::abort() noexcept {
  if (txn_ != nullptr)
    mdb_txn_abort(std::exchange(txn_, nullptr));
  if (lock_.owns_lock())
    lock_.unlock();
}

// -- env ----------------------------------------------------------------------

expected<std::unique_ptr<env>> env::open(const env_options& opts) {
  std::error_code fs_err;
  std::filesystem::create_directories(opts.dir, fs_err);
  if (fs_err)
    return make_error(ec::io_error, "cannot create ", opts.dir.string(), ": ",
                      fs_err.message());
  // One process per data directory: two would overwrite each other's
  // cursor rows and DLQ ids, and one's map growth would fail the other.
  auto lock_path = opts.dir / "spool.lock";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0)
    return make_error(ec::io_error, "cannot open ", lock_path.string(), ": ",
                      std::strerror(errno));
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    auto err = errno;
    ::close(lock_fd);
    if (err == EWOULDBLOCK)
      return make_error(ec::io_error, "data directory ", opts.dir.string(),
                        " is in use by another process (", lock_path.string(),
                        " is locked): one spoold per data directory");
    return make_error(ec::io_error, "cannot lock ", lock_path.string(), ": ",
                      std::strerror(err));
  }
  MDB_env* raw = nullptr;
  if (auto rc = mdb_env_create(&raw); rc != 0) {
    ::close(lock_fd);
    return lmdb_error(rc, "mdb_env_create");
  }
  std::unique_ptr<env> result{new env(raw, opts)};
  result->lock_fd_ = lock_fd;
  // Start with the larger of the configured size and the file already there.
  auto data_file = opts.dir / "data.mdb";
  auto existing = std::filesystem::file_size(data_file, fs_err);
  std::size_t map = opts.initial_map_bytes;
  if (!fs_err)
    map = std::max<std::size_t>(map, existing);
  if (auto rc = mdb_env_set_mapsize(raw, map); rc != 0)
    return lmdb_error(rc, "set map size");
  if (auto rc = mdb_env_set_maxdbs(raw, 24); rc != 0)
    return lmdb_error(rc, "set max dbs");
  if (auto rc = mdb_env_set_maxreaders(raw, 512); rc != 0)
    return lmdb_error(rc, "set max readers");
  unsigned flags = MDB_NOTLS | MDB_NORDAHEAD;
  if (opts.mode == durability::relaxed)
    flags |= MDB_NOMETASYNC; // never MDB_NOSYNC: it can corrupt on an OS crash
  if (auto rc = mdb_env_open(raw, opts.dir.c_str(), flags, 0644); rc != 0)
    return lmdb_error(rc, "open environment " + opts.dir.string());
  // Clear reader slots of processes that died (kill -9) holding them.
  int dead = 0;
  mdb_reader_check(raw, &dead);
  MDB_envinfo info;
  mdb_env_info(raw, &info);
  result->map_bytes_ = info.me_mapsize;
  // Create the named databases.
  MDB_txn* t = nullptr;
  if (auto rc = mdb_txn_begin(raw, nullptr, 0, &t); rc != 0)
    return lmdb_error(rc, "begin setup transaction");
  auto& d = result->dbis_;
  std::pair<const char*, MDB_dbi*> names[] = {
      {"segments", &d.segments},
      {"segment_time", &d.segment_time},
      {"partitions", &d.partitions},
      {"queues", &d.queues},
      {"cursors", &d.cursors},
      {"subscriptions", &d.subscriptions},
      {"dedup", &d.dedup},
      {"dlq", &d.dlq},
      {"meta", &d.meta},
      {"queue_txns", &d.txns},
      {"queue_txn_time", &d.txn_time},
      {"traces", &d.traces},
      {"trace_names", &d.trace_names},
      {"slot_log", &d.slot_log},
      {"slot_staging", &d.slot_staging},
  };
  for (auto& [name, dbi] : names) {
    if (auto rc = mdb_dbi_open(t, name, MDB_CREATE, dbi); rc != 0) {
      mdb_txn_abort(t);
      return lmdb_error(rc, std::string{"open database "} + name);
    }
  }
  // Stores written before a transaction's answer was kept by its home
  // queue held the answers keyed node-wide: they are dropped (a repeat of
  // such a transaction runs again; the pushes in it still dedup).
  for (const char* old_name : {"txns", "txn_time"}) {
    MDB_dbi old = 0;
    auto rc = mdb_dbi_open(t, old_name, 0, &old);
    if (rc == 0)
      rc = mdb_drop(t, old, 1);
    if (rc != 0 && rc != MDB_NOTFOUND) {
      mdb_txn_abort(t);
      return lmdb_error(rc, std::string{"drop database "} + old_name);
    }
  }
  // A snapshot half taken before the restart is dropped: its leader sends
  // a whole one again (docs/cluster.md, "Snapshots").
  if (auto rc = mdb_drop(t, d.slot_staging, 0); rc != 0) {
    mdb_txn_abort(t);
    return lmdb_error(rc, "empty database slot_staging");
  }
  if (auto rc = mdb_txn_commit(t); rc != 0)
    return lmdb_error(rc, "commit setup transaction");
  return result;
}

env::~env() {
  held_.clear(); // their transactions end before the environment closes
  if (env_ != nullptr) {
    if (opts_.mode == durability::relaxed && !broken())
      mdb_env_sync(env_, 1);
    mdb_env_close(env_);
  }
  if (lock_fd_ >= 0)
    ::close(lock_fd_); // releases the directory's lock
}

expected<void> env::check_usable() const {
  if (broken())
    return make_error(ec::io_error, "storage unusable: the LMDB map is gone "
                                    "after a failed growth");
  return {};
}

expected<std::shared_lock<std::shared_mutex>> env::shared_use() {
  // Pass the gate first: while a grow waits for running readers to finish,
  // it holds the gate, so new readers queue behind it (writer preference;
  // glibc's shared_mutex alone prefers readers and could starve the grow).
  std::unique_lock<std::mutex> gate{gate_};
  std::shared_lock<std::shared_mutex> lock{resize_mtx_};
  gate.unlock();
  // Checked under the lock: a growth that failed while this thread waited
  // left no map to read (`broken_` is set under the exclusive lock).
  SPOOL_TRY(check_usable());
  return lock;
}

expected<txn> env::read() {
  auto lock = shared_use();
  if (!lock)
    return std::move(lock).err();
  MDB_txn* t = nullptr;
  if (auto rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t); rc != 0)
    return lmdb_error(rc, "begin read transaction");
  return txn{t, &dbis_, std::move(*lock)};
}

expected<env_usage> env::usage() {
  auto lock = shared_use();
  if (!lock)
    return std::move(lock).err();
  MDB_envinfo info;
  MDB_stat stat;
  if (auto rc = mdb_env_info(env_, &info); rc != 0)
    return lmdb_error(rc, "read the map's use");
  if (auto rc = mdb_env_stat(env_, &stat); rc != 0)
    return lmdb_error(rc, "read the map's use");
  env_usage u;
  u.map_bytes = info.me_mapsize;
  u.used_bytes
      = (static_cast<std::uint64_t>(info.me_last_pgno) + 1) * stat.ms_psize;
  u.max_map_bytes = std::max<std::uint64_t>(opts_.max_map_bytes, u.map_bytes);
  return u;
}

expected<txn> env::write() {
  SPOOL_TRY(check_usable());
  MDB_txn* t = nullptr;
  if (auto rc = mdb_txn_begin(env_, nullptr, 0, &t); rc != 0)
    return lmdb_error(rc, "begin write transaction");
  return txn{t, &dbis_, {}};
}

expected<std::optional<std::uint64_t>> env::hold_read(std::size_t max) {
  using held_id = std::optional<std::uint64_t>;
  SPOOL_TRY(check_usable());
  if (held_.size() >= max)
    return held_id{};
  MDB_txn* t = nullptr;
  if (auto rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t); rc != 0)
    return lmdb_error(rc, "begin held read transaction");
  auto id = ++last_hold_;
  held_.emplace(id, txn{t, &dbis_, {}});
  return held_id{id};
}

txn* env::held(std::uint64_t id) {
  auto it = held_.find(id);
  return it == held_.end() ? nullptr : &it->second;
}

void env::release(std::uint64_t id) {
  held_.erase(id);
}

expected<void> env::grow() {
  if (map_bytes_ >= opts_.max_map_bytes)
    return make_error(ec::storage_full, "map size limit of ",
                      opts_.max_map_bytes, " bytes reached");
  // Held reads run on this thread: waiting for them below would never end,
  // and a growth must not leave them on the old map. They end here; their
  // users open new ones.
  held_.clear();
  std::lock_guard<std::mutex> gate{gate_};
  std::unique_lock<std::shared_mutex> lock{resize_mtx_};
  auto next = std::min(map_bytes_ * 2, opts_.max_map_bytes);
  if (auto rc = mdb_env_set_mapsize(env_, next); rc != 0) {
    // EINVAL comes before LMDB touches the map (a transaction is open).
    // Any other error: LMDB unmapped the old map and the new mmap failed,
    // leaving no map (me_map is NULL, and a second set_mapsize would not
    // map it again): no transaction may run any more.
    if (rc != EINVAL)
      broken_ = true;
    return make_error(
        ec::io_error, "grow map to ", next, " bytes: ", mdb_strerror(rc),
        rc != EINVAL ? " (the store is unusable until restart)" : "");
  }
  map_bytes_ = next;
  return {};
}

unsigned env::flags() const {
  unsigned f = 0;
  mdb_env_get_flags(env_, &f);
  return f;
}

expected<void> env::sync() {
  SPOOL_TRY(check_usable());
  if (auto rc = mdb_env_sync(env_, 1); rc != 0)
    return lmdb_error(rc, "sync");
  return {};
}

} // namespace spool::storage
