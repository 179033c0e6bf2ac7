// SPOOL_FAIL_POINTS' reading (vocab/fail_point.hpp): what spoold refuses at
// start with exit 2, and what it names. Nothing here arms a point.

#include <catch2/catch.hpp>

#include "vocab/fail_point.hpp"

using namespace spool;

TEST_CASE("SPOOL_FAIL_POINTS names known points with an optional slot, and "
          "an unknown name or a bad slot is refused naming what is known",
          "[vocab][fail_point]") {
  auto unknown = fail_points::configure("leader-synced");
  REQUIRE(unknown);
  CHECK(*unknown
        == "SPOOL_FAIL_POINTS: unknown fail point 'leader-synced' (known: "
           "leader-synced-before-quorum, fenced-before-answer)");
  CHECK_FALSE(fail_points::named());
  for (auto* bad : {"fenced-before-answer@", "fenced-before-answer@x",
                    "fenced-before-answer@65536", "fenced-before-answer@3x"}) {
    INFO(bad);
    auto err = fail_points::configure(bad);
    REQUIRE(err);
    CHECK(err->find("the slot after '@' must be a number below 65536")
          != std::string::npos);
    CHECK_FALSE(fail_points::named());
  }
  CHECK_FALSE(fail_points::configure(
      " leader-synced-before-quorum@7 , fenced-before-answer,"));
  CHECK(fail_points::named());
  CHECK_FALSE(fail_points::configure(""));
  CHECK_FALSE(fail_points::named());
}
