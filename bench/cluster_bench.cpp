// Replication's costs against real spoold processes on loopback (issue 36,
// bench/README.md), all in one run:
//
//   1. push at RF=1 (one spoold, no --peers) and at RF=3 (three spoold in
//      cluster mode, pushing to the queue's slot leader): msgs/s, p50 and
//      p99 latency of a push request, and CPU-seconds per million messages
//      of every spoold together;
//   2. catch-up: one follower killed with -9, `--catchup-mib` MiB pushed
//      meanwhile, then the follower restarted: MB/s until the leader's
//      `spool_slot_follower_lag_entries` for it is 0 again;
//   3. failover: the leader killed with -9, `promote` sent to a survivor:
//      the time from the promote request to the first push the new leader
//      acknowledges.
//
// Each figure is printed as a line; the RF=3/RF=1 ratio too. Strict
// durability everywhere (a cluster refuses relaxed).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>

#include <CLI/CLI.hpp>

#include "client/client.hpp"
#include "spoold_child.hpp"
#include "vocab/slot.hpp"

namespace {

using clk = std::chrono::steady_clock;
using namespace spool;
using spool::bench::spoold_child;

struct options {
  std::string spoold = SPOOLD_PATH;
  int batch = 100;
  int bytes = 100;
  int partitions = 8;
  int in_flight = 16;
  double seconds = 5;
  long catchup_mib = 1024;
  /// The cluster nodes' `--slot-log-entries` (what a follower can catch up
  /// from before it needs a snapshot: a push is one small entry, its
  /// segment bytes are not in the log).
  long slot_log_entries = 100'000;
};

options parse(int argc, char** argv) {
  options o;
  CLI::App app{"replication's costs against real spoold processes "
               "(bench/README.md)"};
  app.add_option("--spoold", o.spoold, "the spoold to start");
  app.add_option("--batch", o.batch, "messages per push");
  app.add_option("--bytes", o.bytes, "payload bytes");
  app.add_option("--partitions", o.partitions);
  app.add_option("--in-flight", o.in_flight, "push requests in flight");
  app.add_option("--seconds", o.seconds, "each push phase");
  app.add_option("--catchup-mib", o.catchup_mib,
                 "MiB a follower falls behind (0: no catch-up phase)");
  app.add_option("--slot-log-entries", o.slot_log_entries,
                 "the cluster nodes' slot log window (small: the catch-up "
                 "goes by a snapshot)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  return o;
}

/// A free loopback port now (for the peer links, named before binding).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// `GET path` on 127.0.0.1:`port`: the whole answer ("" on failure).
std::string http_get(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return {};
  }
  auto req
      = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, req.data(), req.size());
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

/// The value of Prometheus series `series` (the whole name with labels)
/// on `port`, or -1.
double metric(int port, const std::string& series) {
  auto text = http_get(port, "/metrics/prometheus");
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos)
    return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

/// Keeps pushes in flight for `seconds` or until `total` messages, on one
/// connection: messages acknowledged, and each request's latency (µs).
struct push_result {
  long pushed = 0;
  double seconds = 0;
  std::vector<double> latency_us;
};

/// Pushes for `seconds` or `total` messages, whichever ends first, cycling
/// over `distinct` pre-encoded batches (at least one per partition): many
/// of them make a store that compresses no better than its payloads.
push_result push_for(const options& o, client::connection& c, double seconds,
                     long total, int distinct = 0) {
  std::vector<client::encoded_items> batches;
  std::mt19937 rng{42};
  for (int n = 0; n < std::max(distinct, o.partitions); ++n) {
    auto p = n % o.partitions;
    std::vector<node::push_item> items;
    for (int i = 0; i < o.batch; ++i) {
      node::push_item it;
      it.queue = "bench";
      it.partition = "p" + std::to_string(p);
      it.payload.resize(static_cast<std::size_t>(o.bytes));
      for (auto& ch : it.payload) // not all alike: no compression helps
        ch = static_cast<char>('a' + rng() % 26);
      it.binary = true;
      items.push_back(std::move(it));
    }
    batches.push_back(*client::encode_items(std::move(items)));
  }
  push_result r;
  std::mutex mx;
  std::condition_variable cv;
  int open = 0;
  bool failed = false;
  long sent = 0;
  auto t0 = clk::now();
  auto end = t0 + std::chrono::duration<double>(seconds);
  for (int next = 0;; ++next) {
    std::unique_lock lock{mx};
    cv.wait(lock, [&] { return open < o.in_flight || failed; });
    if (failed || clk::now() >= end || sent >= total)
      break;
    ++open;
    sent += o.batch;
    lock.unlock();
    auto& b = batches[static_cast<std::size_t>(next) % batches.size()];
    auto start = clk::now();
    c.request(
        "push", [&b](mp::writer& w) { client::write_items(w, b); },
        [&, start](expected<client::reply_ptr> a) {
          auto us
              = std::chrono::duration<double, std::micro>(clk::now() - start)
                    .count();
          std::lock_guard g{mx};
          --open;
          if (a) {
            r.pushed += o.batch;
            r.latency_us.push_back(us);
          } else {
            std::fprintf(stderr, "push failed: %s\n",
                         to_string(a.err()).c_str());
            failed = true;
          }
          cv.notify_all();
        });
  }
  std::unique_lock lock{mx};
  cv.wait(lock, [&] { return open == 0; });
  r.seconds = std::chrono::duration<double>(clk::now() - t0).count();
  return r;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

/// Prints one push phase: msgs/s, latency, spoold CPU-s per million.
double report(const char* what, const push_result& r, double cpu) {
  double rate = static_cast<double>(r.pushed) / r.seconds;
  std::printf("%s: %ld msgs in %.2f s = %.0f msgs/s; push p50 %.2f ms, p99 "
              "%.2f ms; spoold %.2f CPU-s/M\n",
              what, r.pushed, r.seconds, rate,
              percentile(r.latency_us, 0.5) / 1000,
              percentile(r.latency_us, 0.99) / 1000,
              cpu / (static_cast<double>(r.pushed) / 1e6));
  std::fflush(stdout);
  return rate;
}

client::options at(int mp_port) {
  client::options co;
  co.port = static_cast<std::uint16_t>(mp_port);
  co.request_timeout = std::chrono::seconds{60};
  return co;
}

/// Waits until `ok()` or `limit`; false on the limit.
template <class F>
bool until(F ok, std::chrono::seconds limit) {
  for (auto end = clk::now() + limit; clk::now() < end;
       std::this_thread::sleep_for(std::chrono::milliseconds{10}))
    if (ok())
      return true;
  return false;
}

} // namespace

int main(int argc, char** argv) {
  auto o = parse(argc, argv);
  double rf1 = 0;
  {
    spoold_child one;
    one.start(o.spoold, 0, "strict");
    client::connection c{at(one.mp_port)};
    auto cpu0 = one.cpu();
    auto r = push_for(o, c, o.seconds, std::numeric_limits<long>::max());
    rf1 = report("RF=1 push", r, one.cpu() - cpu0);
  }

  // Three nodes; the queue's slot is first led by node slot % 3.
  auto dir = std::filesystem::temp_directory_path()
             / ("spool-cluster-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto secret = dir / "secret";
  std::ofstream{secret} << "a bench secret\n";
  std::string peers;
  for (int i = 1; i <= 3; ++i)
    peers += (i > 1 ? "," : "") + ("n" + std::to_string(i))
             + "=127.0.0.1:" + std::to_string(free_port());
  spoold_child nodes[3];
  for (int i = 0; i < 3; ++i) {
    nodes[i].extra = {"--node-id",
                      "n" + std::to_string(i + 1),
                      "--peers",
                      peers,
                      "--cluster-secret-file",
                      secret.string(),
                      "--slot-log-entries",
                      std::to_string(o.slot_log_entries)};
    nodes[i].start(o.spoold, 0, "strict");
  }
  auto slot = slot_of("bench", default_slot_count);
  auto l = static_cast<int>(slot % 3);
  auto cpu_all = [&] {
    double s = 0;
    for (auto& n : nodes)
      s += n.pid > 0 ? n.cpu() : 0;
    return s;
  };
  {
    client::client probe{at(nodes[l].mp_port)};
    node::push_item it;
    it.queue = "bench";
    it.payload = "1";
    if (!until([&] { return bool(probe.push({it})); },
               std::chrono::seconds{30})) {
      std::fprintf(stderr, "the cluster never served slot %u\n", slot);
      return 1;
    }
  }
  {
    client::connection c{at(nodes[l].mp_port)};
    auto cpu0 = cpu_all();
    auto r = push_for(o, c, o.seconds, std::numeric_limits<long>::max());
    auto rf3 = report("RF=3 push", r, cpu_all() - cpu0);
    std::printf("RF=3 / RF=1 = %.2f\n", rf3 / rf1);
  }

  // Catch-up of a follower `catchup_mib` behind.
  auto f = (l + 1) % 3;
  auto lag = "spool_slot_follower_lag_entries{slot=\"" + std::to_string(slot)
             + "\",follower=\"n" + std::to_string(f + 1) + "\"}";
  if (o.catchup_mib > 0) {
    nodes[f].kill9();
    long total = o.catchup_mib * (1L << 20) / o.bytes;
    client::connection c{at(nodes[l].mp_port)};
    // Distinct batches, about 32 MiB of them: what the follower takes is
    // as large as what was pushed (no repeat inside a segment to squeeze).
    auto distinct = static_cast<int>((32L << 20) / (long{o.batch} * o.bytes));
    auto r = push_for(o, c, 1e9, total, distinct);
    double mib = static_cast<double>(r.pushed) * o.bytes / (1 << 20);
    std::printf("pushed %.0f MiB of payload while n%d was down (%.0f "
                "msgs/s with one follower)\n",
                mib, f + 1, static_cast<double>(r.pushed) / r.seconds);
    auto behind = metric(nodes[l].port, lag);
    auto t0 = clk::now();
    nodes[f].launch();
    if (!until([&] { return metric(nodes[l].port, lag) == 0; },
               std::chrono::seconds{600})) {
      std::fprintf(stderr, "n%d never caught up\n", f + 1);
      return 1;
    }
    double secs = std::chrono::duration<double>(clk::now() - t0).count();
    std::printf("catch-up: n%d %.0f entries (%.0f MiB of payload) behind, "
                "caught up %.2f s after its restart = %.1f MiB/s\n",
                f + 1, behind, mib, secs, mib / secs);
    // What the stores hold: a copy carries the leader's (compressed) rows.
    auto used = [&](int n) {
      return metric(nodes[n].port, "spool_storage_map_used_bytes") / (1 << 20);
    };
    std::printf("stores after catch-up: leader %.0f MiB, n%d %.0f MiB\n",
                used(l), f + 1, used(f));
  }

  // Failover: the leader killed, promote on a survivor, the first push.
  nodes[l].kill9();
  client::client op{at(nodes[f].mp_port)};
  node::promote_request pr;
  pr.slot = slot;
  auto t0 = clk::now();
  auto promoted = op.promote(pr);
  if (!promoted || promoted->slots.empty()) {
    std::fprintf(stderr, "promote failed: %s\n",
                 promoted ? "no slot" : to_string(promoted.err()).c_str());
    return 1;
  }
  auto promote_ms
      = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
  auto leader = promoted->slots[0].leader;
  auto nl = std::stoi(leader.substr(1)) - 1;
  client::client c{at(nodes[nl].mp_port)};
  node::push_item it;
  it.queue = "bench";
  it.payload = "2";
  if (!until([&] { return bool(c.push({it})); }, std::chrono::seconds{30})) {
    std::fprintf(stderr, "the new leader never took a push\n");
    return 1;
  }
  auto first_ms
      = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
  std::printf("failover: promote answered in %.1f ms (%s, epoch %llu); "
              "first push acknowledged %.1f ms after the promote was sent\n",
              promote_ms, leader.c_str(),
              static_cast<unsigned long long>(promoted->slots[0].epoch),
              first_ms);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
