// Crash test: a child process appends with group commit and reports each
// durable batch on a pipe; the parent kill -9s it at random moments, reopens
// the store and checks that every batch reported durable is present and
// intact and that no partial segment is visible.

#include "unit/storage/fixture.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <semaphore>
#include <sstream>
#include <thread>

using namespace spool::test;
using namespace spool::storage;

namespace {

constexpr int partitions = 3;

/// The payload of every frame is a function of where it is stored, so the
/// parent can check every byte without the child telling it.
std::string payload_for(int part, std::int64_t off) {
  std::string s = "{\"p\":" + std::to_string(part)
                  + ",\"o\":" + std::to_string(off) + ",\"pad\":\"";
  s.append(static_cast<std::size_t>((off * 7 + part) % 300), 'a' + off % 26);
  s += "\"}";
  return s;
}

/// The child: append forever; report "part next" for each durable batch.
[[noreturn]] void child_main(const store_options& opts, int fd, unsigned seed) {
  auto st = store::open(opts);
  if (!st) {
    write_all(fd, "ERR " + to_string(st.err()) + "\n");
    ::_exit(1);
  }
  auto& cat = (*st)->recovered();
  std::vector<partition_log> logs;
  for (auto& rec : cat.partitions)
    logs.emplace_back(rec, segment_limits{.max_frames = 50, .max_bytes = 8192});
  std::mt19937 rng{seed};
  segment_encoder enc;
  std::counting_semaphore<16> in_flight{16};
  micros now = 1'000'000;
  for (;;) {
    write_batch batch;
    std::string report;
    // One batch spans one or two partitions (all or nothing).
    int first = static_cast<int>(rng() % partitions);
    int count = 1 + static_cast<int>(rng() % 2);
    for (int k = 0; k < count; ++k) {
      int part = (first + k) % partitions;
      auto& log = logs[static_cast<std::size_t>(part)];
      std::vector<frame> frames;
      auto n = 1 + rng() % 20;
      for (std::size_t i = 0; i < n; ++i)
        frames.push_back(msg(payload_for(
            part, log.next_offset().value + static_cast<std::int64_t>(i))));
      auto t = (*st)->db().read();
      auto sealed = log.seal(*t, frames, now += rng() % 1000, enc);
      t->abort();
      if (!sealed) {
        write_all(fd, "ERR " + to_string(sealed.err()) + "\n");
        ::_exit(1);
      }
      for (auto& m : sealed->mutations)
        batch.mutations.push_back(std::move(m));
      report += std::to_string(part) + " " + std::to_string(sealed->next.value)
                + "\n";
    }
    in_flight.acquire();
    (*st)->writer().submit(
        std::move(batch), [fd, report, &in_flight](expected<void> r) {
          if (!r)
            write_all(fd, "ERR " + to_string(r.err()) + "\n");
          else
            write_all(fd, report);
          in_flight.release();
        });
  }
}

} // namespace

TEST_CASE("every batch reported durable survives kill -9 and no partial "
          "segment is visible",
          "[storage][crash]") {
  // strict syncs every commit; relaxed does not, and must still survive a
  // killed process (the page cache keeps what was committed).
  auto mode = GENERATE(durability::strict, durability::relaxed);
  INFO("durability " << (mode == durability::strict ? "strict" : "relaxed"));
  temp_dir dir;
  store_options opts;
  opts.env.dir = dir.path / "db";
  opts.env.mode = mode;
  opts.env.initial_map_bytes = std::size_t{4} << 20; // growth under crashes too
  std::vector<partition_record> parts;
  {
    auto st = store::open(opts);
    REQUIRE(st);
    queue_record q;
    q.name = "crash";
    q.id = (*st)->next_queue_id(q.name);
    write_batch b{{mut::create_queue{q}}};
    for (int i = 0; i < partitions; ++i) {
      partition_record p;
      p.queue = q.id;
      p.id = (*st)->next_partition_id(q.id);
      p.name = "p" + std::to_string(i);
      parts.push_back(p);
      b.mutations.emplace_back(mut::create_partition{p});
    }
    REQUIRE((*st)->writer().submit(std::move(b)).get());
  }
  std::map<int, std::int64_t> reported; // partition -> durable next offset
  std::mt19937 rng{20261130};
  constexpr int cycles = 20;
  std::uint64_t total_reports = 0;
  std::uint64_t frames_checked = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    INFO("cycle " << cycle);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    auto pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      child_main(opts, fds[1], rng());
    }
    ::close(fds[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 250));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::string out;
    char buf[4096];
    for (;;) {
      auto n = ::read(fds[0], buf, sizeof(buf));
      if (n <= 0)
        break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    REQUIRE(out.find("ERR") == std::string::npos);
    std::istringstream lines{out};
    int part = 0;
    std::int64_t next = 0;
    while (lines >> part >> next) {
      reported[part] = std::max(reported[part], next);
      ++total_reports;
    }
    // Reopen and check every partition completely.
    auto st = store::open(opts);
    REQUIRE(st);
    auto t = (*st)->db().read();
    REQUIRE(t);
    for (int i = 0; i < partitions; ++i) {
      auto& p = parts[static_cast<std::size_t>(i)];
      auto rec = tables::require_partition(*t, p.queue, p.id);
      REQUIRE(rec);
      CHECK(rec->next_offset.value >= reported[i]);
      auto r = read_frames(*t, p.queue, p.id, offset{0}, SIZE_MAX);
      if (!r)
        FAIL(to_string(r.err()));
      REQUIRE(r->frames.size()
              == static_cast<std::size_t>(rec->next_offset.value));
      micros last = 0;
      std::string first_bad;
      for (std::size_t k = 0; k < r->frames.size() && first_bad.empty(); ++k) {
        auto& f = r->frames[k];
        if (f.off.value != static_cast<std::int64_t>(k)
            || f.data.payload != payload_for(i, f.off.value)
            || f.created_at < last)
          first_bad = "partition " + std::to_string(i) + " frame "
                      + std::to_string(k) + " is not what was appended";
        last = f.created_at;
      }
      CHECK(first_bad.empty());
      INFO(first_bad);
      frames_checked += r->frames.size();
    }
  }
  // The test is only meaningful if the children got work done.
  CHECK(total_reports > cycles);
  WARN("crash test: " << total_reports << " durable reports, " << frames_checked
                      << " frame checks");
}
