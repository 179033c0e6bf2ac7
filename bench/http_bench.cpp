// HTTP benchmarks against a real spoold (started here on a free loopback
// port with a data folder of its own, or given with --port):
//
//   --mode push      C keep-alive connections, each pushing batches of B
//                    messages of S bytes one request at a time for T
//                    seconds: msgs/s, and CPU-seconds per million messages
//                    of spoold (from /proc) and of this client.
//   --mode longpoll  N connections each parking a long-poll pop (one group,
//                    autoAck); spoold's RSS with all of them parked; then R
//                    rounds of one push each, timing how long after the push
//                    was sent, and after its answer arrived, a parked pop's
//                    answer arrives (p50/p99/max). The woken connection
//                    parks again.
//
// One epoll loop drives every connection (no thread per connection).

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "spoold_child.hpp"

namespace {

using spool::bench::self_cpu;
using server = spool::bench::spoold_child;

using clk = std::chrono::steady_clock;

struct options {
  std::string mode = "push";
  std::string spoold = SPOOLD_PATH;
  int port = 0;
  int connections = 32;
  int batch = 100;
  int bytes = 100;
  double seconds = 5;
  int parked = 10'000;
  int rounds = 2'000;
  std::string durability = "strict";
};

/// The options (`--help` lists them); a bad one exits 2.
options parse(int argc, char** argv) {
  options o;
  CLI::App app{"HTTP against a real spoold (bench/README.md)"};
  app.add_option("--mode", o.mode)->check(CLI::IsMember({"push", "longpoll"}));
  app.add_option("--spoold", o.spoold, "the spoold to start");
  app.add_option("--port", o.port, "a running spoold's HTTP port");
  app.add_option("--connections", o.connections);
  app.add_option("--batch", o.batch);
  app.add_option("--bytes", o.bytes);
  app.add_option("--seconds", o.seconds);
  app.add_option("--parked", o.parked);
  app.add_option("--rounds", o.rounds);
  app.add_option("--durability", o.durability);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  return o;
}

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

void send_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    auto n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n > 0)
      off += static_cast<std::size_t>(n);
    else if (errno != EAGAIN) {
      std::perror("send");
      std::exit(1);
    }
  }
}

/// One connection's input: complete responses are counted off the buffer.
struct conn {
  int fd = -1;
  std::string in;
  bool acking = false;
  /// The complete responses read since the last call: status and body.
  std::vector<std::pair<int, std::string>> take_responses() {
    std::vector<std::pair<int, std::string>> out;
    while (true) {
      auto head = in.find("\r\n\r\n");
      if (head == std::string::npos)
        break;
      int status = std::atoi(in.c_str() + 9);
      std::size_t len = 0;
      auto cl = in.find("Content-Length: ");
      if (cl != std::string::npos && cl < head)
        len = std::strtoul(in.c_str() + cl + 16, nullptr, 10);
      if (in.size() < head + 4 + len)
        break;
      out.emplace_back(status, in.substr(head + 4, len));
      in.erase(0, head + 4 + len);
    }
    return out;
  }
  bool read_some() {
    char buf[65536];
    while (true) {
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0)
        in.append(buf, static_cast<std::size_t>(n));
      else if (n == 0)
        return false;
      else
        return errno == EAGAIN;
    }
  }
};

std::string request(const std::string& method, const std::string& target,
                    const std::string& body = "") {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: b\r\n";
  if (!body.empty())
    r += "Content-Type: application/json\r\nContent-Length: "
         + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + body;
}

std::string push_body(int batch, int bytes, const std::string& partition) {
  std::string payload
      = "\""
        + std::string(static_cast<std::size_t>(std::max(0, bytes - 2)), 'x')
        + "\"";
  std::string items;
  for (int i = 0; i < batch; ++i) {
    if (i)
      items += ',';
    items += R"({"queue":"bench","partition":")" + partition + R"(","payload":)"
             + payload + "}";
  }
  return R"({"items":[)" + items + "]}";
}

int run_push(const options& o, server& s) {
  int ep = ::epoll_create1(0);
  std::vector<conn> cs(static_cast<std::size_t>(o.connections));
  std::vector<std::string> bodies;
  for (int i = 0; i < o.connections; ++i) {
    cs[i].fd = connect_to(s.port);
    epoll_event ev{EPOLLIN, {.u32 = static_cast<std::uint32_t>(i)}};
    ::epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
    // One partition per connection (a connection's pushes are in order).
    bodies.push_back(
        request("POST", "/api/v1/push",
                push_body(o.batch, o.bytes, "c" + std::to_string(i))));
  }
  auto warm_end = clk::now() + std::chrono::milliseconds{500};
  bool measuring = false;
  long requests = 0, errors = 0;
  double cpu0 = 0, self0 = 0;
  clk::time_point t0;
  auto end = warm_end
             + std::chrono::duration_cast<clk::duration>(
                 std::chrono::duration<double>{o.seconds});
  for (int i = 0; i < o.connections; ++i)
    send_all(cs[i].fd, bodies[i]);
  std::vector<epoll_event> evs(256);
  while (clk::now() < end) {
    if (!measuring && clk::now() >= warm_end) {
      measuring = true;
      requests = errors = 0;
      cpu0 = s.cpu();
      self0 = self_cpu();
      t0 = clk::now();
    }
    int n = ::epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 100);
    for (int k = 0; k < n; ++k) {
      auto& c = cs[evs[k].data.u32];
      if (!c.read_some()) {
        std::fprintf(stderr, "connection closed\n");
        return 1;
      }
      for (auto& [st, body] : c.take_responses()) {
        ++requests;
        errors += st != 201;
        send_all(c.fd, bodies[evs[k].data.u32]);
      }
    }
  }
  double secs = std::chrono::duration<double>(clk::now() - t0).count();
  double msgs = static_cast<double>(requests) * o.batch;
  double server_cpu = s.cpu() - cpu0, client_cpu = self_cpu() - self0;
  std::printf("push: %d connections, batches of %d x %d B, durability %s\n",
              o.connections, o.batch, o.bytes, o.durability.c_str());
  std::printf("  %.0f msgs/s (%.0f requests/s, %ld errors) over %.1f s\n",
              msgs / secs, requests / secs, errors, secs);
  std::printf("  spoold CPU %.2f s/M msgs (%.0f%% of a core); client CPU "
              "%.2f s/M msgs\n",
              server_cpu / msgs * 1e6, server_cpu / secs * 100,
              client_cpu / msgs * 1e6);
  return errors == 0 ? 0 : 1;
}

double pct(std::vector<double>& v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()))];
}

/// An ack of the message a pop answered (its partitionId and transactionId).
std::string ack_of(const std::string& pop) {
  auto field = [&](const std::string& name) {
    auto at = pop.find("\"" + name + "\":\"");
    auto from = at + name.size() + 4;
    return pop.substr(from, pop.find('"', from) - from);
  };
  auto msgs = pop.find("\"messages\"");
  auto tx_at = pop.find("\"transactionId\":\"", msgs);
  auto tx_from = tx_at + 17;
  auto tx = pop.substr(tx_from, pop.find('"', tx_from) - tx_from);
  return request("POST", "/api/v1/ack",
                 R"({"consumerGroup":"g","transactionId":")" + tx
                     + R"(","partitionId":")" + field("partitionId")
                     + R"(","leaseId":")" + field("leaseId") + R"("})");
}

int run_longpoll(const options& o, server& s) {
  int ep = ::epoll_create1(0);
  std::vector<conn> cs(static_cast<std::size_t>(o.parked));
  // One group: a push wakes one parked pop (the first parked). It acks what
  // it got (outside the timed window), which ends its lease, then parks
  // again behind the ack.
  auto park = request(
      "GET", "/api/v1/pop/queue/lp?wait=true&timeout=300000&consumerGroup=g");
  long rss0 = s.rss_kb();
  for (int i = 0; i < o.parked; ++i) {
    cs[i].fd = connect_to(s.port);
    epoll_event ev{EPOLLIN, {.u32 = static_cast<std::uint32_t>(i)}};
    ::epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
    send_all(cs[i].fd, park);
  }
  // Wait until every pop is parked (the node counts them).
  auto metric = [&] {
    int fd = connect_to(s.port);
    conn m{fd, {}};
    send_all(fd, request("GET", "/metrics/prometheus"));
    auto deadline = clk::now() + std::chrono::seconds{10};
    while (clk::now() < deadline) {
      m.read_some();
      auto head = m.in.find("\r\n\r\n");
      auto cl = m.in.find("Content-Length: ");
      if (head != std::string::npos && cl != std::string::npos
          && m.in.size()
                 >= head + 4
                        + std::strtoul(m.in.c_str() + cl + 16, nullptr, 10))
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
    ::close(fd);
    auto at = m.in.find("\nspool_parked_pops ");
    return at == std::string::npos ? -1 : std::atoi(m.in.c_str() + at + 19);
  };
  auto deadline = clk::now() + std::chrono::seconds{60};
  int parked = 0;
  while ((parked = metric()) < o.parked && clk::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  long rss = s.rss_kb();
  std::printf("longpoll: %d parked (node reports %d); spoold RSS %.1f MB "
              "(%.1f MB before the connections), durability %s\n",
              o.parked, parked, rss / 1024.0, rss0 / 1024.0,
              o.durability.c_str());
  int pfd = connect_to(s.port);
  conn pc{pfd, {}};
  constexpr std::uint32_t pusher = 0xFFFFFFFF;
  epoll_event pev{EPOLLIN, {.u32 = pusher}};
  ::epoll_ctl(ep, EPOLL_CTL_ADD, pfd, &pev);
  auto push = request("POST", "/api/v1/push",
                      R"({"items":[{"queue":"lp","payload":{"x":1}}]})");
  std::vector<double> from_send, from_answer;
  int acking = 0; // connections whose ack is in flight
  std::vector<epoll_event> evs(64);
  for (int r = 0; r < o.rounds; ++r) {
    auto t_send = clk::now();
    send_all(pfd, push);
    clk::time_point t_answer{}, t_woken{};
    bool answered = false, woken = false;
    while (!answered || !woken || acking > 0) {
      int n = ::epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 1000);
      for (int k = 0; k < n; ++k) {
        if (evs[k].data.u32 == pusher) {
          pc.read_some();
          if (!pc.take_responses().empty()) {
            answered = true;
            t_answer = clk::now();
          }
          continue;
        }
        auto& c = cs[evs[k].data.u32];
        c.read_some();
        for (auto& [st, body] : c.take_responses()) {
          if (c.acking) { // the ack's answer: park again
            c.acking = false;
            --acking;
            send_all(c.fd, park);
          } else if (st == 200) {
            if (!woken) {
              woken = true;
              t_woken = clk::now();
            }
            send_all(c.fd, ack_of(body));
            c.acking = true;
            ++acking;
          } else { // 204: the long poll's timeout; park again
            send_all(c.fd, park);
          }
        }
      }
      if (answered && !woken
          && clk::now() - t_answer > std::chrono::seconds{5}) {
        std::fprintf(stderr, "round %d: no parked pop woke\n", r);
        return 1;
      }
    }
    from_send.push_back(
        std::chrono::duration<double, std::micro>(t_woken - t_send).count());
    from_answer.push_back(
        std::chrono::duration<double, std::micro>(t_woken - t_answer).count());
  }
  std::printf("  wake after the push was sent:     p50 %.0f us, p99 %.0f us, "
              "max %.0f us (%d rounds)\n",
              pct(from_send, 0.5), pct(from_send, 0.99), pct(from_send, 1.0),
              o.rounds);
  std::printf("  wake after the push was answered: p50 %.0f us, p99 %.0f us, "
              "max %.0f us\n",
              pct(from_answer, 0.5), pct(from_answer, 0.99),
              pct(from_answer, 1.0));
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto o = parse(argc, argv);
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
  ::signal(SIGPIPE, SIG_IGN);
  server s;
  s.start(o.spoold, o.port, o.durability, o.parked);
  if (o.mode == "push")
    return run_push(o, s);
  if (o.mode == "longpoll")
    return run_longpoll(o, s);
  std::fprintf(stderr, "--mode push|longpoll\n");
  return 2;
}
