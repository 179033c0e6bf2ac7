// storage_bench: durable append throughput of the storage layer (a report,
// not a test). Durability strict (LMDB fsync per commit) or, with
// --durability relaxed, MDB_NOMETASYNC; 100-byte JSON-ish payloads,
// generated transaction ids.
//  * Store runs: one producer thread per partition seals segments
//    (partition_log::seal, a read txn only around it) and submits them to the
//    group-commit writer with a callback, up to --inflight batches in flight.
//    For each batch size (frames per seal/submit) with compression off and
//    zstd_when_smaller: msgs/s, payload MB/s, commits and batches (writer
//    stats), bytes written per commit (wchar of /proc/self/io), CPU-seconds
//    (user+sys, getrusage) per million messages. Plus a "per-message" run:
//    batch 1, 1 partition, 1 in flight = one fsync per message.
//  * Raw baseline: write() + fdatasync() of chunks appended to a plain file in
//    the same file system (4 KB, 100 KB, 1 MB and each run's bytes per commit,
//    in that run's directory); ratio = store payload MB/s / raw MB/s there.
// Each run has a fresh directory (mkdtemp under --dir), removed afterwards.
//
// Run: build/bench/storage_bench [--seconds 3] [--dir /tmp] [--partitions 2]
//        [--inflight 16] [--batches 1,10,100,1000]
//        [--durability strict|relaxed] [--csv]

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/clock.hpp"
#include "bench/scratch.hpp"
#include "storage/log.hpp"
#include "storage/store.hpp"

using spool::bench::cpu_seconds;
using spool::bench::die;
using spool::bench::temp_dir;

namespace {

namespace st = spool::storage;
namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

constexpr std::size_t payload_size = 100;

struct options {
  double seconds = 3;
  fs::path parent = fs::temp_directory_path();
  std::size_t partitions = 2;
  std::size_t inflight = 16;
  std::vector<std::size_t> batches{1, 10, 100, 1000};
  bool csv = false;
  st::durability mode = st::durability::strict;
};

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

/// Bytes this process passed to write calls ("wchar"; "write_bytes" reports
/// about twice what LMDB writes here, checked with strace).
std::uint64_t io_write_bytes() {
  std::ifstream in{"/proc/self/io"};
  std::string key;
  std::uint64_t value = 0;
  while (in >> key >> value)
    if (key == "wchar:")
      return value;
  return 0;
}

st::micros now_micros() {
  auto d = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

/// `n` distinct JSON-ish payloads of exactly 100 bytes: numbers, a customer,
/// an item and a random note, so zstd finds structure but no repetition.
std::vector<st::frame> make_frames(std::size_t n, std::uint64_t seed) {
  static constexpr const char* skus[]
      = {"apple", "pear", "plum", "fig", "kiwi", "lime", "date", "yuzu"};
  std::mt19937_64 rng{seed};
  std::vector<st::frame> out(n);
  long long ts = 1'700'000'000'000 + static_cast<long long>(seed % 1000);
  for (auto& f : out) {
    ts += static_cast<long long>(rng() % 40);
    char buf[160];
    int len = std::snprintf(
        buf, sizeof buf,
        R"({"order":%u,"customer":"c-%04u","amount":%u.%02u,"ts":%lld,)"
        R"("sku":"%s","n":")",
        static_cast<unsigned>(100000 + rng() % 900000),
        static_cast<unsigned>(rng() % 10000),
        static_cast<unsigned>(rng() % 500), static_cast<unsigned>(rng() % 100),
        ts, skus[rng() % 8]);
    std::string p{buf, static_cast<std::size_t>(len)};
    while (p.size() < payload_size - 2)
      p.push_back(static_cast<char>('a' + rng() % 26));
    p += "\"}";
    f.payload = std::move(p);
  }
  return out;
}

/// One partition's producer. The log and encoder belong to its thread; the
/// window counters are shared with the writer thread's callbacks.
struct producer {
  st::partition_log log;
  st::segment_encoder enc;
  std::vector<st::frame> pool;
  std::uint64_t segment_bytes = 0; // owner thread only

  std::mutex mtx;
  std::condition_variable cv;
  std::size_t inflight = 0;
  std::uint64_t durable_msgs = 0;
  std::uint64_t failed = 0;
  std::string first_error;

  producer(st::partition_record rec, st::compression c, std::size_t batch,
           std::uint64_t seed) :
      log(std::move(rec)), enc(c), pool(make_frames(4099 + batch, seed)) {
  }
};

/// Seals and submits batches of `batch` frames until `stop`, with at most
/// `window` in flight, then waits for its in-flight batches.
void produce(st::store& s, producer& p, std::size_t batch, std::size_t window,
             const std::atomic<bool>& stop) {
  std::size_t pos = 0;
  const std::size_t positions = p.pool.size() - batch + 1;
  while (!stop.load(std::memory_order_relaxed)) {
    {
      std::unique_lock<std::mutex> lock{p.mtx};
      p.cv.wait(lock, [&] { return p.inflight < window; });
      ++p.inflight;
    }
    std::span<const st::frame> frames{p.pool.data() + pos, batch};
    pos = (pos + batch) % positions;
    auto t = s.db().read();
    if (!t)
      die("read txn: " + st::to_string(t.err()));
    auto sealed = p.log.seal(*t, frames, now_micros(), p.enc);
    t->abort(); // never hold a read txn while commits are pending
    if (!sealed)
      die("seal: " + st::to_string(sealed.err()));
    for (auto& m : sealed->mutations)
      p.segment_bytes += std::get<st::mut::append_segment>(m).bytes.size();
    s.writer().submit(st::write_batch{std::move(sealed->mutations)},
                      [&p, batch](st::expected<void> r) {
                        std::lock_guard<std::mutex> guard{p.mtx};
                        --p.inflight;
                        if (r)
                          p.durable_msgs += batch;
                        else if (p.failed++ == 0)
                          p.first_error = st::to_string(r.err());
                        p.cv.notify_one();
                      });
  }
  std::unique_lock<std::mutex> lock{p.mtx};
  p.cv.wait(lock, [&] { return p.inflight == 0; });
}

struct raw_result {
  std::string label;
  std::size_t chunk = 0;
  double mb_s = 0;
  double syncs_s = 0;
};

/// write() + fdatasync() of `chunk`-byte pieces appended to a file in `dir`.
raw_result run_raw(const fs::path& dir, std::size_t chunk, double seconds) {
  auto path = dir / "raw-baseline.bin";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    die("open " + path.string() + ": " + std::strerror(errno));
  auto frames = make_frames(64, 7);
  std::string buf;
  while (buf.size() < chunk)
    buf += frames[buf.size() / payload_size % frames.size()].payload;
  buf.resize(chunk);
  std::uint64_t syncs = 0;
  auto t0 = steady::now();
  double elapsed = 0;
  do {
    for (std::size_t done = 0; done < chunk;) {
      auto n = ::write(fd, buf.data() + done, chunk - done);
      if (n < 0 && errno != EINTR)
        die("write: " + std::string{std::strerror(errno)});
      done += n > 0 ? static_cast<std::size_t>(n) : 0;
    }
    if (::fdatasync(fd) != 0)
      die("fdatasync: " + std::string{std::strerror(errno)});
    ++syncs;
    elapsed = seconds_since(t0);
  } while (elapsed < seconds);
  ::close(fd);
  fs::remove(path);
  return {"fixed", chunk, static_cast<double>(syncs * chunk) / 1e6 / elapsed,
          static_cast<double>(syncs) / elapsed};
}

struct store_result {
  std::string name;
  std::size_t batch = 0, window = 0, partitions = 0;
  double seconds = 0, cpu = 0;
  std::uint64_t msgs = 0, commits = 0, batches = 0;
  std::uint64_t segment_bytes = 0, disk_bytes = 0;
  raw_result raw; // at the matched chunk size

  double mb_s() const {
    return static_cast<double>(msgs) * payload_size / 1e6 / seconds;
  }
  std::size_t bytes_per_commit() const {
    return commits == 0 ? 0 : static_cast<std::size_t>(disk_bytes / commits);
  }
};

store_result run_store(const options& o, std::string name, std::size_t batch,
                       std::size_t window, std::size_t partitions,
                       st::compression c) {
  temp_dir dir{o.parent};
  st::store_options so;
  so.env.dir = dir.path / "db";
  so.env.mode = o.mode;
  so.env.initial_map_bytes = std::size_t{8} << 30; // no growth while timed
  auto opened = st::store::open(so);
  if (!opened)
    die("store::open: " + st::to_string(opened.err()));
  auto& s = **opened;

  st::write_batch setup;
  st::queue_record q;
  q.name = "bench";
  q.id = s.next_queue_id(q.name);
  q.created_at = now_micros();
  setup.mutations.emplace_back(st::mut::create_queue{q});
  std::vector<std::unique_ptr<producer>> producers;
  for (std::size_t i = 0; i < partitions; ++i) {
    st::partition_record p;
    p.queue = q.id;
    p.id = s.next_partition_id(q.id);
    p.name = std::to_string(i); // (not "p" + ...: GCC 12 -Wrestrict bug)
    p.uuid = s.make_partition_uuid(q.id, p.id);
    p.created_at = q.created_at;
    setup.mutations.emplace_back(st::mut::create_partition{p});
    producers.push_back(std::make_unique<producer>(p, c, batch, 1000 + i));
  }
  if (auto ok = s.writer().submit(std::move(setup)).get(); !ok)
    die("setup: " + st::to_string(ok.err()));

  store_result r;
  r.name = std::move(name);
  r.batch = batch;
  r.window = window;
  r.partitions = partitions;
  auto before = s.writer().stats();
  std::atomic<bool> stop{false};
  auto io0 = io_write_bytes();
  auto cpu0 = cpu_seconds();
  auto t0 = steady::now();
  std::vector<std::thread> threads;
  for (auto& p : producers)
    threads.emplace_back([&s, &stop, batch, window, pp = p.get()] {
      produce(s, *pp, batch, window, stop);
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop = true;
  for (auto& t : threads)
    t.join();
  r.seconds = seconds_since(t0);
  r.cpu = cpu_seconds() - cpu0;
  r.disk_bytes = io_write_bytes() - io0;
  auto after = s.writer().stats();
  r.commits = after.commits - before.commits;
  r.batches = after.batches - before.batches;
  for (auto& p : producers) {
    r.msgs += p->durable_msgs;
    r.segment_bytes += p->segment_bytes;
    if (p->failed != 0)
      die(r.name + ": " + std::to_string(p->failed)
          + " failed batches, first: " + p->first_error);
  }
  // Cross-check: the stored partitions account for every durable message.
  auto cat = s.load_catalog();
  std::int64_t stored = 0;
  for (auto& p : cat ? cat->partitions : std::vector<st::partition_record>{})
    stored += p.next_offset.value;
  if (!cat || stored != static_cast<std::int64_t>(r.msgs))
    die(r.name + ": " + std::to_string(r.msgs) + " durable, stored "
        + std::to_string(stored));
  if (auto closed = s.close(); !closed)
    die(r.name + ": close: " + st::to_string(closed.err()));
  opened->reset();
  // The matched raw baseline, in the same directory.
  r.raw = run_raw(dir.path, std::max<std::size_t>(r.bytes_per_commit(), 4096),
                  o.seconds);
  r.raw.label = r.name + " " + std::to_string(batch);
  return r;
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--csv") {
      o.csv = true;
      continue;
    }
    std::string v = i + 1 < argc ? argv[++i] : "";
    if (a == "--seconds")
      o.seconds = std::stod(v);
    else if (a == "--durability" && (v == "strict" || v == "relaxed"))
      o.mode = v == "strict" ? st::durability::strict : st::durability::relaxed;
    else if (a == "--dir")
      o.parent = v;
    else if (a == "--partitions")
      o.partitions = std::stoul(v);
    else if (a == "--inflight")
      o.inflight = std::stoul(v);
    else if (a == "--batches") {
      o.batches.clear();
      std::istringstream in{v};
      for (std::string n; std::getline(in, n, ',');)
        o.batches.push_back(std::stoul(n));
    } else
      die("usage: storage_bench [--seconds N] [--dir D] [--partitions P] "
          "[--inflight K] [--batches 1,10,100,1000] "
          "[--durability strict|relaxed] [--csv]");
  }
  if (o.seconds <= 0 || o.partitions == 0 || o.inflight == 0
      || std::find(o.batches.begin(), o.batches.end(), 0) != o.batches.end())
    die("--seconds, --partitions, --inflight and batches must be positive");
  return o;
}

std::string num(double x, int precision = 0) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", precision, x);
  return buf;
}

/// One row: right-aligned columns (the first left-aligned), or CSV.
void emit(bool csv, const std::vector<std::string>& cells,
          std::span<const int> widths) {
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (csv)
      std::printf("%s%s", i ? "," : "", cells[i].c_str());
    else
      std::printf(i ? " %*s" : "%-*s", widths[i], cells[i].c_str());
  }
  std::printf("\n");
}

} // namespace

int main(int argc, char** argv) {
  auto o = parse(argc, argv);
  std::printf("Spool storage bench: durability %s, "
              "%zu-byte JSON-ish payloads, generated ids\n"
              "%zu partition(s) x 1 producer thread, %zu batches in flight "
              "per partition, %.1f s per run, in %s, %u CPUs\n\n",
              o.mode == st::durability::strict
                  ? "strict (data + meta synced per commit)"
                  : "relaxed (MDB_NOMETASYNC: data synced per commit)",
              payload_size, o.partitions, o.inflight, o.seconds,
              o.parent.c_str(), std::thread::hardware_concurrency());
  std::fflush(stdout);

  std::vector<store_result> rows;
  rows.push_back(run_store(o, "per-message", 1, 1, 1, st::compression::off));
  for (auto b : o.batches)
    for (auto c : {st::compression::off, st::compression::zstd_when_smaller})
      rows.push_back(
          run_store(o, c == st::compression::off ? "group/off" : "group/zstd",
                    b, o.inflight, o.partitions, c));
  std::vector<raw_result> raws;
  for (std::size_t kb : {4, 100, 1024}) {
    temp_dir dir{o.parent};
    raws.push_back(run_raw(dir.path, kb << 10, o.seconds));
  }

  static constexpr int store_w[]
      = {11, 5, 3, 4, 9, 6, 7, 7, 8, 9, 6, 7, 7, 8, 6};
  emit(o.csv,
       {"config", "batch", "par", "infl", "msgs/s", "MB/s", "commits",
        "batches", "b/commit", "KB/commit", "stored", "wr MB/s", "CPU s/M",
        "raw MB/s", "ratio"},
       store_w);
  for (auto& r : rows) {
    double payload = static_cast<double>(r.msgs) * payload_size;
    emit(o.csv,
         {r.name, num(r.batch), num(r.partitions), num(r.window),
          num(r.msgs / r.seconds), num(r.mb_s(), 1), num(r.commits),
          num(r.batches), num(r.commits ? double(r.batches) / r.commits : 0, 1),
          num(r.bytes_per_commit() / 1024.0, 1),
          num(payload > 0 ? 100.0 * r.segment_bytes / payload : 0) + "%",
          num(r.disk_bytes / 1e6 / r.seconds, 1),
          num(r.msgs ? r.cpu / (r.msgs / 1e6) : 0, 2), num(r.raw.mb_s, 1),
          num(r.raw.mb_s > 0 ? r.mb_s() / r.raw.mb_s : 0, 3)},
         store_w);
  }
  if (!o.csv)
    std::printf(
        "\n%s\n%s\n%s\n\n%s\n",
        "MB/s: payload; b/commit: batches/commit; KB/commit: bytes "
        "written per commit; stored: segment/payload",
        "bytes; wr MB/s: bytes written/s; CPU s/M: CPU-s (user+sys) per "
        "1e6 msgs; raw MB/s: write+fdatasync",
        "at chunk = KB/commit; ratio = payload MB/s / raw MB/s.",
        "Raw baseline (write + fdatasync, appending to a file in the "
        "same file system):");
  static constexpr int raw_w[] = {16, 9, 9, 9, 13};
  emit(o.csv, {"chunk for", "chunk KB", "MB/s", "syncs/s", "msgs/s equiv"},
       raw_w);
  for (auto& r : rows)
    raws.push_back(r.raw);
  for (auto& r : raws)
    emit(o.csv,
         {r.label, num(r.chunk / 1024.0, 1), num(r.mb_s, 1), num(r.syncs_s),
          num(r.mb_s * 1e6 / payload_size)},
         raw_w);
  return 0;
}
