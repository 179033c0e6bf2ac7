// soak_bench: bounded memory under hostile sizes (issue 11; a report, not a
// test). The queue coordinator over a real store, writer and scheduler,
// driven by blocking requests.
//
//   pop-cap: pushes N frames of F MiB each (one segment each), then pops
//     them with batch N and a C MiB byte cap, acking each pop. Prints the
//     largest anonymous RSS (heap: RssAnon, sampled after each pop) growth
//     over the pops, which must stay near one frame plus one segment being
//     decoded, not near N x F. VmHWM (reset before the pops) is printed too:
//     it also counts the store's file pages the reads map (page cache), so
//     it grows with what was read in all, not with what one pop holds.
//
// Run: build/bench/soak_bench pop-cap [--frames 100] [--frame-mib 4]
//        [--cap-mib 1] [--dir /tmp]

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <string>

#include "actors/queue/queue_actor.hpp"
#include "actors/scheduler.hpp"
#include "actors/writer/writer_actor.hpp"
#include "bench/scratch.hpp"

namespace ac = spool::actors;
namespace st = spool::storage;
using spool::bench::die;

namespace {

struct options {
  std::string scenario;
  std::size_t frames = 100;
  std::size_t frame_mib = 4;
  std::size_t cap_mib = 1;
  std::filesystem::path parent = std::filesystem::temp_directory_path();
};

options parse(int argc, char** argv) {
  options o;
  if (argc < 2)
    die("usage: soak_bench pop-cap [--frames N] [--frame-mib F] [--cap-mib C] "
        "[--dir D]");
  o.scenario = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    std::string v = argv[i + 1];
    if (a == "--frames")
      o.frames = std::stoul(v);
    else if (a == "--frame-mib")
      o.frame_mib = std::stoul(v);
    else if (a == "--cap-mib")
      o.cap_mib = std::stoul(v);
    else if (a == "--dir")
      o.parent = v;
    else
      die("unknown option " + a);
  }
  if (o.scenario != "pop-cap")
    die("unknown scenario " + o.scenario);
  return o;
}

/// A field of /proc/self/status in KiB ("VmHWM", "VmRSS").
std::size_t status_kib(const std::string& field) {
  std::ifstream in{"/proc/self/status"};
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0)
      return std::stoul(line.substr(field.size() + 1));
  return 0;
}

/// Resets VmHWM to the current RSS (Linux: clear_refs 5).
void reset_peak() {
  std::ofstream{"/proc/self/clear_refs"} << "5";
}

st::micros wall_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

int main(int argc, char** argv) {
  auto o = parse(argc, argv);
  spool::bench::temp_dir dir{o.parent};
  auto opened = spool::bench::open_store(dir.path);
  auto& store = *opened;
  auto q = spool::bench::create_queue(store, "soak");
  caf::actor_system_config cfg;
  ac::use_scheduler(cfg, "spool", 2);
  caf::actor_system sys{cfg};
  auto writer = ac::spawn_writer(sys, {.env = &store.db()}, true);
  if (!writer)
    die(st::to_string(writer.err()));
  ac::queue_config qc;
  qc.node.store = &store;
  qc.node.writer = *writer;
  qc.node.wall = wall_now;
  qc.node.frames.max_payload_bytes = (o.frame_mib + 1) << 20;
  qc.record = q;
  auto queue = ac::spawn_queue(sys, qc);
  if (!queue)
    die(st::to_string(queue.err()));
  caf::scoped_actor self{sys};
  // Incompressible payloads: each frame stands alone in its segment.
  std::mt19937_64 rng{42};
  for (std::size_t i = 0; i < o.frames; ++i) {
    ac::push_item item;
    item.partition = "P";
    item.frame.payload.resize(o.frame_mib << 20);
    for (auto& c : item.frame.payload)
      c = static_cast<char>('a' + rng() % 26);
    item.frame.encoding = st::payload_encoding::binary;
    self->request(*queue, caf::infinite, ac::push_atom::value,
                  std::vector<ac::push_item>{std::move(item)})
        .receive(
            [](ac::queue_push_reply& r) {
              if (r.failure)
                die(st::to_string(*r.failure));
            },
            [](caf::error& e) { die(caf::to_string(e)); });
  }
  auto rss_before = status_kib("VmRSS");
  auto anon_before = status_kib("RssAnon");
  std::size_t anon_peak = anon_before;
  reset_peak();
  std::size_t popped = 0;
  std::size_t pops = 0;
  while (popped < o.frames) {
    ac::queue_pop_request req;
    req.partition = "P";
    req.group = "g";
    req.batch = o.frames;
    req.max_bytes = o.cap_mib << 20;
    req.lease_id = "L" + std::to_string(++pops);
    std::vector<spool::core::ack_request> acks;
    self->request(*queue, caf::infinite, ac::pop_atom::value, req)
        .receive(
            [&](ac::queue_pop_reply& r) {
              if (r.failure || r.claimed.empty())
                die("pop delivered nothing");
              for (auto& m : r.claimed.front().reply.messages) {
                spool::core::ack_request a;
                a.lease_id = req.lease_id;
                a.off = m.frame.off;
                acks.push_back(a);
              }
            },
            [](caf::error& e) { die(caf::to_string(e)); });
    popped += acks.size();
    anon_peak = std::max(anon_peak, status_kib("RssAnon"));
    self->request(*queue, caf::infinite, ac::ack_atom::value, std::string{"P"},
                  std::string{"g"}, acks)
        .receive([](std::vector<ac::ack_reply>&) {},
                 [](caf::error& e) { die(caf::to_string(e)); });
  }
  auto peak = status_kib("VmHWM");
  std::printf("pop-cap: %zu frames of %zu MiB, cap %zu MiB: %zu pops "
              "(%.1f frames each)\n  heap (RssAnon) before the pops %zu MiB, "
              "largest after a pop %zu MiB (+%zu MiB)\n  VmHWM (heap + mapped "
              "store pages) %zu MiB from %zu MiB\n",
              o.frames, o.frame_mib, o.cap_mib, pops,
              static_cast<double>(popped) / static_cast<double>(pops),
              anon_before >> 10, anon_peak >> 10,
              (anon_peak - anon_before) >> 10, peak >> 10, rss_before >> 10);
  caf::anon_send_exit(*queue, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(*writer, caf::exit_reason::user_shutdown);
  return 0;
}
