// Who serves each slot, as the broker and the doors read it: one word per
// slot, and the refusal a client gets for a slot this node does not serve.

#include <catch2/catch.hpp>

#include "core/replica/slot_directory.hpp"

using namespace spool;
using namespace spool::core;
using cluster::node_id;

namespace {

constexpr node_id n1{0}, n2{1}, n3{2}, n4{3};

} // namespace

TEST_CASE("the slot directory answers a slot this node does not serve with "
          "the leader's name, and lets a served slot through",
          "[replica][directory]") {
  // Four nodes, three replicas a slot: slot 1 is on n2, n3, n4.
  slot_directory dir{8, {n1, {n1, n2, n3, n4}, {"a", "b", "", "d"}, 3}};
  CHECK(dir.get(0).held);
  CHECK_FALSE(dir.get(1).held);
  auto no_replica = dir.refusal(1);
  REQUIRE(no_replica);
  CHECK(no_replica->code == errc::not_leader);
  CHECK(no_replica->message
        == "Not the leader of slot 1; this node holds no replica of it (its "
           "replicas: b, n3, d)");
  // Held, no leader known: retry later.
  auto none = dir.refusal(0);
  REQUIRE(none);
  CHECK(none->code == errc::unavailable);
  CHECK(none->message == "Server busy: slot 0 has no leader yet");
  dir.set(0, {.held = true, .leader = n2, .epoch = 7});
  auto other = dir.refusal(0);
  REQUIRE(other);
  CHECK(other->code == errc::not_leader);
  CHECK(other->message == "Not the leader of slot 0; leader is b");
  dir.set(0, {.held = true, .taking_office = true, .leader = n1, .epoch = 8});
  auto office = dir.refusal(0);
  REQUIRE(office);
  CHECK(office->code == errc::unavailable);
  CHECK(office->message == "Server busy: slot 0 is taking office (epoch 8)");
  dir.set(0, {.held = true, .serving = true, .leader = n1, .epoch = 8});
  CHECK_FALSE(dir.refusal(0));
  dir.set(0, {.held = true, .failed = true, .leader = n1, .epoch = 8});
  REQUIRE(dir.refusal(0));
  CHECK(dir.refusal(0)->code == errc::unavailable);
  // A slot outside the store is nobody's here.
  REQUIRE(dir.refusal(8));
  CHECK(dir.refusal(8)->code == errc::not_leader);
}

TEST_CASE("the slot directory keeps each slot's whole state in one word",
          "[replica][directory]") {
  slot_directory dir{4, {n1, {n1, n2, n3}, {}, 3}};
  slot_status st{.held = true,
                 .failed = false,
                 .serving = true,
                 .taking_office = false,
                 .leader = n3,
                 .epoch = 123456};
  dir.set(2, st);
  CHECK(dir.get(2) == st);
  // Epochs beyond 32 bits read as the highest it can say.
  st.epoch = cluster::epoch_t{1} << 40;
  dir.set(3, st);
  CHECK(dir.get(3).epoch == 0xffffffffu);
  CHECK(dir.get(3).leader == n3);
  CHECK(dir.names().name(n2) == "n2");
}
