// seek_bench: how long a per-queue seek takes on a queue with many
// partitions (a report, not a test; issue "replay": under 100 ms for 10,000
// partitions). A real actor system (2 scheduler threads), the writer
// detached, durability strict, the broker as spoold runs it. Per queue size
// (the baseline: 1 partition; then --partitions), one frame is pushed to
// every partition, group "g" registers with one pop, then --seeks per-queue
// seeks alternate toStart / toEnd / a timestamp, twice: first while the
// group has no live cursor on the partitions (as after a restart: each
// partition stages the seek from the stored row), then after one pop on
// every partition made every cursor live (each cursor stages it, and its
// open lease is abandoned). Each seek is timed from request to answer
// (after its one durable write), on a broker left idle for --pause-ms
// before it (the cursors settle after the answer). Reports the median and
// the slowest seek, and CPU-seconds (user+sys, whole process, pauses
// included) per seek.
//
// Run: build/bench/seek_bench [--partitions 10000] [--seeks 9]
//        [--policy spool|stealing|sharing] [--threads 2] [--pause-ms 100]
//        [--dir /tmp]

#include <sys/resource.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "actors/broker/broker_actor.hpp"
#include "actors/scheduler.hpp"
#include "actors/writer/writer_actor.hpp"
#include "bench/clock.hpp"
#include "bench/scratch.hpp"

using spool::bench::cpu_seconds;
using spool::bench::die;
using spool::bench::wall_now;

namespace {

namespace st = spool::storage;
namespace ac = spool::actors;
using steady = std::chrono::steady_clock;

template <class Reply, class... Ts>
Reply ask(caf::scoped_actor& self, const ac::broker_actor& broker, Ts&&... xs) {
  Reply out;
  self->request(broker, std::chrono::seconds{120}, std::forward<Ts>(xs)...)
      .receive([&](Reply& r) { out = std::move(r); },
               [&](caf::error& err) { die(caf::to_string(err)); });
  return out;
}

struct result {
  std::size_t partitions = 0;
  const char* cursors = ""; ///< "not live" or "live"
  double median_ms = 0;
  double max_ms = 0;
  double cpu_ms_per_seek = 0;
};

/// One frame per partition, pushed in chunks of 1000 items; group "g"
/// registers with one pop. Returns the time between the pushes and the
/// registration (a timestamp seek target inside the queue).
st::micros fill(caf::scoped_actor& self, const ac::broker_actor& broker,
                const std::string& queue, std::size_t partitions) {
  for (std::size_t first = 0; first < partitions; first += 1000) {
    std::vector<ac::broker_push_item> items;
    for (auto p = first; p < std::min(partitions, first + 1000); ++p) {
      st::frame f;
      f.payload = R"({"n":1})";
      items.push_back({queue, {"p" + std::to_string(p), std::move(f)}});
    }
    auto r = ask<ac::queue_push_reply>(self, broker, ac::push_atom::value,
                                       std::move(items));
    if (r.failure)
      die(spool::to_string(*r.failure));
  }
  auto mid = wall_now();
  ac::queue_pop_request pop;
  pop.group = "g";
  pop.lease_id = "register";
  auto registered
      = ask<ac::queue_pop_reply>(self, broker, ac::pop_atom::value, queue, pop);
  if (registered.failure)
    die(spool::to_string(*registered.failure));
  return mid;
}

/// Makes the group's cursor live on every partition: one pop each (its
/// lease stays open; the next seek abandons it).
void pop_everywhere(caf::scoped_actor& self, const ac::broker_actor& broker,
                    const std::string& queue, std::size_t partitions) {
  for (std::size_t p = 0; p < partitions; ++p) {
    ac::queue_pop_request pop;
    pop.partition = "p" + std::to_string(p);
    pop.group = "g";
    pop.lease_id = "warm-" + std::to_string(p);
    auto r = ask<ac::queue_pop_reply>(self, broker, ac::pop_atom::value, queue,
                                      pop);
    if (r.failure)
      die(spool::to_string(*r.failure));
  }
}

/// `seeks` per-queue seeks alternating toStart / toEnd / timestamp `mid`.
result seek_times(caf::scoped_actor& self, const ac::broker_actor& broker,
                  const std::string& queue, std::size_t partitions,
                  std::size_t seeks, std::chrono::milliseconds pause,
                  st::micros mid) {
  std::vector<double> ms;
  auto cpu0 = cpu_seconds();
  for (std::size_t i = 0; i < seeks; ++i) {
    // The broker settles the last seek's cursors after answering it; each
    // seek is timed on a broker left idle for `pause` (not back to back).
    std::this_thread::sleep_for(pause);
    ac::seek_request req;
    req.group = "g";
    switch (i % 3) {
    case 0:
      req.target.to_start = true;
      break;
    case 1:
      req.target.to_end = true;
      break;
    default:
      req.target.timestamp = mid;
    }
    auto t0 = steady::now();
    auto r
        = ask<ac::seek_reply>(self, broker, ac::seek_atom::value, queue, req);
    auto t1 = steady::now();
    if (r.failure)
      die(spool::to_string(*r.failure));
    if (r.partitions_updated != partitions)
      die("seek updated " + std::to_string(r.partitions_updated)
          + " partitions of " + std::to_string(partitions));
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::this_thread::sleep_for(pause); // the last settles, in the CPU time
  auto cpu = cpu_seconds() - cpu0;
  std::sort(ms.begin(), ms.end());
  return {partitions, "", ms[ms.size() / 2], ms.back(),
          cpu * 1000.0 / static_cast<double>(seeks)};
}

/// The seeks on a queue of `partitions`: first while the group has no live
/// cursor (as after a restart: the partitions stage the seeks), then after
/// one pop on every partition made every cursor live.
void run(caf::scoped_actor& self, const ac::broker_actor& broker,
         const std::string& queue, std::size_t partitions, std::size_t seeks,
         std::chrono::milliseconds pause, std::vector<result>& out) {
  auto mid = fill(self, broker, queue, partitions);
  out.push_back(seek_times(self, broker, queue, partitions, seeks, pause, mid));
  out.back().cursors = "not live";
  pop_everywhere(self, broker, queue, partitions);
  out.push_back(seek_times(self, broker, queue, partitions, seeks, pause, mid));
  out.back().cursors = "live";
}

} // namespace

int main(int argc, char** argv) {
  std::size_t partitions = 10'000;
  std::size_t seeks = 9;
  std::string policy = "spool";
  std::size_t threads = 2;
  std::chrono::milliseconds pause{100};
  auto parent = std::filesystem::temp_directory_path();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc)
      die(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--partitions")
      partitions = std::stoull(v);
    else if (a == "--seeks")
      seeks = std::max<std::size_t>(1, std::stoull(v));
    else if (a == "--policy")
      policy = v;
    else if (a == "--pause-ms")
      pause = std::chrono::milliseconds{std::stoll(v)};
    else if (a == "--threads")
      threads = std::stoull(v);
    else if (a == "--dir")
      parent = v;
    else
      die("unknown option " + a);
  }
  spool::bench::temp_dir dir{parent};
  auto opened = spool::bench::open_store(dir.path);
  auto& store = *opened;
  store.writer().stop(); // the writer actor writes
  std::vector<result> results;
  {
    caf::actor_system_config cfg;
    if (!ac::use_scheduler(cfg, policy, threads))
      die("--policy is spool, stealing or sharing");
    caf::actor_system sys{cfg};
    auto writer = ac::spawn_writer(sys, {.env = &store.db()}, true);
    if (!writer)
      die(spool::to_string(writer.err()));
    ac::broker_config bc;
    bc.node.store = &store;
    bc.node.writer = *writer;
    bc.node.wall = wall_now;
    auto broker = ac::spawn_broker(sys, bc);
    if (!broker)
      die(spool::to_string(broker.err()));
    caf::scoped_actor self{sys};
    run(self, *broker, "baseline", 1, seeks, pause, results);
    run(self, *broker, "wide", partitions, seeks, pause, results);
    self->send_exit(*broker, caf::exit_reason::user_shutdown);
    self->send_exit(*writer, caf::exit_reason::user_shutdown);
  }
  std::printf("%10s %9s %12s %10s %14s\n", "partitions", "cursors", "median ms",
              "max ms", "CPU ms/seek");
  for (auto& r : results)
    std::printf("%10zu %9s %12.2f %10.2f %14.2f\n", r.partitions, r.cursors,
                r.median_ms, r.max_ms, r.cpu_ms_per_seek);
  for (std::size_t k = 0; k < 2; ++k)
    std::printf("ratio (wide / baseline median), cursors %s: %.1fx\n",
                results[2 + k].cursors,
                results[2 + k].median_ms
                    / std::max(results[k].median_ms, 1e-3));
  return 0;
}
