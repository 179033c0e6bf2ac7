#pragma once

// Test fixture for storage: a store in a fresh temporary folder plus helpers
// to create partitions and append synchronously (seal, commit, durable).

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "storage/keys.hpp"
#include "storage/log.hpp"
#include "storage/store.hpp"
#include "storage/tables.hpp"

namespace spool::test {

namespace st = spool::storage;

/// A temporary folder removed at the end of the test.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::string tmpl
        = (std::filesystem::temp_directory_path() / "spool-test-XXXXXX")
              .string();
    path = ::mkdtemp(tmpl.data());
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

/// Writes all of `s` to `fd` (a crash test's child reporting to its
/// parent); exits the process with status 3 if the pipe breaks.
inline void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t left = s.size();
  while (left > 0) {
    auto n = ::write(fd, p, left);
    if (n <= 0)
      ::_exit(3);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

/// Rows stored under queue id `q`, in every table keyed by queue.
inline std::size_t rows_under(st::txn& t, st::queue_id q) {
  std::size_t rows = 0;
  auto& d = t.db();
  for (auto dbi :
       {d.segments, d.segment_time, d.partitions, d.cursors, d.subscriptions,
        d.dedup, d.dlq, d.queues, d.txns, d.txn_time, d.traces, d.trace_names})
    REQUIRE(t.scan_prefix(dbi, st::keys::queue(q), [&](auto, auto) {
      ++rows;
      return true;
    }));
  return rows;
}

/// A frame with `payload` and, when given, a client transaction id.
inline st::frame msg(std::string payload, std::string txid = {}) {
  st::frame f;
  f.payload = std::move(payload);
  if (!txid.empty()) {
    f.transaction_id = std::move(txid);
    f.origin = st::txid_origin::client;
  }
  return f;
}

/// `n` frames "<prefix>0", "<prefix>1", ...
inline std::vector<st::frame> msgs(std::size_t n,
                                   const std::string& prefix = "m") {
  std::vector<st::frame> out;
  for (std::size_t i = 0; i < n; ++i)
    out.push_back(msg(prefix + std::to_string(i)));
  return out;
}

struct store_fixture {
  temp_dir dir;
  st::store_options opts;
  std::unique_ptr<st::store> store;
  st::segment_encoder enc;

  explicit store_fixture(std::size_t initial_map = std::size_t{64} << 20) {
    opts.env.dir = dir.path / "db";
    opts.env.initial_map_bytes = initial_map;
    open();
  }

  void open() {
    auto s = st::store::open(opts);
    if (!s)
      FAIL("store::open: " << st::to_string(s.err()));
    store = std::move(*s);
  }

  void reopen() {
    store.reset();
    open();
  }

  st::expected<void> commit(st::write_batch b) {
    return store->writer().submit(std::move(b)).get();
  }

  /// Seals `n` messages after `log`'s earlier ones and counts them durable
  /// (the next seal continues after them): the batch that writes them.
  st::write_batch seal_next(st::partition_log& log, std::size_t n) {
    auto t = store->db().read();
    REQUIRE(t);
    auto sealed = log.seal(*t, msgs(n), 1'000'000, enc);
    REQUIRE(sealed);
    t->abort();
    log.durable(*sealed);
    return st::write_batch{sealed->mutations};
  }

  /// Creates queue `queue` (once) and a partition in it.
  st::partition_record make_partition(const std::string& name = "Default",
                                      st::micros now = 1'000'000) {
    st::write_batch b;
    if (!queue_) {
      st::queue_record q;
      q.name = "orders";
      q.id = store->next_queue_id(q.name);
      q.created_at = now;
      queue_ = q.id;
      b.mutations.emplace_back(st::mut::create_queue{q});
    }
    st::partition_record p;
    p.queue = *queue_;
    p.id = store->next_partition_id(*queue_);
    p.name = name;
    p.uuid = store->make_partition_uuid(*queue_, p.id);
    p.created_at = now;
    b.mutations.emplace_back(st::mut::create_partition{p});
    auto ok = commit(std::move(b));
    REQUIRE(ok);
    return p;
  }

  /// Seals and commits; the log learns the outcome.
  st::expected<st::sealed_append> append(st::partition_log& log,
                                         const std::vector<st::frame>& frames,
                                         st::micros now,
                                         std::int64_t dedup_window_s = 0) {
    auto t = store->db().read();
    REQUIRE(t);
    auto sealed = log.seal(*t, frames, now, enc, dedup_window_s);
    t->abort();
    if (!sealed)
      return sealed;
    auto ok = commit(st::write_batch{sealed->mutations});
    if (!ok) {
      log.failed(*sealed);
      return std::move(ok).err();
    }
    log.durable(*sealed);
    return sealed;
  }
  /// Appends `n` segments of one incompressible 100 KB frame each (the same
  /// bytes on every run), for the byte bounds of deletion steps.
  void append_big_segments(st::partition_log& log, int n) {
    std::mt19937_64 rng{7};
    for (int i = 0; i < n; ++i) {
      std::string payload(100'000, '\0');
      for (auto& c : payload)
        c = static_cast<char>(rng());
      REQUIRE(append(log, {msg(payload)}, 1'000'000));
    }
  }

  st::read_result read(const st::partition_record& p, st::offset from,
                       std::size_t max_frames = SIZE_MAX,
                       std::size_t max_bytes = SIZE_MAX) {
    auto t = store->db().read();
    REQUIRE(t);
    auto r = st::read_frames(*t, p.queue, p.id, from, max_frames, max_bytes);
    REQUIRE(r);
    return std::move(*r);
  }

  st::partition_record stored(const st::partition_record& p) {
    auto t = store->db().read();
    REQUIRE(t);
    auto r = st::tables::require_partition(*t, p.queue, p.id);
    REQUIRE(r);
    return *r;
  }

  std::optional<st::queue_id> queue_;
};

} // namespace spool::test
