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
//   parked: --pushes one-frame pushes to partition B with nothing parked,
//     then the same with --parked pops of one group parked on partition A
//     (named, 10 min timeout). Prints CPU-seconds (whole process) and wall
//     time per push for both and their ratio: a push wakes only the pops it
//     can serve, so the ratio stays near 1, not near the parked count.
//
//   requeue: --entries dead letters of group g on one partition (written
//     straight to the store), then requeued and consumed to the end: each
//     round selects the oldest (as the broker does, core::select_dlq),
//     requeues them (at most cursor_core::max_requeued pending) and pops and
//     acks each. Prints CPU-seconds per 10,000 entries for the first and the
//     last tenth (flat: no step grows with the DLQ), the slowest select +
//     requeue call and the heap growth.
//   delete: --entries frames with client transactionIds (dedup ids) in
//     pushes of 10,000, then the queue deleted: prints how long the
//     deletion's write took and then the sweep steps that remove its rows
//     (10,000 keys each, as the broker runs them): their count, the longest
//     (what another write waits behind at most) and the total.
//   groups: three rounds of --groups new consumer groups that each pop once
//     (a subscription record, a cursor row and a cursor actor each) on a
//     queue with groupIdleSeconds 20, each round waiting until the idle
//     sweep deleted them all: prints the heap (RssAnon) with the groups and
//     after the sweep, and the rows left. Flat from round to round: nothing
//     of a deleted group stays.
//
// Run: build/bench/soak_bench pop-cap [--frames 100] [--frame-mib 4]
//        [--cap-mib 1] [--dir /tmp]
//      build/bench/soak_bench parked [--pushes 2000] [--parked 10000]
//      build/bench/soak_bench requeue [--entries 100000]
//      build/bench/soak_bench delete [--entries 2000000]
//      build/bench/soak_bench groups [--groups 10000]

#include <spdlog/spdlog.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "actors/queue/queue_actor.hpp"
#include "actors/scheduler.hpp"
#include "actors/writer/writer_actor.hpp"
#include "bench/clock.hpp"
#include "bench/scratch.hpp"
#include "core/dlq/dlq_reader.hpp"
#include "storage/tables.hpp"

namespace ac = spool::actors;
namespace st = spool::storage;
using spool::bench::die;

namespace {

struct options {
  std::string scenario;
  std::size_t frames = 100;
  std::size_t frame_mib = 4;
  std::size_t cap_mib = 1;
  std::size_t pushes = 2000;
  std::size_t parked = 10'000;
  std::size_t entries = 100'000;
  std::size_t groups = 10'000;
  std::filesystem::path parent = std::filesystem::temp_directory_path();
};

options parse(int argc, char** argv) {
  options o;
  if (argc < 2)
    die("usage: soak_bench pop-cap [--frames N] [--frame-mib F] [--cap-mib C] "
        "[--dir D] | parked [--pushes N] [--parked P] [--dir D] | requeue "
        "[--entries N] [--dir D] | delete [--entries N] [--dir D] | groups "
        "[--groups N] [--dir D]");
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
    else if (a == "--pushes")
      o.pushes = std::stoul(v);
    else if (a == "--groups")
      o.groups = std::stoul(v);
    else if (a == "--entries")
      o.entries = std::stoul(v);
    else if (a == "--parked")
      o.parked = std::stoul(v);
    else if (a == "--dir")
      o.parent = v;
    else
      die("unknown option " + a);
  }
  if (o.scenario != "pop-cap" && o.scenario != "parked"
      && o.scenario != "requeue" && o.scenario != "delete"
      && o.scenario != "groups")
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

/// Pushes one frame (`payload`, binary) to `partition`; dies on failure.
void push_one(caf::scoped_actor& self, const ac::queue_actor& queue,
              const std::string& partition, std::string payload) {
  ac::push_item item;
  item.partition = partition;
  item.frame.payload = std::move(payload);
  item.frame.encoding = st::payload_encoding::binary;
  self->request(queue, caf::infinite, ac::push_atom::value,
                std::vector<ac::push_item>{std::move(item)})
      .receive(
          [](ac::queue_push_reply& r) {
            if (r.failure)
              die(spool::to_string(*r.failure));
          },
          [](caf::error& e) { die(caf::to_string(e)); });
}

void pop_cap(const options& o, caf::scoped_actor& self,
             const ac::queue_actor& queue) {
  // Incompressible payloads: each frame stands alone in its segment.
  std::mt19937_64 rng{42};
  for (std::size_t i = 0; i < o.frames; ++i) {
    std::string payload(o.frame_mib << 20, ' ');
    for (auto& c : payload)
      c = static_cast<char>('a' + rng() % 26);
    push_one(self, queue, "P", std::move(payload));
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
    std::vector<ac::located_ack> acks;
    self->request(queue, caf::infinite, ac::pop_atom::value, req)
        .receive(
            [&](ac::queue_pop_reply& r) {
              if (r.failure || r.claimed.empty()
                  || !r.claimed.front().reply.lease)
                die("pop delivered nothing");
              auto& c = r.claimed.front();
              for (auto& m : c.reply.messages) {
                spool::ack_request a;
                a.lease_id = c.reply.lease->id;
                a.off = m.frame.off;
                acks.push_back({c.partition_uuid, "g", a});
              }
            },
            [](caf::error& e) { die(caf::to_string(e)); });
    popped += acks.size();
    anon_peak = std::max(anon_peak, status_kib("RssAnon"));
    self->request(queue, caf::infinite, ac::ack_atom::value, acks)
        .receive([](std::vector<ac::located_ack_reply>&) {},
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
}

/// CPU-seconds and wall seconds of `n` one-frame pushes to partition B.
std::pair<double, double> time_pushes(caf::scoped_actor& self,
                                      const ac::queue_actor& queue,
                                      std::size_t n) {
  auto cpu0 = spool::bench::cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i)
    push_one(self, queue, "B", "{}");
  std::chrono::duration<double> wall = std::chrono::steady_clock::now() - t0;
  return {spool::bench::cpu_seconds() - cpu0, wall.count()};
}

void parked(const options& o, caf::scoped_actor& self,
            const ac::queue_actor& queue,
            const std::shared_ptr<std::atomic<std::size_t>>& parked_total) {
  push_one(self, queue, "A", "{}");
  ac::queue_pop_request drain;
  drain.partition = "A";
  drain.group = "g";
  drain.auto_ack = true;
  drain.lease_id = "drain";
  self->request(queue, caf::infinite, ac::pop_atom::value, drain)
      .receive([](ac::queue_pop_reply&) {},
               [](caf::error& e) { die(caf::to_string(e)); });
  time_pushes(self, queue, o.pushes / 10 + 1); // warm-up
  auto [cpu_idle, wall_idle] = time_pushes(self, queue, o.pushes);
  for (std::size_t i = 0; i < o.parked; ++i) {
    ac::queue_pop_request req = drain;
    req.auto_ack = false;
    req.wait = true;
    req.timeout = std::chrono::minutes{10};
    req.lease_id = "parked-" + std::to_string(i);
    caf::anon_send(queue, ac::pop_atom::value, req); // the answer is dropped
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes{2};
  while (*parked_total < o.parked) {
    if (std::chrono::steady_clock::now() > deadline)
      die("the pops did not park");
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  auto [cpu_parked, wall_parked] = time_pushes(self, queue, o.pushes);
  auto per = [&](double x) { return x * 1e6 / static_cast<double>(o.pushes); };
  std::printf("parked: %zu pushes to B, %zu pops parked on A\n"
              "  nothing parked: %.1f us CPU, %.1f us wall per push\n"
              "  %zu parked:     %.1f us CPU, %.1f us wall per push\n"
              "  ratio parked / nothing parked: CPU %.2fx, wall %.2fx\n",
              o.pushes, o.parked, per(cpu_idle), per(wall_idle), o.parked,
              per(cpu_parked), per(wall_parked), cpu_parked / cpu_idle,
              wall_parked / wall_idle);
}

/// Writes `batch` through the writer actor; dies on failure.
void write(caf::scoped_actor& self, const ac::writer_actor& writer,
           st::write_batch batch) {
  self->request(writer, caf::infinite, ac::write_atom::value, std::move(batch))
      .receive(
          [](ac::write_result& r) {
            if (!r.ok())
              die(spool::to_string(*r.failure));
          },
          [](caf::error& e) { die(caf::to_string(e)); });
}

void requeue(const options& o, caf::scoped_actor& self,
             const ac::queue_actor& queue, const ac::writer_actor& writer,
             st::store& store, st::queue_id qid) {
  push_one(self, queue, "P", "{}");
  st::partition_record part;
  {
    auto t = store.db().read();
    auto ps = st::tables::partitions_of(*t, qid);
    if (!ps || ps->empty())
      die("no partition");
    part = ps->front();
  }
  auto now = spool::bench::wall_now();
  for (std::size_t first = 0; first < o.entries; first += 10'000) {
    st::write_batch b;
    for (auto i = first; i < std::min(o.entries, first + 10'000); ++i) {
      st::dlq_entry e;
      e.id = i + 1;
      e.partition = part.id;
      e.message.off = st::offset{0};
      e.message.data.payload = "{}";
      e.error = "bad";
      e.failed_at = now;
      b.mutations.emplace_back(st::mut::put_dlq{qid, "g", std::move(e)});
    }
    write(self, writer, std::move(b));
  }
  auto anon_before = status_kib("RssAnon");
  std::size_t anon_peak = anon_before;
  std::size_t done = 0, leases = 0;
  double slowest_ms = 0;
  std::vector<double> cpu_per_chunk; // CPU-s of each 10,000 entries
  auto chunk_start = spool::bench::cpu_seconds();
  while (done < o.entries) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<st::dlq_entry> entries;
    {
      auto t = store.db().read();
      spool::core::dlq_filter f;
      f.group = "g";
      auto sel = spool::core::select_dlq(*t, f, spool::bench::wall_now(),
                                         spool::core::dlq_max_batch);
      if (!sel)
        die(spool::to_string(sel.err()));
      for (auto it = sel->items.rbegin(); it != sel->items.rend(); ++it)
        entries.push_back(std::move(it->entry));
    }
    std::size_t count = 0;
    self->request(queue, caf::infinite, ac::requeue_atom::value,
                  std::string{"g"}, std::move(entries))
        .receive(
            [&](ac::dlq_count_reply& r) {
              if (r.failure)
                die(spool::to_string(*r.failure));
              count = r.count;
            },
            [](caf::error& e) { die(caf::to_string(e)); });
    std::chrono::duration<double, std::milli> took
        = std::chrono::steady_clock::now() - t0;
    slowest_ms = std::max(slowest_ms, took.count());
    if (count == 0)
      die("requeue took nothing");
    for (std::size_t i = 0; i < count; ++i) {
      ac::queue_pop_request req;
      req.partition = "P";
      req.group = "g";
      req.lease_id = "R" + std::to_string(++leases);
      st::offset off;
      std::string lease;
      std::string partition_uuid;
      self->request(queue, caf::infinite, ac::pop_atom::value, req)
          .receive(
              [&](ac::queue_pop_reply& r) {
                if (r.failure || r.claimed.empty()
                    || r.claimed[0].reply.messages.size() != 1
                    || !r.claimed[0].reply.messages[0].requeued
                    || !r.claimed[0].reply.lease)
                  die("the pop did not deliver a requeued entry");
                off = r.claimed[0].reply.messages[0].frame.off;
                lease = r.claimed[0].reply.lease->id;
                partition_uuid = r.claimed[0].partition_uuid;
              },
              [](caf::error& e) { die(caf::to_string(e)); });
      spool::ack_request a;
      a.lease_id = lease;
      a.off = off;
      self->request(queue, caf::infinite, ac::ack_atom::value,
                    std::vector<ac::located_ack>{{partition_uuid, "g", a}})
          .receive([](std::vector<ac::located_ack_reply>&) {},
                   [](caf::error& e) { die(caf::to_string(e)); });
      if (++done % 10'000 == 0) {
        auto c = spool::bench::cpu_seconds();
        cpu_per_chunk.push_back(c - chunk_start);
        chunk_start = c;
        anon_peak = std::max(anon_peak, status_kib("RssAnon"));
      }
    }
  }
  std::printf("requeue: %zu dead letters requeued and consumed\n", done);
  if (!cpu_per_chunk.empty())
    std::printf("  CPU per 10,000 entries: first %.2f s, last %.2f s "
                "(ratio %.2f)\n",
                cpu_per_chunk.front(), cpu_per_chunk.back(),
                cpu_per_chunk.back() / cpu_per_chunk.front());
  std::printf("  slowest select + requeue call %.1f ms; heap (RssAnon) +%zu "
              "MiB\n",
              slowest_ms, (anon_peak - anon_before) >> 10);
}

void delete_queue(const options& o, caf::scoped_actor& self,
                  const ac::queue_actor& queue, const ac::writer_actor& writer,
                  st::store& store, st::queue_id qid) {
  for (std::size_t first = 0; first < o.entries; first += 10'000) {
    std::vector<ac::push_item> items;
    for (auto i = first; i < std::min(o.entries, first + 10'000); ++i) {
      ac::push_item item;
      item.partition = "P";
      item.frame.payload = "{}";
      item.frame.transaction_id = "tx-" + std::to_string(i);
      item.frame.origin = st::txid_origin::client;
      items.push_back(std::move(item));
    }
    self->request(queue, caf::infinite, ac::push_atom::value, std::move(items))
        .receive(
            [](ac::queue_push_reply& r) {
              if (r.failure)
                die(spool::to_string(*r.failure));
            },
            [](caf::error& e) { die(caf::to_string(e)); });
  }
  using ms = std::chrono::duration<double, std::milli>;
  auto t0 = std::chrono::steady_clock::now();
  self->request(queue, caf::infinite, ac::delete_atom::value)
      .receive(
          [](ac::delete_queue_reply& r) {
            if (r.failure)
              die(spool::to_string(*r.failure));
          },
          [](caf::error& e) { die(caf::to_string(e)); });
  ms deletion = std::chrono::steady_clock::now() - t0;
  std::size_t steps = 0;
  double longest = 0;
  auto s0 = std::chrono::steady_clock::now();
  for (;;) {
    auto t = std::chrono::steady_clock::now();
    write(self, writer, st::write_batch{{st::mut::sweep_queue{qid, 10'000}}});
    longest
        = std::max(longest, ms(std::chrono::steady_clock::now() - t).count());
    ++steps;
    auto r = store.db().read();
    auto doomed = st::tables::is_doomed(*r, qid);
    if (!doomed)
      die(spool::to_string(doomed.err()));
    if (!*doomed)
      break;
  }
  ms total = std::chrono::steady_clock::now() - s0;
  std::printf("delete: a queue of %zu frames with client transactionIds\n"
              "  the deletion's write: %.1f ms\n"
              "  sweep: %zu steps of 10,000 keys, longest %.1f ms, total "
              "%.0f ms\n",
              o.entries, deletion.count(), steps, longest, total.count());
}

void idle_groups(const options& o, caf::scoped_actor& self,
                 const ac::queue_actor& queue, st::store& store,
                 st::queue_id qid) {
  spdlog::set_level(spdlog::level::warn); // one info line per deleted group
  push_one(self, queue, "P", "{}");
  auto count_groups = [&] {
    std::size_t n = 0;
    self->request(queue, caf::infinite, ac::groups_atom::value,
                  ac::groups_request{})
        .receive([&](ac::groups_reply& r) { n = r.cursors.size(); },
                 [](caf::error& e) { die(caf::to_string(e)); });
    return n;
  };
  auto rows_left = [&] {
    std::size_t rows = 0;
    auto t = store.db().read();
    auto subs = st::tables::subscriptions_of(*t, qid);
    auto ps = st::tables::partitions_of(*t, qid);
    if (!subs || !ps)
      die("cannot read the store");
    rows += subs->size();
    for (auto& p : *ps)
      if (auto c = st::tables::cursors_of(*t, qid, p.id))
        rows += c->size();
    return rows;
  };
  std::printf("groups: %zu groups per round, groupIdleSeconds 20; heap "
              "(RssAnon) before %zu MiB\n",
              o.groups, status_kib("RssAnon") >> 10);
  for (int round = 1; round <= 3; ++round) {
    for (std::size_t i = 0; i < o.groups; ++i) {
      ac::queue_pop_request req;
      req.partition = "P";
      req.group = "r" + std::to_string(round) + "-group-" + std::to_string(i);
      req.auto_ack = true;
      req.lease_id = req.group;
      self->request(queue, caf::infinite, ac::pop_atom::value, req)
          .receive(
              [](ac::queue_pop_reply& r) {
                if (r.failure)
                  die(spool::to_string(*r.failure));
              },
              [](caf::error& e) { die(caf::to_string(e)); });
    }
    auto with = count_groups();
    auto anon_with = status_kib("RssAnon");
    auto t0 = std::chrono::steady_clock::now();
    while (count_groups() > 0) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::minutes{5})
        die("the idle sweep did not delete the groups");
      std::this_thread::sleep_for(std::chrono::milliseconds{200});
    }
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
    std::this_thread::sleep_for(std::chrono::seconds{1});
    std::printf("  round %d: %zu cursors live, heap %zu MiB; all idle-deleted "
                "%.1f s later, rows left %zu, heap %zu MiB\n",
                round, with, anon_with >> 10, took.count(), rows_left(),
                status_kib("RssAnon") >> 10);
  }
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
    die(spool::to_string(writer.err()));
  ac::queue_config qc;
  qc.node.store = &store;
  qc.node.writer = *writer;
  qc.node.wall = spool::bench::wall_now;
  qc.node.frames.max_payload_bytes = (o.frame_mib + 1) << 20;
  qc.max_parked = o.parked;
  if (o.scenario == "groups")
    q.options.group_idle_s = 20; // the queue actor's copy of the record
  qc.record = q;
  auto queue = ac::spawn_queue(sys, qc);
  if (!queue)
    die(spool::to_string(queue.err()));
  {
    caf::scoped_actor self{sys};
    if (o.scenario == "pop-cap")
      pop_cap(o, self, *queue);
    else if (o.scenario == "parked")
      parked(o, self, *queue, qc.parked_total);
    else if (o.scenario == "requeue")
      requeue(o, self, *queue, *writer, store, q.id);
    else if (o.scenario == "delete")
      delete_queue(o, self, *queue, *writer, store, q.id);
    else
      idle_groups(o, self, *queue, store, q.id);
  }
  caf::anon_send_exit(*queue, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(*writer, caf::exit_reason::user_shutdown);
  return 0;
}
