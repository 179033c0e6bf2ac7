// One pop over its candidate partitions: the shared budget, the claim cap,
// the restarting step-over, the empty reason and the rotation
// (semantics.md §3).

#include <catch2/catch.hpp>

#include "core/queue/claim.hpp"

using namespace spool;
using namespace spool::core;
using namespace std::chrono_literals;

namespace {

const mono_time t0 = mono_time{} + 1000h;

} // namespace

TEST_CASE("a wildcard pop's batch and bytes are one budget across the "
          "partitions it claims",
          "[core][claim]") {
  pop_claim c(4, 10, 4, 1000, true);
  auto a = c.next();
  REQUIRE(a);
  CHECK(a->candidate == 0);
  CHECK(a->batch == 10);
  CHECK(a->max_bytes == 1000);
  c.delivered(6, 600);
  a = c.next();
  REQUIRE(a);
  CHECK(a->candidate == 1);
  CHECK(a->batch == 4);
  CHECK(a->max_bytes == 400);
  c.delivered(4, 100);
  CHECK_FALSE(c.next()); // the batch is spent
  CHECK(c.claimed() == 2);
}

TEST_CASE("a wildcard pop claims at most its partitions", "[core][claim]") {
  pop_claim c(5, 100, 2, SIZE_MAX, true);
  c.next();
  c.delivered(1, 1);
  c.next();
  c.empty(empty_reason::empty, std::nullopt); // not a claim
  c.next();
  c.delivered(1, 1);
  CHECK_FALSE(c.next());
  CHECK(c.claimed() == 2);
}

TEST_CASE("an empty pop answers the most telling reason and the earliest "
          "retry",
          "[core][claim]") {
  pop_claim c(3, 1, 1, SIZE_MAX, true);
  c.next();
  c.empty(empty_reason::lease_held, t0 + 5s);
  c.next();
  c.empty(empty_reason::delayed, t0 + 2s);
  c.next();
  c.empty(empty_reason::empty, std::nullopt);
  CHECK_FALSE(c.next());
  CHECK(c.reason() == empty_reason::delayed);
  CHECK(c.retry_at() == t0 + 2s);

  pop_claim held(2, 1, 1, SIZE_MAX, true);
  held.next();
  held.empty(empty_reason::empty, std::nullopt);
  held.next();
  held.empty(empty_reason::lease_held, std::nullopt);
  CHECK(held.reason() == empty_reason::lease_held);

  pop_claim none(0, 1, 1, SIZE_MAX, false);
  CHECK_FALSE(none.next());
  CHECK(none.reason() == empty_reason::no_partition);
}

TEST_CASE("a wildcard pop steps over a restarting cursor and looks again "
          "soon, a named pop answers the error",
          "[core][claim]") {
  pop_claim wild(2, 1, 1, SIZE_MAX, true);
  wild.next();
  CHECK(wild.restarting(t0));
  REQUIRE(wild.next()); // goes on to the next partition
  wild.empty(empty_reason::empty, std::nullopt);
  CHECK(wild.reason() == empty_reason::empty);
  CHECK(wild.retry_at() == t0 + restart_retry);

  pop_claim named(1, 1, 1, SIZE_MAX, false);
  named.next();
  CHECK_FALSE(named.restarting(t0));
}

TEST_CASE("a failed share is the answer only when nothing was claimed "
          "before it",
          "[core][claim]") {
  pop_claim c(2, 10, 2, SIZE_MAX, true);
  c.next();
  CHECK(c.failure_answers());
  c.delivered(3, 3);
  c.next();
  CHECK_FALSE(c.failure_answers()); // the first share is durable
}

TEST_CASE("a group's next wildcard pop starts after its last claim",
          "[core][claim][rotation]") {
  rotation r;
  CHECK(r.start("g") == 0);
  r.claimed("g", 2);
  CHECK(r.start("g") == 3);
  CHECK(r.start("h") == 0); // per group
  r.forget("g");
  CHECK(r.start("g") == 0);
}
