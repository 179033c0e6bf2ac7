// The peer links on loopback (peer/links.hpp): three nodes admit each other
// and carry one slot's messages each way; a node with a wrong secret is
// refused and hears nothing; a message that names another sender than the
// link's peer is dropped. Real sockets on 127.0.0.1: waits have deadlines,
// never sleeps.

#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "peer/links.hpp"

using namespace spool;
namespace cl = spool::cluster;
using namespace std::chrono_literals;

namespace {

cl::node_id node(std::uint32_t i) {
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
    return cv.wait_for(lock, 10s, [&] {
      for (auto& l : log)
        if (l.find(part) != std::string::npos)
          return true;
      return false;
    });
  }
};

struct three_links {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
      work{io.get_executor()};
  std::vector<std::shared_ptr<peer::links>> nodes;
  std::vector<std::unique_ptr<inbox>> boxes;
  std::thread runner;

  explicit three_links(std::vector<std::string> secrets) {
    for (std::uint32_t i = 0; i < 3; ++i) {
      peer::links_config c;
      c.self = node(i);
      for (std::uint32_t j = 0; j < 3; ++j)
        c.nodes[node(j)] = {"127.0.0.1", 0};
      c.cluster_id = "test-cluster";
      c.secret = secrets[i];
      c.reconnect_min = 20ms;
      c.reconnect_max = 200ms;
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

cl::slot_message append_to(std::uint32_t from, std::uint32_t to,
                           std::uint16_t slot, std::string payload) {
  cl::append_req a;
  a.epoch = 3;
  a.prev = {2, 9};
  a.entries.push_back(
      cl::make_entry(3, 10, cl::entry_kind::data, std::move(payload)));
  a.commit = 9;
  return {slot, {node(from), node(to), a}};
}

} // namespace

TEST_CASE("peer links admit each other and carry one slot's messages both "
          "ways, in order",
          "[peer][links]") {
  three_links t{{"s3cret", "s3cret", "s3cret"}};
  for (int i = 0; i < 50; ++i) {
    t.nodes[0]->send(append_to(0, 1, 7, "to n2 #" + std::to_string(i)));
    t.nodes[0]->send(append_to(0, 2, 7, "to n3 #" + std::to_string(i)));
  }
  t.nodes[1]->send(append_to(1, 0, 8, "to n1"));
  REQUIRE(t.boxes[1]->wait_for(50));
  REQUIRE(t.boxes[2]->wait_for(50));
  REQUIRE(t.boxes[0]->wait_for(1));
  std::lock_guard<std::mutex> g{t.boxes[1]->mtx};
  for (int i = 0; i < 50; ++i) {
    auto& m = t.boxes[1]->got[i];
    CHECK(m.slot == 7);
    CHECK(m.env.from == node(0));
    CHECK(m.env.to == node(1));
    auto* a = std::get_if<cl::append_req>(&m.env.msg);
    REQUIRE(a);
    REQUIRE(a->entries.size() == 1);
    CHECK(a->entries[0].payload == "to n2 #" + std::to_string(i));
    CHECK(cl::checksum_ok(a->entries[0]));
  }
  CHECK(t.nodes[0]->stats().connects == 2);
}

TEST_CASE("a node with a wrong cluster secret is refused with a log line and "
          "hears nothing",
          "[peer][links]") {
  three_links t{{"s3cret", "s3cret", "guess"}};
  t.nodes[0]->send(append_to(0, 2, 1, "secret stuff"));
  t.nodes[0]->send(append_to(0, 1, 1, "fine"));
  REQUIRE(t.boxes[1]->wait_for(1));
  REQUIRE(t.boxes[2]->wait_log("refused"));
  {
    std::lock_guard<std::mutex> g{t.boxes[2]->mtx};
    CHECK(t.boxes[2]->got.empty());
  }
  CHECK(t.nodes[2]->stats().refused + t.nodes[0]->stats().refused > 0);
}

TEST_CASE("a message naming another sender than its link's peer is dropped",
          "[peer][links]") {
  three_links t{{"s3cret", "s3cret", "s3cret"}};
  t.nodes[0]->send(append_to(2, 1, 1, "forged: from n3 on n1's link"));
  t.nodes[0]->send(append_to(0, 1, 1, "real"));
  REQUIRE(t.boxes[1]->wait_for(1));
  std::lock_guard<std::mutex> g{t.boxes[1]->mtx};
  REQUIRE(t.boxes[1]->got.size() == 1);
  CHECK(std::get<cl::append_req>(t.boxes[1]->got[0].env.msg).entries[0].payload
        == "real");
  CHECK(t.nodes[1]->stats().dropped == 1);
}
