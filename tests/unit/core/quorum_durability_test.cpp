// The cluster's durability policy: a group is durable once replication has
// committed every slot it wrote at or past its seq, in commit order.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/writer/quorum_durability.hpp"

using spool::actors::quorum_durability;

TEST_CASE("a group is durable only once every slot it wrote is committed at "
          "or past its seq",
          "[writer][quorum]") {
  quorum_durability q;
  bool durable = false;
  q.committed({{3, 10}, {7, 2}}, [&] { durable = true; });
  q.advance(3, 12);
  CHECK_FALSE(durable);
  q.advance(7, 1);
  CHECK_FALSE(durable);
  q.advance(7, 2);
  CHECK(durable);
  CHECK(q.waiting() == 0);
}

TEST_CASE("groups are declared durable in commit order: a group covered "
          "already waits for the one before it",
          "[writer][quorum]") {
  quorum_durability q;
  std::vector<std::string> order;
  q.committed({{1, 5}}, [&] { order.push_back("a"); });
  q.committed({{2, 1}}, [&] { order.push_back("b"); });
  q.committed({}, [&] { order.push_back("c"); }); // wrote nothing
  q.advance(2, 1);
  CHECK(order.empty());
  CHECK(q.waiting() == 3);
  q.advance(1, 5);
  CHECK(order == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("a commit point that goes back changes nothing, and a group "
          "committed after its slot's point is durable at once",
          "[writer][quorum]") {
  quorum_durability q;
  q.advance(4, 9);
  q.advance(4, 3);
  bool durable = false;
  q.committed({{4, 9}}, [&] { durable = true; });
  CHECK(durable);
  CHECK(std::string{q.name()} == "quorum");
}
