// A coordinator respawns a dead child only once every stage open on it
// settled (core/queue/open_stages.hpp).

#include <catch2/catch.hpp>

#include "core/queue/open_stages.hpp"

using stages = spool::core::open_stages<int>;

TEST_CASE("a dead child with no open stage is respawned at once",
          "[unit][core][respawn]") {
  stages s;
  CHECK_FALSE(s.defer("p", 1));
  CHECK_FALSE(s.closed("p")); // nothing opened, nothing waits
}

TEST_CASE("a respawn waits for the last open stage of its child, not another "
          "child's",
          "[unit][core][respawn]") {
  stages s;
  s.opened("p");
  s.opened("p");
  s.opened("q");
  REQUIRE(s.defer("p", 7));
  CHECK(s.is_open("p"));
  CHECK_FALSE(s.closed("q")); // q's stage: p still waits
  CHECK_FALSE(s.closed("p")); // one of p's two
  auto go = s.closed("p");
  REQUIRE(go);
  CHECK(*go == 7);
  CHECK_FALSE(s.is_open("p"));
  CHECK_FALSE(s.closed("p")); // the respawn is handed out once
}
