#pragma once

// Three nodes' peer links on 127.0.0.1 (peer/links.hpp), each with an inbox
// of what it received and of its log lines; TLS on each when given.

#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "peer/links.hpp"

namespace spool::test {

namespace cl = spool::cluster;
using namespace std::chrono_literals;

inline cl::node_id node(std::uint32_t i) {
  return cl::node_id{i};
}

struct inbox {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<cl::slot_message> got;
  std::vector<std::string> log;

  /// Waits up to 10 s for `n` messages.
  bool wait_for(std::size_t n) {
    std::unique_lock<std::mutex> lock{mtx};
    return cv.wait_for(lock, 10s, [&] { return got.size() >= n; });
  }
  bool wait_log(const std::string& part) {
    std::unique_lock<std::mutex> lock{mtx};
    return cv.wait_for(lock, 10s, [&] { return has_log(part); });
  }
  bool has_log(const std::string& part) const {
    for (auto& l : log)
      if (l.find(part) != std::string::npos)
        return true;
    return false;
  }
  std::size_t received() {
    std::lock_guard<std::mutex> g{mtx};
    return got.size();
  }
};

/// A node's TLS on its links (none: plain).
struct node_tls {
  std::shared_ptr<const tls::context> server;
  std::shared_ptr<const tls::context> client;
};

struct three_links {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
      work{io.get_executor()};
  std::vector<std::shared_ptr<peer::links>> nodes;
  std::vector<std::unique_ptr<inbox>> boxes;
  std::thread runner;

  explicit three_links(std::vector<std::string> secrets,
                       std::vector<node_tls> tls = {},
                       std::chrono::milliseconds handshake_timeout = 5000ms) {
    for (std::uint32_t i = 0; i < 3; ++i) {
      peer::links_config c;
      c.self = node(i);
      for (std::uint32_t j = 0; j < 3; ++j)
        c.nodes[node(j)] = {"127.0.0.1", 0};
      c.cluster_id = "test-cluster";
      c.secret = secrets[i];
      c.reconnect_min = 20ms;
      c.reconnect_max = 200ms;
      c.handshake_timeout = handshake_timeout;
      if (i < tls.size()) {
        c.tls_server = tls[i].server;
        c.tls_client = tls[i].client;
      }
      boxes.push_back(std::make_unique<inbox>());
      auto* box = boxes.back().get();
      nodes.push_back(std::make_shared<peer::links>(
          io, c,
          [box, this, i](cl::slot_message m, std::size_t bytes) {
            {
              std::lock_guard<std::mutex> g{box->mtx};
              box->got.push_back(std::move(m));
            }
            box->cv.notify_all();
            nodes[i]->consumed(bytes);
          },
          [box](const std::string& line) {
            {
              std::lock_guard<std::mutex> g{box->mtx};
              box->log.push_back(line);
            }
            box->cv.notify_all();
          }));
      REQUIRE(nodes.back()->listen() == "");
    }
    for (auto& l : nodes)
      for (std::uint32_t j = 0; j < 3; ++j)
        l->set_address(node(j), {"127.0.0.1", nodes[j]->port()});
    for (auto& l : nodes)
      l->start();
    runner = std::thread{[this] { io.run(); }};
  }
  ~three_links() {
    for (auto& l : nodes)
      l->stop();
    work.reset();
    io.stop();
    runner.join();
  }
};

inline cl::slot_message append_to(std::uint32_t from, std::uint32_t to,
                                  std::uint16_t slot, std::string payload) {
  cl::append_req a;
  a.epoch = 3;
  a.prev = {2, 9};
  a.entries.push_back(
      cl::make_entry(3, 10, cl::entry_kind::data, std::move(payload)));
  a.commit = 9;
  return {slot, {node(from), node(to), a}};
}

} // namespace spool::test
