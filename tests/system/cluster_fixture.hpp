#pragma once

// Three real spoold processes on loopback in cluster mode, one shared
// secret, peer ports below the ephemeral range (cluster_test.cpp,
// cluster_history_test.cpp).

#include <catch2/catch.hpp>

#include <random>

#include "system/http_fixture.hpp"
#include "vocab/slot.hpp"

namespace spool::test {

/// A push of messages `first`..`first + n - 1` to `queue`, each with its
/// own transactionId: a push sent again after a 503 (it may have been
/// stored and committed later) is answered `duplicate`, never stored twice.
inline std::string keyed_push(const std::string& queue, int first, int n) {
  json items = json::array();
  for (int i = first; i < first + n; ++i)
    items.push_back({{"queue", queue},
                     {"transactionId", "m" + std::to_string(i)},
                     {"payload", {{"n", i}}}});
  return json{{"items", items}}.dump();
}

/// A loopback port free now below the ephemeral range (32768 and up on
/// Linux), so that no listener on port 0 and no outgoing connection takes
/// it before its node binds it. Each test process starts at a random
/// place: two started together (ctest -j2) have adjacent pids, and ports
/// drawn from their pids would be the same ones, both free until bound.
inline std::uint16_t peer_port() {
  static std::uint32_t next = std::random_device{}() % 12000;
  for (;;) {
    auto port = static_cast<std::uint16_t>(20000 + (next++ % 12000));
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (free)
      return port;
  }
}

struct three_nodes {
  temp_dir dir;
  std::vector<std::unique_ptr<spoold_server>> nodes;

  /// `extra`: more options for every node.
  explicit three_nodes(const std::vector<std::string>& extra = {}) {
    auto secret = dir.path / "secret";
    std::ofstream{secret} << "a shared secret\n";
    std::string peers;
    for (int i = 1; i <= 3; ++i)
      peers += (i > 1 ? "," : "") + ("n" + std::to_string(i))
               + "=127.0.0.1:" + std::to_string(peer_port());
    for (int i = 1; i <= 3; ++i) {
      std::vector<std::string> args{
          "--node-id", "n" + std::to_string(i), "--peers",
          peers,       "--cluster-secret-file", secret.string()};
      args.insert(args.end(), extra.begin(), extra.end());
      nodes.push_back(std::make_unique<spoold_server>(std::move(args)));
    }
  }

  /// Node (0-based) that first leads the slot of `queue`: its first replica.
  static std::size_t leader_of(const std::string& queue) {
    return slot_of(queue, default_slot_count) % 3;
  }

  /// Sends a request to node `n` until it answers other than 503 (its
  /// slot's first election may still run, or the node has not heard from
  /// the leader yet), up to 20 s.
  http_response until_known(std::size_t n, const std::string& method,
                            const std::string& target,
                            const std::string& body = "") {
    http_response r;
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      // A write waits for a majority's fsync: under the sanitizers, with
      // other clusters running beside it, that can pass 15 s (the answer
      // is what is checked, not its speed).
      r = nodes[n]->request(method, target, body, 60s);
      if (r.status != 503)
        return r;
      std::this_thread::sleep_for(50ms);
    }
    return r;
  }
};

} // namespace spool::test
