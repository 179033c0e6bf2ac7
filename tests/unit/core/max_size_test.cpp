// maxSize (semantics.md §2): fit, trim, full, and the answer after trims.

#include <catch2/catch.hpp>

#include "core/queue/max_size.hpp"

using namespace spool;
using namespace spool::core;
using outcome = room_check::outcome;

TEST_CASE("a push fits maxSize, needs room made, or can never fit",
          "[core][max-size]") {
  CHECK(check_room(10, 4, 6).result == outcome::fits);
  auto trim = check_room(10, 8, 6);
  CHECK(trim.result == outcome::trim);
  CHECK(trim.need == 4);
  CHECK(check_room(10, 0, 11).result == outcome::full); // alone too big
}

TEST_CASE("after the trims a push fits, is refused as full, or gets the "
          "first failure",
          "[core][max-size]") {
  std::vector<trim_share> freed{{3, std::nullopt}, {1, std::nullopt}};
  CHECK_FALSE(after_trims("q", 10, 8, 6, freed)); // 8 - 4 + 6 = 10

  std::vector<trim_share> short_of{{1, std::nullopt}};
  auto full = after_trims("q", 10, 8, 6, short_of);
  REQUIRE(full);
  CHECK(*full == api_error{errc::queue_full, "Queue q is full"});

  std::vector<trim_share> failed{
      {1, std::nullopt},
      {0, api_error{errc::internal, "io_error: disk"}},
      {0, api_error{errc::unavailable, "later"}}};
  auto err = after_trims("q", 10, 8, 6, failed);
  REQUIRE(err);
  CHECK(err->code == errc::internal); // the first failure
  CHECK(err->message == "Queue q: making room failed: io_error: disk");

  // Room made despite a failed share: the push goes on.
  std::vector<trim_share> enough{{4, std::nullopt},
                                 {0, api_error{errc::internal, "x"}}};
  CHECK_FALSE(after_trims("q", 10, 8, 6, enough));
}
