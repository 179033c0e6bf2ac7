// The directories behind the node API: partitions by uuid (the broker) and
// leases by id (a queue).

#include <catch2/catch.hpp>

#include "core/broker/directory.hpp"
#include "core/queue/leases.hpp"

using namespace spool;
using namespace spool::core;
using namespace std::chrono_literals;

namespace {
const mono_time t0 = mono_time{} + 1000h;
}

TEST_CASE("a partition uuid resolves to its queue and partition name",
          "[directory]") {
  partition_directory d;
  d.add("u1", "orders", "Default", 1);
  d.add("u2", "orders", "eu", 1);
  d.add("u3", "events", "Default", 2);
  REQUIRE(d.find("u2"));
  CHECK(d.find("u2")->queue == "orders");
  CHECK(d.find("u2")->partition == "eu");
  CHECK_FALSE(d.find("nope"));
}

TEST_CASE("a deleted queue's partition uuids resolve no more", "[directory]") {
  partition_directory d;
  d.add("u1", "orders", "Default", 1);
  d.add("u2", "orders", "eu", 1);
  d.add("u3", "events", "Default", 2);
  d.drop_queue("orders");
  CHECK_FALSE(d.find("u1"));
  CHECK_FALSE(d.find("u2"));
  CHECK(d.find("u3"));
  CHECK(d.size() == 1);
  d.add("u4", "orders", "Default", 3); // created again by a push: a new id
  CHECK(d.find("u4")->queue == "orders");
  CHECK(d.find("u4")->queue_id == 3);
}

TEST_CASE("a lease id names every partition its pop claimed", "[leases]") {
  lease_directory d;
  d.granted("L", "g", {"a", "b"}, t0 + 30s);
  d.granted("L", "g", {"c"}, t0 + 20s);
  auto* e = d.find("L", t0);
  REQUIRE(e);
  CHECK(e->group == "g");
  CHECK(e->partitions == std::vector<std::string>{"a", "b", "c"});
  CHECK(e->expires == t0 + 30s);
}

TEST_CASE("a lease entry ends when its last partition ends", "[leases]") {
  lease_directory d;
  d.granted("L", "g", {"a", "b"}, t0 + 30s);
  CHECK_FALSE(d.ended("L", "a"));
  CHECK(d.find("L", t0)->partitions == std::vector<std::string>{"b"});
  CHECK(d.ended("L", "b"));
  CHECK_FALSE(d.find("L", t0));
  CHECK(d.size() == 0);
}

TEST_CASE("an expired lease entry is not found and is swept", "[leases]") {
  lease_directory d;
  d.granted("A", "g", {"a"}, t0 + 10s);
  d.granted("B", "g", {"b"}, t0 + 20s);
  d.granted("C", "g", {"c"}, t0 + 30s);
  CHECK_FALSE(d.expired("A", t0 + 10s - 1ns));
  CHECK(d.expired("A", t0 + 10s));
  CHECK_FALSE(d.expired("nope", t0 + 10s));
  CHECK_FALSE(d.find("A", t0 + 10s));    // expiry is exclusive
  CHECK_FALSE(d.expired("A", t0 + 10s)); // find removed it
  CHECK(d.size() == 2);
  d.extended("B", t0 + 40s); // an extend keeps B past C
  auto swept = d.sweep(t0 + 35s, 10);
  CHECK(swept == std::vector<std::string>{"C"});
  CHECK(d.find("B", t0 + 35s));
  CHECK(d.sweep(t0 + 50s, 10) == std::vector<std::string>{"B"});
  CHECK(d.size() == 0);
}

TEST_CASE("a lease sweep removes at most its step", "[leases]") {
  lease_directory d;
  for (int i = 0; i < 5; ++i)
    d.granted("L" + std::to_string(i), "g", {"p"}, t0 + 1s);
  CHECK(d.sweep(t0 + 2s, 3).size() == 3);
  CHECK(d.size() == 2);
  CHECK(d.erase("L3"));
  CHECK_FALSE(d.erase("L3"));
}

TEST_CASE("a partition uuid re-recorded under another queue leaves the old one",
          "[directory]") {
  partition_directory d;
  d.add("u1", "a", "p", 1);
  d.add("u1", "b", "p", 2);
  CHECK(d.find("u1")->queue == "b");
  d.drop_queue("a"); // no longer a's: stays
  CHECK(d.find("u1"));
  d.drop_queue("b");
  CHECK_FALSE(d.find("u1"));
}
