// The group-commit writer: many callers, one transaction per group, map growth.

#include "unit/storage/fixture.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

using namespace spool::test;
using namespace spool::storage;

TEST_CASE("concurrent batches are committed together and all reported durable",
          "[storage][group-commit]") {
  store_fixture fx;
  constexpr int threads = 4;
  constexpr int per_thread = 200;
  std::vector<partition_record> parts;
  for (int i = 0; i < threads; ++i)
    parts.push_back(fx.make_partition("p" + std::to_string(i)));
  auto before = fx.store->writer().stats();
  std::atomic<int> durable{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&, i] {
      partition_log log{parts[i]};
      segment_encoder enc;
      std::vector<std::future<expected<void>>> pending;
      for (int n = 0; n < per_thread; ++n) {
        auto t = fx.store->db().read();
        auto sealed = log.seal(*t, msgs(3), 1'000'000 + n, enc);
        t->abort();
        pending.push_back(
            fx.store->writer().submit(write_batch{sealed->mutations}));
      }
      for (auto& f : pending)
        if (f.get())
          ++durable;
    });
  }
  for (auto& w : workers)
    w.join();
  CHECK(durable == threads * per_thread);
  auto after = fx.store->writer().stats();
  CHECK(after.batches - before.batches == threads * per_thread);
  // Group commit: fewer commits (syncs) than batches.
  CHECK(after.commits - before.commits < after.batches - before.batches);
  for (auto& p : parts) {
    auto r = fx.read(p, offset{0});
    CHECK(r.frames.size() == 3 * per_thread);
    CHECK(fx.stored(p).next_offset == offset{3 * per_thread});
  }
}

TEST_CASE("the map grows on demand instead of failing when full",
          "[storage][group-commit]") {
  store_fixture fx{std::size_t{1} << 20}; // 1 MiB map
  auto p = fx.make_partition();
  partition_log log{p, {}, {}};
  segment_encoder plain{compression::off};
  std::string payload(64 * 1024, 'x');
  auto before = fx.store->db().usage();
  REQUIRE(before);
  CHECK(before->map_bytes == (std::size_t{1} << 20));
  CHECK(before->used_bytes > 0);
  CHECK(before->used_bytes < before->map_bytes);
  for (int i = 0; i < 80; ++i) { // 5 MiB in total
    auto t = fx.store->db().read();
    REQUIRE(t);
    std::vector<frame> one{msg(payload + std::to_string(i))};
    auto sealed = log.seal(*t, one, 1'000'000, plain);
    t->abort();
    REQUIRE(sealed);
    auto ok = fx.commit(write_batch{sealed->mutations});
    if (!ok)
      FAIL(to_string(ok.err()));
    log.durable(*sealed);
  }
  CHECK(fx.store->db().map_bytes() >= (std::size_t{4} << 20));
  CHECK(fx.read(p, offset{0}).frames.size() == 80);
  // The map's use follows: the 5 MiB are in it, and it fits the map.
  auto after = fx.store->db().usage();
  REQUIRE(after);
  CHECK(after->map_bytes == fx.store->db().map_bytes());
  CHECK(after->used_bytes >= before->used_bytes + 80 * payload.size());
  CHECK(after->used_bytes <= after->map_bytes);
  CHECK(after->max_map_bytes >= after->map_bytes);
}

TEST_CASE("a stopped writer refuses new batches with a clear error",
          "[storage][group-commit]") {
  store_fixture fx;
  auto p = fx.make_partition();
  fx.store->writer().stop();
  auto r = fx.store->writer().submit(write_batch{}).get();
  REQUIRE(!r);
  CHECK(r.err().code == ec::shutting_down);
}

TEST_CASE("the map grows while readers keep reading",
          "[storage][group-commit]") {
  store_fixture fx{std::size_t{1} << 20};
  auto p = fx.make_partition();
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> reads{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i)
    readers.emplace_back([&] {
      while (!stop) {
        auto t = fx.store->db().read();
        if (t) {
          auto r = read_frames(*t, p.queue, p.id, offset{0}, 4);
          (void)r;
          ++reads;
        }
      }
    });
  partition_log log{p};
  segment_encoder plain{compression::off};
  std::string payload(64 * 1024, 'y');
  for (int i = 0; i < 60; ++i) {
    std::vector<frame> one{msg(payload)};
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto sealed = log.seal(*t, one, 1'000'000, plain);
    t->abort();
    REQUIRE(sealed);
    REQUIRE(fx.commit(write_batch{sealed->mutations}));
    log.durable(*sealed);
  }
  stop = true;
  for (auto& r : readers)
    r.join();
  CHECK(fx.store->db().map_bytes() >= (std::size_t{4} << 20));
  CHECK(reads > 0);
}

TEST_CASE("strict durability syncs every commit and relaxed defers only the "
          "meta page (never MDB_NOSYNC)",
          "[storage][group-commit][durability]") {
  temp_dir dir;
  for (auto mode : {durability::strict, durability::relaxed}) {
    store_options opts;
    opts.env.dir = dir.path / (mode == durability::strict ? "s" : "r");
    opts.env.mode = mode;
    auto st = store::open(opts);
    REQUIRE(st);
    // MDB_NOSYNC may corrupt the whole store on an OS crash; NOMETASYNC
    // keeps it intact and may undo only the last commit.
    CHECK(((*st)->db().flags() & MDB_NOSYNC) == 0);
    bool nometasync = ((*st)->db().flags() & MDB_NOMETASYNC) != 0;
    CHECK(nometasync == (mode == durability::relaxed));
    CHECK((*st)->close());
  }
}

TEST_CASE("a data directory is opened by one store at a time",
          "[storage][lock]") {
  temp_dir dir;
  store_options opts;
  opts.env.dir = dir.path / "data";
  opts.env.initial_map_bytes = std::size_t{4} << 20;
  auto first = store::open(opts);
  REQUIRE(first);
  auto second = store::open(opts);
  REQUIRE_FALSE(second);
  CHECK(second.err().code == ec::io_error);
  CHECK_THAT(second.err().message,
             Catch::Contains("is in use by another process"));
  REQUIRE((*first)->close());
  first->reset();
  CHECK(store::open(opts)); // released when the first one closed
}

#if !defined(__SANITIZE_ADDRESS__)
namespace {

/// The process's virtual memory size in bytes (/proc/self/status VmSize).
std::size_t vm_size() {
  std::ifstream in{"/proc/self/status"};
  std::string key;
  while (in >> key) {
    if (key == "VmSize:") {
      std::size_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    std::getline(in, key);
  }
  return 0;
}

} // namespace
#endif

TEST_CASE("a map growth whose mmap fails leaves the store refusing every "
          "transaction, and the data before it intact",
          "[storage][group-commit][grow]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("not run under ASan: its allocator cannot live under RLIMIT_AS");
  return;
#else
  store_fixture fx{std::size_t{1} << 20}; // 1 MiB map
  auto p = fx.make_partition();
  auto opts = fx.opts;
  fx.store.reset();
  std::string payload(64 * 1024, 'x');
  // The child writes until a growth is needed, with the address space
  // capped so LMDB's new mmap fails (it has unmapped the old map first).
  auto pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto s = store::open(opts);
    if (!s)
      ::_exit(10);
    auto& db = (*s)->db();
    partition_log log{p, {}, {}};
    segment_encoder plain{compression::off};
    auto write_one = [&](int i) {
      auto t = db.read();
      if (!t)
        return t.err();
      std::vector<frame> one{msg(payload + std::to_string(i))};
      auto sealed = log.seal(*t, one, 1'000'000, plain);
      t->abort();
      if (!sealed)
        return sealed.err();
      auto ok = (*s)->writer().submit(write_batch{sealed->mutations}).get();
      if (!ok)
        return ok.err();
      log.durable(*sealed);
      return error{ec::none, ""};
    };
    if (write_one(0).code != ec::none) // warms up the heap before the cap
      ::_exit(11);
    rlimit cap{vm_size() + 256 * 1024, RLIM_INFINITY};
    if (::setrlimit(RLIMIT_AS, &cap) != 0)
      ::_exit(12);
    for (int i = 1; i < 40; ++i) {
      auto r = write_one(i);
      if (r.code == ec::none)
        continue;
      if (r.code != ec::io_error || !db.broken())
        ::_exit(13);
      // Every later transaction is refused, none touches the lost map.
      auto t = db.read();
      if (t || t.err().code != ec::io_error)
        ::_exit(14);
      auto w = write_one(100);
      if (w.code != ec::io_error)
        ::_exit(15);
      ::_exit(i > 1 ? 0 : 16); // something was stored before the failure
    }
    ::_exit(17); // never needed to grow
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  // Reopened without the cap: what the child stored is there, in order,
  // and the store takes writes again.
  fx.open();
  auto stored = fx.read(p, offset{0});
  REQUIRE(stored.frames.size() >= 2);
  for (std::size_t i = 0; i < stored.frames.size(); ++i)
    CHECK(stored.frames[i].data.payload == payload + std::to_string(i));
  fx.make_partition("after");
#endif
}
