// The peer links on loopback (peer/links.hpp): three nodes admit each other
// and carry one slot's messages each way; a node with a wrong secret is
// refused and hears nothing; a message that names another sender than the
// link's peer is dropped. Real sockets on 127.0.0.1: waits have deadlines,
// never sleeps.

#include <catch2/catch.hpp>

#include "unit/peer/three_links.hpp"

using namespace spool;
using namespace spool::test;

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
