// An ack naming its frame by transactionId (the wire's ack, api.md): the
// cursor resolves it against the frames its last lease delivered.

#include <catch2/catch.hpp>

#include "unit/core/leased_cursor.hpp"

using namespace spool;
using namespace spool::core;
using namespace std::chrono_literals;

using namespace spool::core::test;

TEST_CASE("an ack by transactionId settles the lease's frame with that id",
          "[cursor][ack][txid]") {
  leased fx(3);
  CHECK(fx.cur.frame_of("tx1") == offset{1});
  CHECK(fx.ack("tx0").error == ack_error::none);
  CHECK(fx.cur.committed() == offset{0});
  fx.ack("tx2");
  CHECK(fx.cur.committed() == offset{0}); // 1 is not settled yet
  auto last = fx.ack("tx1");
  CHECK(last.lease_released);
  CHECK(fx.cur.committed() == offset{2});
}

TEST_CASE("an ack by an unknown transactionId is not in the lease",
          "[cursor][ack][txid]") {
  leased fx(2);
  auto r = fx.ack("tx7"); // a frame the lease did not deliver
  CHECK(r.error == ack_error::not_in_lease);
  CHECK_FALSE(r.changed);
  CHECK(fx.cur.committed() == offset{-1});
}

TEST_CASE("an ack by transactionId after the lease expired is refused",
          "[cursor][ack][txid]") {
  leased fx(2);
  auto r = fx.ack("tx0", t0 + 31s);
  CHECK(r.error == ack_error::invalid_lease);
  CHECK(fx.cur.committed() == offset{-1});
}

TEST_CASE("a repeated ack by transactionId succeeds and changes nothing",
          "[cursor][ack][txid]") {
  leased fx(1);
  CHECK(fx.ack("tx0").lease_released);
  auto again = fx.ack("tx0"); // the lease ended; the id still resolves
  CHECK(again.error == ack_error::none);
  CHECK_FALSE(again.changed);
}

TEST_CASE("an ack by transactionId resolves against the last lease only",
          "[cursor][ack][txid]") {
  leased fx(1);
  fx.ack("tx0");
  // The next lease delivers offset 1 under new ids.
  auto plan = fx.cur.plan(t0, offset{0}, offset{9}, 1);
  auto& p = std::get<delivery_plan>(plan);
  auto g = fx.cur.grant(p, 1, "L2", t0);
  REQUIRE(g.lease);
  fx.cur.note_lease_txids({cursor_core::txid_hash("next")});
  CHECK_FALSE(fx.cur.frame_of("tx0"));
  CHECK(fx.cur.frame_of("next") == offset{1});
  CHECK(fx.ack("tx0").error == ack_error::not_in_lease);
}

TEST_CASE("acks by a transactionId two frames of one lease share settle both",
          "[cursor][ack][txid]") {
  // Past a queue's dedup window a client id may repeat in one partition.
  leased fx(3);
  fx.cur.note_lease_txids({cursor_core::txid_hash("same"),
                           cursor_core::txid_hash("same"),
                           cursor_core::txid_hash("other")});
  CHECK(fx.ack("same").error == ack_error::none);
  CHECK(fx.cur.committed() == offset{0});
  CHECK(fx.ack("same").error == ack_error::none); // the second frame now
  CHECK(fx.cur.committed() == offset{1});
  CHECK(fx.ack("same").error == ack_error::none); // settled: idempotent
  CHECK(fx.cur.committed() == offset{1});
}
