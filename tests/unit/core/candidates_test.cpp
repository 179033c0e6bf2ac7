// Empty-scan watermarks and the candidate set (issue "replay" §4): which
// partitions a group's wildcard pops ask.

#include <catch2/catch.hpp>

#include "core/queue/candidates.hpp"

using spool::core::candidate_set;
using spool::storage::offset;
using order = std::vector<std::size_t>;

TEST_CASE("a group never seen has every partition as a candidate, in "
          "rotation order",
          "[unit][candidates]") {
  candidate_set c;
  c.resize(4);
  CHECK(c.order("g", 2) == order{2, 3, 0, 1});
  CHECK(c.is_candidate("g", 3));
}

TEST_CASE("a partition a group found empty at last offset X is skipped until "
          "its last offset passes X",
          "[unit][candidates]") {
  candidate_set c;
  c.resize(3);
  c.found_empty("g", 1, offset{9}, offset{9}, c.generation());
  CHECK(c.order("g", 0) == order{0, 2});
  CHECK(c.order("other", 0) == order{0, 1, 2}); // only the group that found it
  c.pushed(1, offset{9});                       // not past X
  CHECK_FALSE(c.is_candidate("g", 1));
  c.pushed(1, offset{10});
  CHECK(c.order("g", 2) == order{2, 0, 1});
}

TEST_CASE("a push that landed while the scan ran keeps the partition a "
          "candidate",
          "[unit][candidates]") {
  candidate_set c;
  c.resize(2);
  c.found_empty("g", 0, offset{4}, offset{6}, c.generation());
  CHECK(c.is_candidate("g", 0));
}

TEST_CASE("a seek or requeue puts a partition back, a subscription update "
          "puts every partition back",
          "[unit][candidates]") {
  candidate_set c;
  c.resize(3);
  c.found_empty("g", 0, offset{1}, offset{1}, c.generation());
  c.found_empty("g", 2, offset{1}, offset{1}, c.generation());
  c.add("g", 0);
  CHECK(c.order("g", 0) == order{0, 1});
  c.forget("g");
  CHECK(c.order("g", 0) == order{0, 1, 2});
}

TEST_CASE("new partitions are candidates for every group",
          "[unit][candidates]") {
  candidate_set c;
  c.resize(1);
  c.found_empty("g", 0, offset{0}, offset{0}, c.generation());
  c.resize(3);
  CHECK(c.order("g", 0) == order{1, 2});
}

TEST_CASE("an empty report asked before a seek or a subscription update is "
          "stale: the partition stays a candidate",
          "[candidates]") {
  candidate_set c;
  c.resize(2);
  auto asked = c.generation();
  c.add("g", 1); // a seek brought partition 1 back meanwhile
  c.found_empty("g", 1, offset{5}, offset{5}, asked);
  CHECK(c.is_candidate("g", 1));
  asked = c.generation();
  c.forget("g"); // a subscription update
  c.found_empty("g", 0, offset{5}, offset{5}, asked);
  CHECK(c.is_candidate("g", 0));
  // A report asked after them applies.
  c.found_empty("g", 0, offset{5}, offset{5}, c.generation());
  CHECK_FALSE(c.is_candidate("g", 0));
}
