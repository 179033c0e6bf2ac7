// A group deletion's votes folded into one verdict, and the idle sweep's
// choice (semantics.md §8, groupIdleSeconds).

#include <catch2/catch.hpp>

#include "core/queue/group_deletion.hpp"

using namespace spool;
using namespace spool::core;
using outcome = deletion_verdict::outcome;

TEST_CASE("a group deletion deletes the rows of the partitions where the "
          "group had state, and of those that did not answer",
          "[core][deletion]") {
  std::vector<std::optional<delete_vote>> votes{
      delete_vote{true, false, false}, delete_vote{false, false, false},
      std::nullopt};
  auto v = fold_votes(votes, {false, false, false});
  CHECK(v.result == outcome::go);
  CHECK(v.rows == std::vector<std::size_t>{0, 2});
}

TEST_CASE("one active partition refuses the whole group deletion",
          "[core][deletion]") {
  std::vector<std::optional<delete_vote>> votes{delete_vote{true, false, false},
                                                delete_vote{true, true, false}};
  auto v = fold_votes(votes, {false, false});
  CHECK(v.result == outcome::active);
  CHECK(v.rows.empty());
}

TEST_CASE("a restarting cursor, or a dead partition with a stage open, "
          "refuses the deletion as restarting",
          "[core][deletion]") {
  std::vector<std::optional<delete_vote>> restarting{
      delete_vote{true, true, true}, delete_vote{true, true, false}};
  CHECK(fold_votes(restarting, {false, false}).result == outcome::restarting);

  std::vector<std::optional<delete_vote>> dead{delete_vote{true, false, false},
                                               std::nullopt};
  CHECK(fold_votes(dead, {false, true}).result == outcome::restarting);
  CHECK(fold_votes(dead, {false, false}).result == outcome::go);
}

TEST_CASE("an idle sweep deletes the groups idle for groupIdleSeconds, "
          "without a lease or a parked pop",
          "[core][deletion][idle]") {
  idle_sweep s;
  s.saw("old", 1'000, false);
  s.saw("old", 2'000, false); // its latest activity counts
  s.saw("fresh", 9'000, false);
  s.saw("leased", 1'000, true);
  s.saw("waiting", 1'000, false);
  s.parked("waiting");
  s.parked("unknown"); // a parked group with no cursor is not listed
  auto idle = s.idle(10'000, 5'000);
  REQUIRE(idle.size() == 1);
  CHECK(idle[0].group == "old");
  CHECK(idle[0].last == 2'000); // the deletion's cutoff
}

TEST_CASE("the idle sweep runs every groupIdleSeconds, within 1..60 s",
          "[core][deletion][idle]") {
  using std::chrono::seconds;
  CHECK(idle_sweep_interval(0) == seconds{1});
  CHECK(idle_sweep_interval(30) == seconds{30});
  CHECK(idle_sweep_interval(3600) == seconds{60});
}
