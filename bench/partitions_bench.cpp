// Many partitions on one node (issue 38): what an idle partition costs
// spoold, how long a restart takes to be ready, what a push or a pop to an
// idle (passivated) partition costs against a live one, and a seek of one
// group over all of them. Everything goes over the msgpack door of a real
// spoold started here (strict durability unless told).
//
// The setup: one 100-byte message pushed to each of --partitions partitions
// of one queue (1,000 items per push, each to its own partition), then one
// pop of each partition by each of --groups groups (autoAck), then
// --idle-seconds of nothing. Printed after each step: spoold's RssAnon
// (heap: the LMDB map's file pages are not in it) and RSS, and RssAnon per
// partition. Then:
//   - seek: group g0 to the start and back to the end, --seeks times,
//     each timed from request to answer;
//   - latency: --samples pushes, one at a time, each to a partition idle
//     since the setup (cold), then the same pushes again (live); then
//     pops of a fresh group ("lat", registered first) on other idle
//     partitions (cold), a push to each, and the same pops again (live):
//     p50 / p99 / max of each;
//   - restart: SIGTERM, then a start on the same data timed until its log
//     says ready (polled every 20 ms), and its RssAnon once ready.
// Usage: partitions_bench [--partitions N] [--groups G] [--idle-seconds S]
//                         [--samples L] [--seeks K] [--arg=--spoold-option]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "client/client.hpp"
#include "spoold_child.hpp"
#include "window.hpp"

namespace {

using clk = std::chrono::steady_clock;
using namespace spool;
using bench::window;

struct options {
  std::string spoold = SPOOLD_PATH;
  long partitions = 100'000;
  int groups = 3;
  int in_flight = 32;
  double idle_seconds = 0;
  int samples = 1000;
  int seeks = 3;
  std::string durability = "strict";
  std::vector<std::string> args; ///< more spoold options
};

options parse(int argc, char** argv) {
  options o;
  CLI::App app{"many partitions on one node: memory, restart, cold latency "
               "(bench/README.md)"};
  app.add_option("--spoold", o.spoold, "the spoold to start");
  app.add_option("--partitions", o.partitions);
  app.add_option("--groups", o.groups);
  app.add_option("--in-flight", o.in_flight);
  app.add_option("--idle-seconds", o.idle_seconds,
                 "seconds of nothing after the setup, before measuring");
  app.add_option("--samples", o.samples, "pushes and pops timed one by one");
  app.add_option("--seeks", o.seeks);
  app.add_option("--durability", o.durability);
  app.add_option("--arg", o.args, "an option passed to spoold (repeatable)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  return o;
}

double secs_since(clk::time_point t0) {
  return std::chrono::duration<double>(clk::now() - t0).count();
}

void memory(const char* when, const bench::spoold_child& s, long partitions) {
  long anon = s.status_kb("RssAnon:");
  long rss = s.rss_kb();
  std::printf("%-28s RssAnon %8.1f MB  RSS %8.1f MB  %7.0f B/partition\n", when,
              anon / 1024.0, rss / 1024.0,
              partitions ? anon * 1024.0 / static_cast<double>(partitions)
                         : 0.0);
  std::fflush(stdout);
}

std::string part(long i) {
  return "p" + std::to_string(i);
}

node::push_item item(long i) {
  node::push_item it;
  it.queue = "many";
  it.partition = part(i);
  it.payload.assign(100, 'x');
  it.binary = true;
  return it;
}

/// Pushes one message to each partition, 1,000 items per request.
bool push_all(const options& o, client::connection& c) {
  long next = 0;
  window w{o.in_flight};
  w.run([&] {
    if (next >= o.partitions)
      return false;
    std::vector<node::push_item> items;
    for (; next < o.partitions && items.size() < 1000; ++next)
      items.push_back(item(next));
    auto enc = std::make_shared<client::encoded_items>(
        *client::encode_items(std::move(items)));
    c.request(
        "push", [enc](mp::writer& wr) { client::write_items(wr, *enc); },
        [&](expected<client::reply_ptr> r) {
          if (!r)
            std::fprintf(stderr, "push failed: %s\n",
                         to_string(r.err()).c_str());
          w.done(bool(r));
        });
    return true;
  });
  return !w.failed();
}

node::pop_request pop_of(long i, const std::string& group) {
  node::pop_request p;
  p.queue = "many";
  p.partition = part(i);
  p.group = group;
  p.auto_ack = true;
  return p;
}

/// One pop of each partition by `group` (autoAck); counts the messages.
long pop_all(const options& o, client::connection& c,
             const std::string& group) {
  std::atomic<long> got{0};
  long next = 0;
  window w{o.in_flight};
  w.run([&] {
    if (next >= o.partitions)
      return false;
    auto req = pop_of(next++, group);
    c.request(
        "pop", [req](mp::writer& wr) { client::write_pop(wr, req, true); },
        [&](expected<client::reply_ptr> r) {
          if (!r) {
            std::fprintf(stderr, "pop failed: %s\n",
                         to_string(r.err()).c_str());
            return w.done(false);
          }
          got += static_cast<long>(
              client::read_pop((*r)->root()).messages.size());
          w.done(true);
        });
    return true;
  });
  return got.load();
}

struct spread {
  double p50 = 0, p99 = 0, max = 0;
};

spread spread_of(std::vector<double> ms) {
  if (ms.empty())
    return {};
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<std::size_t>(
                                          q * static_cast<double>(ms.size())))];
  };
  return {at(0.5), at(0.99), ms.back()};
}

void print_spread(const char* what, const spread& s) {
  std::printf("%-28s p50 %7.3f ms  p99 %7.3f ms  max %7.3f ms\n", what, s.p50,
              s.p99, s.max);
  std::fflush(stdout);
}

/// Times `call(i)` for each i in [from, from + n), one at a time.
template <class Call>
std::vector<double> timed(long from, long n, Call call) {
  std::vector<double> ms;
  for (long i = from; i < from + n; ++i) {
    auto t0 = clk::now();
    if (!call(i)) {
      std::fprintf(stderr, "request %ld failed\n", i);
      std::exit(1);
    }
    ms.push_back(secs_since(t0) * 1000);
  }
  return ms;
}

} // namespace

int main(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (o.partitions < 3 * o.samples + 1) {
    std::fprintf(stderr, "--partitions must be at least 3 × --samples + 1\n");
    return 2;
  }
  bench::spoold_child s;
  s.extra = o.args;
  s.start(o.spoold, 0, o.durability);
  client::options co;
  co.port = static_cast<std::uint16_t>(s.mp_port);
  client::client cl{co};
  auto& c = cl.async();
  memory("started", s, 0);

  auto t0 = clk::now();
  if (!push_all(o, c))
    return 1;
  std::printf("pushed %ld partitions in %.1f s\n", o.partitions,
              secs_since(t0));
  memory("after the pushes", s, o.partitions);
  for (int g = 0; g < o.groups; ++g) {
    t0 = clk::now();
    auto got = pop_all(o, c, "g" + std::to_string(g));
    std::printf("group g%d popped %ld messages in %.1f s\n", g, got,
                secs_since(t0));
    if (got != o.partitions) {
      std::fprintf(stderr, "expected %ld messages\n", o.partitions);
      return 1;
    }
  }
  memory("after the pops", s, o.partitions);
  if (o.idle_seconds > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_seconds));
    memory("after the idle time", s, o.partitions);
  }

  // Seek of one group over every partition.
  for (int k = 0; k < o.seeks; ++k) {
    node::seek_request sr;
    sr.group = "g0";
    sr.queue = "many";
    (k % 2 == 0 ? sr.target.to_start : sr.target.to_end) = true;
    t0 = clk::now();
    auto r = cl.seek(sr);
    if (!r) {
      std::fprintf(stderr, "seek failed: %s\n", to_string(r.err()).c_str());
      return 1;
    }
    std::printf("seek %-8s %zu partitions in %.0f ms\n",
                k % 2 == 0 ? "toStart" : "toEnd", r->partitions_updated,
                secs_since(t0) * 1000);
  }
  memory("after the seeks", s, o.partitions);

  // Latency: idle partitions against live ones.
  long n = o.samples;
  auto push_one = [&](long i) { return bool(cl.push({item(i)})); };
  print_spread("push, idle partition", spread_of(timed(0, n, push_one)));
  print_spread("push, live partition", spread_of(timed(0, n, push_one)));
  if (!cl.pop(pop_of(3 * n, "lat"))) // registers the group
    return 1;
  auto pop_one = [&](long i) {
    auto r = cl.pop(pop_of(i, "lat"));
    return r && r->messages.size() == 1;
  };
  print_spread("pop, idle partition", spread_of(timed(n, n, pop_one)));
  timed(n, n, push_one);
  print_spread("pop, live partition", spread_of(timed(n, n, pop_one)));

  // Restart to ready.
  s.stop();
  t0 = clk::now();
  s.launch();
  std::printf("restart to ready: %.0f ms (%ld partitions)\n",
              secs_since(t0) * 1000, o.partitions);
  memory("after the restart", s, o.partitions);
  return 0;
}
