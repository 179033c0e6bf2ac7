// One election's choices (docs/cluster.md, "Elections").

#include <catch2/catch.hpp>

#include "cluster/election.hpp"

using namespace spool::cluster;

namespace {

const node_id n1{0}, n2{1}, n3{2};

fence_rep granted(epoch_t e, log_pos end, bool damaged = false) {
  return {e, true, e, std::nullopt, end, damaged};
}

election_config config(std::optional<node_id> to = std::nullopt) {
  return {n1, {n1, n2, n3}, 5, std::nullopt, to, std::nullopt};
}

} // namespace

TEST_CASE("an election fences every replica and makes the longest log of a "
          "majority lead",
          "[cluster][election]") {
  election e(config());
  CHECK(e.start().size() == 3);
  CHECK(e.on_reply(n1, granted(5, {2, 7})).empty());
  auto out = e.on_reply(n2, granted(5, {3, 4}));
  REQUIRE(out.size() == 1);
  CHECK(out[0].to == n2);
  CHECK(std::get<lead_req>(out[0].msg).epoch == 5);
  CHECK(e.state() == election_state::elected);
  CHECK(e.on_reply(n3, granted(5, {3, 9})).empty()); // decided already
}

TEST_CASE("an election never chooses a damaged replica nor counts it",
          "[cluster][election]") {
  election e(config());
  e.on_reply(n2, granted(5, {9, 9}, true));
  CHECK(e.on_reply(n1, granted(5, {1, 1})).empty());
  auto out = e.on_reply(n3, granted(5, {1, 2}));
  REQUIRE(out.size() == 1);
  CHECK(out[0].to == n3);
}

TEST_CASE("promote --to is honoured only when that node holds the longest "
          "log, and otherwise it is refused naming the node that does",
          "[cluster][election]") {
  election yes(config(n3));
  yes.on_reply(n1, granted(5, {2, 3}));
  CHECK(yes.on_reply(n2, granted(5, {2, 3})).empty()); // waits for n3
  auto out = yes.on_reply(n3, granted(5, {2, 3}));
  REQUIRE(out.size() == 1);
  CHECK(out[0].to == n3);

  election no(config(n3));
  no.on_reply(n1, granted(5, {2, 9}));
  CHECK(no.on_reply(n3, granted(5, {2, 3})).empty());
  CHECK(no.state() == election_state::failed);
  CHECK(no.reason()
        == "n3 does not hold the longest log (it ends at seq 3); n1 "
           "does, at epoch 2 seq 9");
}

TEST_CASE("an election refused by a majority fails and says where the newer "
          "epoch is",
          "[cluster][election]") {
  election e(config());
  e.on_reply(n2, {5, false, 7, n3, {}, false});
  e.on_reply(n3, {5, false, 7, n3, {}, false});
  CHECK(e.state() == election_state::failed);
  CHECK(e.highest_seen() == 7);
  CHECK(e.leader_seen() == n3);
  CHECK(e.reason()
        == "the fence for epoch 5 was refused by a majority (the highest epoch "
           "seen is 7, led by n3)");
}

TEST_CASE("an election gives up at its deadline and ignores answers to "
          "another epoch or duplicates",
          "[cluster][election]") {
  election e(config());
  CHECK(e.on_reply(n2, granted(4, {1, 1})).empty());
  CHECK(e.on_reply(n2, granted(5, {1, 1})).empty());
  CHECK(e.on_reply(n2, granted(5, {1, 1})).empty());
  e.give_up();
  CHECK(e.state() == election_state::failed);
  CHECK(e.reason() == "no majority answered the fence for epoch 5 in time");
}

TEST_CASE("a restarted leader's election fences its own replica only once the "
          "others' grants make a majority with it",
          "[cluster][election]") {
  election_config c{n1, {n1, n2, n3}, 5, 4, std::nullopt, n1, true};
  election e(c);
  auto fences = e.start();
  REQUIRE(fences.size() == 2);
  for (auto& f : fences)
    CHECK(f.to != n1);
  auto out = e.on_reply(n2, granted(5, {4, 9}));
  REQUIRE(out.size() == 1);
  CHECK(out[0].to == n1);
  CHECK(std::holds_alternative<fence_req>(out[0].msg));
  out = e.on_reply(n1, granted(5, {4, 9}));
  REQUIRE(out.size() == 1);
  CHECK(out[0].to == n1); // preferred among equal logs
  CHECK(std::holds_alternative<lead_req>(out[0].msg));
  CHECK(e.lead_again().size() == 1);

  election refused(c);
  refused.start();
  CHECK(refused.on_reply(n2, {5, false, 6, n3, {}, false}).empty());
  CHECK(refused.on_reply(n3, {5, false, 6, n3, {}, false}).empty());
  CHECK(refused.state() == election_state::failed);
  CHECK(refused.leader_seen() == n3);
  CHECK(refused.lead_again().empty());
}

TEST_CASE("a restarted leader alone in its replica set fences itself at once "
          "and leads",
          "[cluster][election]") {
  election e({n1, {n1}, 3, 2, std::nullopt, n1, true});
  auto fences = e.start();
  REQUIRE(fences.size() == 1);
  CHECK(fences[0].to == n1);
  auto out = e.on_reply(n1, granted(3, {2, 4}));
  REQUIRE(out.size() == 1);
  CHECK(std::holds_alternative<lead_req>(out[0].msg));
}

TEST_CASE("a handoff's election waits for its preferred replica's answer: it "
          "leads when it holds the longest log, the longest leads when it "
          "does not, and without its answer by the deadline the majority "
          "decides",
          "[cluster][election][handoff]") {
  auto handoff = [] {
    auto c = config();
    c.prefer = n3;
    c.await_prefer = true;
    return c;
  };
  // n1 and n2 are a majority, with the same log: no choice before n3.
  election e(handoff());
  e.start();
  CHECK(e.on_reply(n1, granted(5, {4, 9})).empty());
  CHECK(e.on_reply(n2, granted(5, {4, 9})).empty());
  CHECK(e.state() == election_state::running);
  auto out = e.on_reply(n3, granted(5, {4, 9}));
  REQUIRE(out.size() == 1);
  CHECK(out[0].to == n3);
  CHECK(e.settle().empty()); // decided already

  // n3 lacks the end of the log: the lowest of the longest leads.
  election short_one(handoff());
  short_one.start();
  short_one.on_reply(n2, granted(5, {4, 9}));
  short_one.on_reply(n1, granted(5, {4, 9}));
  out = short_one.on_reply(n3, granted(5, {4, 8}));
  REQUIRE(out.size() == 1);
  CHECK(out[0].to == n1);

  // n3 never answers: at the deadline the majority decides.
  election silent(handoff());
  silent.start();
  silent.on_reply(n1, granted(5, {4, 9}));
  silent.on_reply(n2, granted(5, {4, 9}));
  out = silent.settle();
  REQUIRE(out.size() == 1);
  CHECK(out[0].to == n1);
  CHECK(silent.state() == election_state::elected);

  // Without a majority, settling does nothing: giving up fails it.
  election alone(handoff());
  alone.start();
  alone.on_reply(n1, granted(5, {4, 9}));
  CHECK(alone.settle().empty());
  alone.give_up();
  CHECK(alone.state() == election_state::failed);
}
