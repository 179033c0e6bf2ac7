// What one big pop answer costs spoold in memory, over both doors.
//
// A spoold child gets 64 messages of 1 MiB (random letters, a JSON string
// each) in one partition; every message is read once first (a warm-up
// group), so the LMDB pages are resident before anything is measured. Then,
// per door (HTTP, msgpack) and answer size (1 MiB: batch 1; 64 MiB: batch
// 64), a fresh group pops with autoAck, --runs times, and the bench prints:
//   - peak growth ÷ the answer's payload bytes, from spoold's VmHWM (the
//     high-water mark of its whole RSS, reset before each pop through
//     /proc/PID/clear_refs) and from RssAnon sampled every 0.5 ms (heap
//     only: the LMDB map's file pages are not in it);
//   - RssAnon growth right after the answer is read, and 1 s later
//     (memory given back?).
// With --binary the payloads are bytes (pushed over msgpack), which an HTTP
// pop answers in base64 (4/3 of the payload).
// Usage: pop_memory_bench [--runs N] [--binary] [--spoold PATH]

#include <CLI/CLI.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/spoold_child.hpp"
#include "client/client.hpp"

namespace {

using namespace std::chrono_literals;
using spool::bench::spoold_child;

constexpr std::size_t mib = 1u << 20;

long status_kib(pid_t pid, const char* field) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  std::string key = std::string{field} + ":";
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0)
      return std::stol(line.substr(key.size()));
  return 0;
}

/// One HTTP/1.1 keep-alive connection: a request out, its whole answer in.
class http_conn {
public:
  explicit http_conn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("connect");
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~http_conn() {
    ::close(fd_);
  }
  /// The status and the body's size (the body is read and dropped).
  std::pair<int, std::size_t> request(const std::string& method,
                                      const std::string& target,
                                      const std::string& body = "") {
    std::string r = method + " " + target + " HTTP/1.1\r\nHost: b\r\n";
    if (!body.empty())
      r += "Content-Type: application/json\r\nContent-Length: "
           + std::to_string(body.size()) + "\r\n";
    r += "\r\n" + body;
    for (std::size_t off = 0; off < r.size();) {
      auto n = ::send(fd_, r.data() + off, r.size() - off, MSG_NOSIGNAL);
      if (n <= 0)
        throw std::runtime_error("send");
      off += static_cast<std::size_t>(n);
    }
    std::string head;
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      fill();
    head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    int status = std::stoi(head.substr(9, 3));
    std::size_t len = 0;
    auto cl = head.find("Content-Length: ");
    if (cl != std::string::npos)
      len = std::stoul(head.substr(cl + 16));
    std::size_t got = std::min(len, buf_.size());
    buf_.erase(0, got);
    std::vector<char> tmp(1 << 20);
    while (got < len) { // read the body, keep none of it
      auto n = ::recv(fd_, tmp.data(), std::min(tmp.size(), len - got), 0);
      if (n <= 0)
        throw std::runtime_error("recv");
      got += static_cast<std::size_t>(n);
    }
    return {status, len};
  }

private:
  void fill() {
    char tmp[65536];
    auto n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0)
      throw std::runtime_error("recv");
    buf_.append(tmp, static_cast<std::size_t>(n));
  }
  int fd_;
  std::string buf_;
};

struct figures {
  double hwm_ratio = 0;  ///< VmHWM growth ÷ payload bytes
  double anon_ratio = 0; ///< sampled RssAnon peak growth ÷ payload bytes
  long after_kib = 0;    ///< RssAnon growth right after the answer
  long settled_kib = 0;  ///< RssAnon growth 1 s later
  long poked_kib = 0;    ///< and after a small request
  std::size_t answer_bytes = 0;
};

/// Pops with `pop` (which answers the answer's bytes) while a thread
/// samples spoold's RssAnon.
template <class Pop>
figures measure(pid_t pid, std::size_t payload, Pop pop) {
  {
    std::ofstream clear{"/proc/" + std::to_string(pid) + "/clear_refs"};
    clear << "5"; // VmHWM := VmRSS
  }
  long rss0 = status_kib(pid, "VmRSS");
  long anon0 = status_kib(pid, "RssAnon");
  std::atomic<bool> done{false};
  std::atomic<long> anon_peak{anon0};
  std::thread sampler{[&] {
    while (!done) {
      auto a = status_kib(pid, "RssAnon");
      if (a > anon_peak)
        anon_peak = a;
      std::this_thread::sleep_for(500us);
    }
  }};
  figures f;
  f.answer_bytes = pop();
  long after = status_kib(pid, "RssAnon");
  done = true;
  sampler.join();
  long hwm = status_kib(pid, "VmHWM");
  auto kib = static_cast<double>(payload) / 1024.0;
  f.hwm_ratio = static_cast<double>(hwm - rss0) / kib;
  f.anon_ratio = static_cast<double>(std::max(anon_peak.load(), after) - anon0)
                 / kib;
  f.after_kib = after - anon0;
  std::this_thread::sleep_for(1s);
  f.settled_kib = status_kib(pid, "RssAnon") - anon0;
  return f;
}

std::string letters(std::size_t n, std::mt19937_64& rng) {
  static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string s(n, 'a');
  for (auto& c : s)
    c = abc[rng() % 52];
  return s;
}


/// A fresh spoold with `count` messages of 1 MiB in big/p, settled: JSON
/// strings pushed over HTTP, or (`binary`) bytes pushed over msgpack, which
/// an HTTP pop answers in base64.
void load(spoold_child& s, const std::string& spoold, int count, bool binary) {
  s.start(spoold, 0, "strict");
  std::mt19937_64 rng{42};
  if (binary) {
    spool::client::options co;
    co.port = static_cast<std::uint16_t>(s.mp_port);
    spool::client::client mp{co};
    for (int done = 0; done < count;) {
      std::vector<spool::node::push_item> items;
      for (int i = 0; i < 8 && done < count; ++i, ++done) {
        spool::node::push_item it;
        it.queue = "big";
        it.partition = "p";
        it.payload = letters(mib, rng);
        it.binary = true;
        items.push_back(std::move(it));
      }
      if (!mp.push(std::move(items)))
        throw std::runtime_error("push failed");
    }
    std::this_thread::sleep_for(1s);
    return;
  }
  http_conn c{s.port};
  const std::size_t text = mib - 2; // a JSON string of 1 MiB with its quotes
  for (int done = 0; done < count;) {
    std::string body = R"({"items":[)";
    for (int i = 0; i < 8 && done < count; ++i, ++done)
      body += std::string{i ? "," : ""}
              + R"({"queue":"big","partition":"p","payload":")"
              + letters(text, rng) + "\"}";
    body += "]}";
    if (c.request("POST", "/api/v1/push", body).first != 201)
      throw std::runtime_error("push failed");
  }
  std::this_thread::sleep_for(1s); // the pushes' memory given back
}

std::size_t http_pop(const spoold_child& s, int batch) {
  http_conn c{s.port};
  auto [status, len] = c.request(
      "GET", "/api/v1/pop/queue/big/partition/p?autoAck=true&consumerGroup=g"
                 "&batch="
                 + std::to_string(batch));
  if (status != 200)
    throw std::runtime_error("pop: " + std::to_string(status));
  return len;
}

std::size_t mp_pop(spool::client::client& mp, int batch) {
  spool::node::pop_request p;
  p.queue = "big";
  p.partition = "p";
  p.group = "g";
  p.batch = static_cast<std::size_t>(batch);
  p.auto_ack = true;
  auto r = mp.pop(p);
  if (!r || r->messages.empty())
    throw std::runtime_error("msgpack pop failed");
  std::size_t n = 0;
  for (auto& m : r->messages)
    n += m.payload.size();
  return n;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"pop_memory_bench: spoold's memory for one big pop answer"};
  int runs = 3;
  bool binary = false;
  std::string spoold = SPOOLD_PATH;
  app.add_option("--runs", runs, "pops per door and size (a fresh spoold each)")
      ->check(CLI::Range(1, 50));
  app.add_option("--spoold", spoold, "the spoold binary");
  app.add_flag("--binary", binary,
               "binary payloads (pushed over msgpack; base64 in HTTP answers)");
  CLI11_PARSE(app, argc, argv);

  std::printf("pop_memory_bench: %s, %d runs per row, each on a fresh spoold\n"
              "  heap/pay: growth of the high-water mark less the LMDB file "
              "pages the pop brought in, per payload byte\n"
              "  anon/pay: RssAnon sampled every 0.5 ms, peak growth per "
              "payload byte\n",
              spoold.c_str(), runs);
  std::printf("%-8s %-7s %12s %9s %9s %11s %11s %11s %11s\n", "door",
              "answer", "answer B", "heap/pay", "anon/pay", "start KiB",
              "after KiB", "1s KiB", "poked KiB");
  for (std::string door : {"http", "msgpack"})
    for (int batch : {1, 64}) {
      for (int r = 0; r < runs; ++r) {
        spoold_child s;
        load(s, spoold, batch, binary);
        auto payload = static_cast<std::size_t>(batch) * mib;
        long anon0 = status_kib(s.pid, "RssAnon");
        long file0 = status_kib(s.pid, "RssFile");
        figures f;
        if (door == "http") {
          f = measure(s.pid, payload, [&] { return http_pop(s, batch); });
        } else {
          spool::client::options co;
          co.port = static_cast<std::uint16_t>(s.mp_port);
          spool::client::client mp{co};
          f = measure(s.pid, payload, [&] { return mp_pop(mp, batch); });
        }
        // Any request after it (here a pop of an empty queue): the worker
        // threads that freed memory run again.
        {
          http_conn c{s.port};
          c.request("GET", "/api/v1/pop/queue/none?autoAck=true");
        }
        std::this_thread::sleep_for(100ms);
        f.poked_kib = status_kib(s.pid, "RssAnon") - anon0;
        // The pop's LMDB pages stay resident: not the answer's cost.
        double file = static_cast<double>(status_kib(s.pid, "RssFile") - file0);
        double heap = f.hwm_ratio - file / (static_cast<double>(payload) / 1024);
        std::printf("%-8s %4d MiB %12zu %9.2f %9.2f %11ld %11ld %11ld %11ld\n",
                    door.c_str(), batch, f.answer_bytes, heap, f.anon_ratio,
                    anon0, f.after_kib, f.settled_kib, f.poked_kib);
      }
    }
  return 0;
}
