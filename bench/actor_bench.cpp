// actor_bench: push -> pop -> ack throughput through the actors, in process
// (a report, not a test). A real actor system (2 scheduler threads), the
// store writer detached on its own thread, one queue with --partitions
// partitions, durability strict. A producer actor keeps --inflight pushes of
// --batch 100-byte messages in flight (one partition per push, rotating;
// the messages are formatted before timing starts, as a client would in its
// own process). --consumers consumer actors (default: one per partition) of
// one group loop: wildcard long-poll pop of --batch, then one ack list per
// pop (with --depth N, the next pop goes out while up to N pops await their
// acks). Reports msgs/s end to end (all messages acked), the push rate,
// CPU-seconds (user+sys, whole process) per million messages and the
// consumers' mean round trips. --policy picks the scheduler: Spool's
// (spoold's; work stealing with constant-time steals, actors/scheduler.hpp),
// CAF's work stealing, or CAF's work sharing (one queue, idle workers block
// on a condition variable).
//
// Run: build/bench/actor_bench [--messages 1000000] [--partitions 4]
//        [--batch 1000] [--inflight 8] [--consumers 4] [--depth 1]
//        [--policy spool|stealing|sharing] [--dir /tmp]

#include <sys/resource.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <string_view>

#include "actors/queue/queue_actor.hpp"
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

struct options {
  std::size_t messages = 1'000'000;
  std::size_t partitions = 4;
  std::size_t batch = 1000;
  std::size_t inflight = 8;
  std::size_t consumers = 0; ///< 0: one per partition
  std::size_t depth = 1;
  std::string policy = "spool";
  std::filesystem::path parent = std::filesystem::temp_directory_path();
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc)
        die(a + " needs a value");
      return argv[++i];
    };
    auto num = [&] { return static_cast<std::size_t>(std::stoull(next())); };
    if (a == "--messages")
      o.messages = num();
    else if (a == "--partitions")
      o.partitions = num();
    else if (a == "--batch")
      o.batch = num();
    else if (a == "--inflight")
      o.inflight = num();
    else if (a == "--consumers")
      o.consumers = num();
    else if (a == "--depth")
      o.depth = num();
    else if (a == "--policy")
      o.policy = next();
    else if (a == "--dir")
      o.parent = next();
    else
      die("unknown option " + a);
  }
  if (o.messages == 0 || o.partitions == 0 || o.batch == 0 || o.inflight == 0
      || o.depth == 0)
    die("all counts but --consumers must be positive");
  if (o.consumers == 0)
    o.consumers = o.partitions;
  return o;
}

/// The same bytes as snprintf(R"({"order":%zu,"customer":"c-%04zu",
/// "amount":%zu.%02zu,"s":")") plus letters up to 98 bytes and `"}`: a
/// 100-byte JSON-ish payload whose content varies (so zstd has real work).
std::string payload_for(std::size_t i) {
  char buf[128];
  char* p = buf;
  auto lit = [&p](std::string_view s) {
    for (char c : s)
      *p++ = c;
  };
  auto num = [&p](std::size_t x, int width) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof(tmp), x);
    for (auto n = r.ptr - tmp; n < width; ++n)
      *p++ = '0';
    for (char* q = tmp; q < r.ptr; ++q)
      *p++ = *q;
  };
  lit(R"({"order":)");
  num(i, 0);
  lit(R"(,"customer":"c-)");
  num(i % 9973, 4);
  lit(R"(","amount":)");
  num(i % 500, 0);
  *p++ = '.';
  num(i % 100, 2);
  lit(R"(,"s":")");
  auto n = static_cast<std::size_t>(p - buf);
  while (n < 98) {
    *p++ = static_cast<char>('a' + (i + n) % 26);
    ++n;
  }
  lit("\"}");
  return std::string(buf, p);
}
struct shared_counters {
  std::atomic<std::size_t> acked{0};
  std::atomic<bool> pushed_all{false};
  steady::time_point push_done;
  std::promise<void> done;
  std::atomic<bool> finished{false};
  /// Round trips seen by the consumers (request to answer), in µs: pops
  /// that delivered something, and ack lists.
  std::atomic<std::uint64_t> pop_us{0}, pops{0}, ack_us{0}, acks{0};
};

std::uint64_t micros_since(steady::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - t)
          .count());
}

} // namespace

int main(int argc, char** argv) {
  auto o = parse(argc, argv);
  spool::bench::temp_dir dir{o.parent};
  auto opened = spool::bench::open_store(dir.path);
  auto& store = *opened;
  auto q = spool::bench::create_queue(store, "bench");

  caf::actor_system_config cfg;
  if (!spool::actors::use_scheduler(cfg, o.policy, 2))
    die("--policy is spool, stealing or sharing");
  auto counters = std::make_shared<shared_counters>();
  auto done = counters->done.get_future();
  double cpu0 = 0;
  steady::time_point t0;
  {
    caf::actor_system sys{cfg};
    auto writer = ac::spawn_writer(sys, {.env = &store.db()}, true);
    if (!writer)
      die(spool::to_string(writer.err()));
    ac::queue_config qc;
    qc.node.store = &store;
    qc.node.writer = *writer;
    qc.record = q;
    qc.node.wall = wall_now;
    auto queue = ac::spawn_queue(sys, qc);
    if (!queue)
      die(spool::to_string(queue.err()));
    // Partitions exist before timing starts.
    std::vector<std::string> names;
    for (std::size_t p = 0; p < o.partitions; ++p)
      names.push_back("p" + std::to_string(p));
    {
      std::vector<ac::push_item> init;
      std::promise<void> ready;
      auto f = ready.get_future();
      for (auto& n : names)
        init.push_back({n, st::frame{}});
      init.clear();
      for (auto& n : names) {
        st::frame fr;
        fr.payload = "{}";
        init.push_back({n, fr});
      }
      auto total_init = init.size();
      counters->acked = 0;
      sys.spawn(
          [&, init](caf::event_based_actor* self, int) {
            self->request(*queue, caf::infinite, ac::push_atom::value, init)
                .then([&](ac::queue_push_reply& r) {
                  if (r.failure)
                    die(spool::to_string(*r.failure));
                  ready.set_value();
                });
          },
          0);
      f.wait();
      o.messages += total_init; // the consumers also take these
    }
    // The pushes are built before timing starts: the producer is a client,
    // and a real one formats its messages in its own process.
    auto target = o.messages - o.partitions;
    auto batches = std::make_shared<std::vector<std::vector<ac::push_item>>>();
    batches->reserve(target / o.batch + 1);
    for (std::size_t sent = 0; sent < target;) {
      auto n = std::min(o.batch, target - sent);
      auto& items = batches->emplace_back();
      items.reserve(n);
      auto& part = names[(sent / o.batch) % names.size()];
      for (std::size_t i = 0; i < n; ++i) {
        auto& item = items.emplace_back();
        item.partition = part;
        item.frame.payload = payload_for(sent + i);
      }
      sent += n;
    }
    cpu0 = cpu_seconds();
    t0 = steady::now();
    // Producer.
    sys.spawn(
        [&, counters, batches](caf::event_based_actor* self, int) {
          auto sent = std::make_shared<std::size_t>(0);
          auto in_flight = std::make_shared<std::size_t>(0);
          auto next = std::make_shared<std::function<void()>>();
          *next = [self, sent, in_flight, next, batches, &o, queue, counters] {
            while (*in_flight < o.inflight && *sent < batches->size()) {
              auto items = std::move((*batches)[(*sent)++]);
              ++*in_flight;
              self->request(*queue, caf::infinite, ac::push_atom::value,
                            std::move(items))
                  .then([in_flight, next, sent, batches,
                         counters](ac::queue_push_reply& r) {
                    if (r.failure)
                      die(spool::to_string(*r.failure));
                    --*in_flight;
                    if (*sent >= batches->size() && *in_flight == 0) {
                      counters->push_done = steady::now();
                      counters->pushed_all = true;
                    }
                    (*next)();
                  });
            }
          };
          (*next)();
        },
        0);
    // Consumers.
    for (std::size_t c = 0; c < o.consumers; ++c)
      sys.spawn(
          [&, counters](caf::event_based_actor* self, int) {
            auto loop = std::make_shared<std::function<void()>>();
            auto seq = std::make_shared<std::uint64_t>(0);
            // Pops whose acks are still on their way; the next pop goes out
            // while fewer than --depth are.
            auto unacked = std::make_shared<std::size_t>(0);
            auto popping = std::make_shared<bool>(false);
            *loop = [self, loop, seq, queue, counters, unacked, popping, &o] {
              if (counters->finished || *popping || *unacked >= o.depth)
                return;
              *popping = true;
              ac::queue_pop_request req;
              req.group = "bench";
              req.batch = o.batch;
              req.wait = true;
              req.timeout = std::chrono::milliseconds{1000};
              req.lease_id = "c" + std::to_string(self->id()) + "-"
                             + std::to_string(++*seq);
              auto asked = steady::now();
              self->request(*queue, caf::infinite, ac::pop_atom::value, req)
                  .then([self, loop, queue, counters, unacked, popping, asked,
                         &o](ac::queue_pop_reply& r) {
                    *popping = false;
                    if (r.failure)
                      die(spool::to_string(*r.failure));
                    if (r.claimed.empty()) {
                      (*loop)();
                      return;
                    }
                    counters->pop_us += micros_since(asked);
                    ++counters->pops;
                    ++*unacked;
                    auto pending
                        = std::make_shared<std::size_t>(r.claimed.size());
                    for (auto& cl : r.claimed) {
                      std::vector<ac::located_ack> acks;
                      acks.reserve(cl.reply.messages.size());
                      for (auto& m : cl.reply.messages) {
                        spool::ack_request a;
                        a.lease_id = cl.reply.lease->id;
                        a.off = m.frame.off;
                        acks.push_back({cl.partition_uuid, "bench", a});
                      }
                      auto n = acks.size();
                      auto acking = steady::now();
                      self->request(*queue, caf::infinite, ac::ack_atom::value,
                                    std::move(acks))
                          .then([loop, pending, n, counters, unacked, acking,
                                 &o](std::vector<ac::located_ack_reply>& rs) {
                            counters->ack_us += micros_since(acking);
                            ++counters->acks;
                            for (auto& x : rs)
                              if (x.reply.failure
                                  || x.reply.error != spool::ack_error::none)
                                die("ack failed");
                            auto total = counters->acked.fetch_add(n) + n;
                            if (total >= o.messages
                                && !counters->finished.exchange(true))
                              counters->done.set_value();
                            if (--*pending == 0) {
                              --*unacked;
                              (*loop)();
                            }
                          });
                    }
                    (*loop)(); // with --depth > 1, the next pop goes now
                  });
            };
            (*loop)();
          },
          0);
    done.wait();
    auto t1 = steady::now();
    auto cpu = cpu_seconds() - cpu0;
    auto secs = std::chrono::duration<double>(t1 - t0).count();
    auto push_secs
        = std::chrono::duration<double>(counters->push_done - t0).count();
    auto n = static_cast<double>(o.messages);
    std::printf("Spool actor bench: %zu x 100-byte messages, %zu partitions, "
                "batch %zu, %zu pushes in flight, %zu consumers (%zu pops "
                "unacked each), durability strict, 2 scheduler threads (%s) + "
                "writer thread\n",
                o.messages, o.partitions, o.batch, o.inflight, o.consumers,
                o.depth, o.policy.c_str());
    std::printf("push -> pop -> ack: %.0f msgs/s end to end (%.2f s), pushes "
                "done at %.2f s (%.0f msgs/s), CPU %.2f s = %.2f CPU-s per "
                "million\n",
                n / secs, secs, push_secs, n / push_secs, cpu, cpu / n * 1e6);
    auto mean_ms = [](std::uint64_t us, std::uint64_t k) {
      return k == 0 ? 0.0
                    : static_cast<double>(us) / 1000.0 / static_cast<double>(k);
    };
    std::printf("consumer round trips: pop %.2f ms mean over %llu pops that "
                "delivered, ack list %.2f ms mean over %llu lists\n",
                mean_ms(counters->pop_us, counters->pops),
                static_cast<unsigned long long>(counters->pops.load()),
                mean_ms(counters->ack_us, counters->acks),
                static_cast<unsigned long long>(counters->acks.load()));
    caf::anon_send_exit(*queue, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(*writer, caf::exit_reason::user_shutdown);
  }
  return 0;
}
