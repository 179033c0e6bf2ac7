// A cumulative ack (`upTo`, api.md): every frame of the live lease at or
// below an offset, completed, in one item.

#include <catch2/catch.hpp>

#include "unit/core/leased_cursor.hpp"

using namespace spool;
using namespace spool::core;
using namespace std::chrono_literals;

using namespace spool::core::test;

TEST_CASE("an upTo ack of the lease's last frame settles the whole lease",
          "[cursor][ack][upto]") {
  leased fx(5);
  auto out = fx.up_to(4);
  CHECK(out.error == ack_error::none);
  CHECK(out.changed);
  CHECK(out.settled == 5);
  CHECK(out.lease_released);
  CHECK(fx.cur.committed() == offset{4});
  CHECK_FALSE(fx.cur.lease());
}

TEST_CASE("an upTo ack inside the lease settles the frames below it only",
          "[cursor][ack][upto]") {
  leased fx(5);
  auto out = fx.up_to(2);
  CHECK(out.error == ack_error::none);
  CHECK(out.settled == 3);
  CHECK_FALSE(out.lease_released);
  CHECK(fx.cur.committed() == offset{2});
  REQUIRE(fx.cur.lease()); // 3 and 4 are still leased
  auto four = fx.one(4);
  CHECK(four.error == ack_error::none);
  CHECK(four.settled == 1);
  CHECK(fx.cur.committed() == offset{2});
  auto last = fx.one(3);
  CHECK(last.lease_released);
  CHECK(last.settled == 1);
  CHECK(fx.cur.committed() == offset{4});
}

TEST_CASE("an upTo ack passes over frames acked one by one before it",
          "[cursor][ack][upto]") {
  leased fx(5);
  fx.one(1);
  fx.one(3);
  auto out = fx.up_to(4);
  CHECK(out.settled == 3); // 0, 2 and 4: the others were acked before
  CHECK(out.lease_released);
  CHECK(fx.cur.committed() == offset{4});
}

TEST_CASE("an upTo ack repeated succeeds and changes nothing while its "
          "lease lives",
          "[cursor][ack][upto]") {
  leased fx(5);
  fx.up_to(2);
  auto again = fx.up_to(2);
  CHECK(again.error == ack_error::none);
  CHECK_FALSE(again.changed);
  CHECK(again.settled == 0);
  CHECK(fx.cur.committed() == offset{2});
  fx.up_to(4);
  // The lease ended: one naming it is told so, as an item ack would be.
  CHECK(fx.up_to(4).error == ack_error::invalid_lease);
  CHECK(fx.cur.committed() == offset{4});
}

TEST_CASE("an upTo ack needs the live lease", "[cursor][ack][upto]") {
  leased fx(5);
  auto late = fx.up_to(4, t0 + 31s);
  CHECK(late.error == ack_error::invalid_lease);
  CHECK_FALSE(late.changed);
  CHECK(fx.cur.committed() == offset{-1});
  CHECK(fx.up_to(4, t0, "L-other").error == ack_error::invalid_lease);
  // Without naming one it is refused (check_ack); the core alone refuses
  // it too rather than settle whatever lease lives.
  CHECK(fx.up_to(4, t0, std::nullopt).error == ack_error::invalid_lease);
  CHECK(fx.cur.committed() == offset{-1});
}

TEST_CASE("an upTo ack beyond the partition is not found and one above "
          "the lease covers it all",
          "[cursor][ack][upto]") {
  leased fx(3);
  CHECK(fx.up_to(10).error == ack_error::not_found);
  CHECK(fx.up_to(-1).error == ack_error::not_found);
  CHECK(fx.cur.committed() == offset{-1});
  auto out = fx.up_to(8); // frames 3..8 were never delivered: untouched
  CHECK(out.error == ack_error::none);
  CHECK(out.lease_released);
  CHECK(fx.cur.committed() == offset{2});
}

TEST_CASE("an upTo ack is completed only, names its lease and no "
          "transactionId",
          "[cursor][ack][upto]") {
  ack_request r;
  r.up_to = offset{3};
  REQUIRE_FALSE(check_ack(r));
  CHECK(check_ack(r).err().message == "upTo needs a leaseId");
  r.lease_id = "L1";
  CHECK(check_ack(r));
  r.status = ack_status::failed;
  REQUIRE_FALSE(check_ack(r));
  CHECK(check_ack(r).err().message
        == "upTo completes frames: its status is completed");
  r.status = ack_status::completed;
  r.transaction_id = "tx";
  CHECK_FALSE(check_ack(r));
}

TEST_CASE("an ack counts the messages it made done: completed and "
          "dead-lettered frames, not a failure that will be redelivered",
          "[cursor][ack][metrics]") {
  leased fx(3);
  auto buried = fx.one(0, ack_status::dlq);
  CHECK(buried.dead);
  CHECK(buried.settled == 1);
  auto failed = fx.one(1, ack_status::failed); // under retryLimit
  CHECK(failed.error == ack_error::none);
  CHECK_FALSE(failed.dead);
  CHECK(failed.settled == 0);
  CHECK(failed.lease_released);
}
