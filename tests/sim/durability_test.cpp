// Answers wait for durability (issue 35): the writer commits ahead, hands
// each committed group to its durability policy, and releases answers only
// once the policy holds them durable, in commit order; readers wait for the
// seq they read. Deterministic: the policy here is released by the test.

#include "sim/sim_fixture.hpp"

#include "actors/writer/writer_actor.hpp"
#include "sim/held_policy.hpp"
#include "unit/storage/fixture.hpp"

using namespace spool;
using namespace spool::test;

namespace {

struct held_writer : sim_fixture {
  store_fixture store;
  std::shared_ptr<held_policy> policy = std::make_shared<held_policy>();
  std::shared_ptr<actors::durable_marks> marks;
  actors::writer_actor writer;
  storage::partition_record p = store.make_partition();
  storage::partition_log log{p};
  storage::slot_t slot = slot_of_id(p.queue.value);

  explicit held_writer(std::size_t max_pending = 8192) {
    auto m = actors::durable_marks::of(store.store->db());
    REQUIRE(m);
    marks = *m;
    auto w = actors::spawn_writer(sys,
                                  {.env = &store.store->db(),
                                   .max_pending = max_pending,
                                   .durability = policy,
                                   .marks = marks},
                                  false);
    REQUIRE(w);
    writer = *w;
  }
  ~held_writer() {
    policy->release_all();
    drain();
  }

  /// Seals `n` messages after the previous ones and writes them.
  std::shared_ptr<std::optional<actors::write_result>> write(std::size_t n) {
    return request_later<actors::write_result>(
        writer, actors::write_atom::value, store.seal_next(log, n));
  }
  /// The seq the store's snapshot now ends at in the partition's slot.
  storage::slot_seq last() {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto m = actors::read_mark(*t, slot);
    REQUIRE(m);
    return *m;
  }
  std::shared_ptr<std::optional<actors::write_result>>
  wait_for(storage::slot_seq m) {
    return request_later<actors::write_result>(
        writer, actors::durable_atom::value, m.slot, m.seq);
  }
};

} // namespace

TEST_CASE("the writer answers a batch only once its durability policy holds "
          "it durable",
          "[sim][writer][durability]") {
  held_writer fx;
  auto r = fx.write(2);
  fx.run();
  CHECK_FALSE(*r); // committed locally, not durable yet
  REQUIRE(fx.policy->held.size() == 1);
  CHECK(fx.policy->held[0].marks == std::vector<storage::slot_seq>{fx.last()});
  CHECK_FALSE(fx.marks->covers(fx.last()));
  fx.policy->release_all();
  fx.run();
  REQUIRE(*r);
  CHECK((*r)->ok());
  CHECK(fx.marks->covers(fx.last()));
  CHECK(fx.store.stored(fx.p).next_offset == storage::offset{2});
}

TEST_CASE("the writer commits the next group while an earlier one waits for "
          "durability, and answers them in commit order",
          "[sim][writer][durability]") {
  held_writer fx;
  auto first = fx.write(1);
  fx.run();
  auto second = fx.write(2);
  fx.run();
  // Both committed locally (the second did not wait for the first's
  // durability), neither answered.
  REQUIRE(fx.policy->held.size() == 2);
  CHECK(fx.store.stored(fx.p).next_offset == storage::offset{3});
  CHECK_FALSE(*first);
  CHECK_FALSE(*second);
  // The second group durable first: still not answered before the first.
  fx.policy->release(1);
  fx.run();
  CHECK_FALSE(*first);
  CHECK_FALSE(*second);
  fx.policy->release(0);
  fx.run();
  REQUIRE(*first);
  REQUIRE(*second);
  CHECK((*first)->ok());
  CHECK((*second)->ok());
}

TEST_CASE("a group committed while the previous one was being committed is "
          "answered only once its own durability is declared",
          "[sim][writer][durability]") {
  held_writer fx;
  // Both reach the writer before it runs: the second waits for the first's
  // commit, then is committed as the next group.
  auto first = fx.write(1);
  auto second = fx.write(1);
  fx.run();
  REQUIRE(fx.policy->held.size() == 2);
  fx.policy->release(0);
  fx.run();
  REQUIRE(*first);
  CHECK((*first)->ok());
  CHECK_FALSE(*second); // its own group is not durable yet
  fx.policy->release(1);
  fx.run();
  REQUIRE(*second);
  CHECK((*second)->ok());
}

TEST_CASE("a group whose slot the policy lost answers its batches of that "
          "slot with the policy's error, raises no mark there, and goes on",
          "[sim][writer][durability]") {
  held_writer fx;
  auto first = fx.write(1);
  fx.run();
  REQUIRE(fx.policy->held.size() == 1);
  auto lost_at = fx.last();
  fx.policy->release(
      0, {{fx.slot, make_error(errc::unavailable, "slot lost its leader")}});
  fx.run();
  REQUIRE(*first);
  REQUIRE((*first)->failure);
  CHECK((*first)->failure->code == errc::unavailable);
  CHECK((*first)->failure->message == "slot lost its leader");
  CHECK_FALSE(fx.marks->covers(lost_at));
  // The next group of the slot is durable, and covers the seq before it.
  auto second = fx.write(1);
  fx.run();
  REQUIRE(fx.policy->held.size() == 2);
  fx.policy->release(1);
  fx.run();
  REQUIRE(*second);
  CHECK((*second)->ok());
  CHECK(fx.marks->covers(lost_at));
}

TEST_CASE("a reader waiting for a seq is answered once that seq is durable, "
          "and at once when it already is",
          "[sim][writer][durability]") {
  held_writer fx;
  auto before = fx.last();
  auto done = fx.wait_for(before); // durable already: what the store held
  fx.run();
  REQUIRE(*done);
  CHECK((*done)->ok());
  auto w = fx.write(1);
  fx.run();
  auto read = fx.last(); // what a browse would have read now
  CHECK(read.seq == before.seq + 1);
  auto waiting = fx.wait_for(read);
  fx.run();
  CHECK_FALSE(*waiting);
  fx.policy->release_all();
  fx.run();
  REQUIRE(*w);
  REQUIRE(*waiting);
  CHECK((*waiting)->ok());
}

TEST_CASE("writes waiting for durability count toward the writer's queue "
          "bound",
          "[sim][writer][durability][limits]") {
  held_writer fx{2};
  auto a = fx.write(1);
  fx.run();
  auto b = fx.write(1);
  fx.run();
  auto refused = fx.write(1);
  fx.run();
  REQUIRE(*refused);
  REQUIRE((*refused)->failure);
  CHECK((*refused)->failure->code == errc::unavailable);
  CHECK_THAT((*refused)->failure->message,
             Catch::Contains("write queue full")
                 && Catch::Contains("durability"));
  CHECK(fx.store.stored(fx.p).next_offset == storage::offset{2});
  fx.policy->release_all();
  fx.run();
  REQUIRE(*a);
  CHECK((*a)->ok());
  REQUIRE(*b);
  CHECK((*b)->ok());
}

TEST_CASE("a writer stopped while groups wait for durability answers them "
          "as of unknown outcome",
          "[sim][writer][durability][shutdown]") {
  held_writer fx;
  auto w = fx.write(1);
  fx.run();
  auto reader = fx.wait_for(fx.last());
  fx.run();
  caf::anon_send_exit(fx.writer, caf::exit_reason::user_shutdown);
  fx.run();
  REQUIRE(*w);
  REQUIRE((*w)->failure);
  CHECK((*w)->failure->code == errc::unavailable);
  CHECK_THAT((*w)->failure->message, Catch::Contains("outcome is unknown"));
  REQUIRE(*reader);
  REQUIRE((*reader)->failure);
  CHECK((*reader)->failure->code == errc::unavailable);
}

TEST_CASE("the writer's default durability policy is the local commit",
          "[sim][writer][durability]") {
  CHECK(std::string{actors::local_durability()->name()} == "local");
  bool durable = false;
  actors::local_durability()->committed(
      {{{0, 1}, 0}},
      [&](std::vector<actors::lost_slot> lost) { durable = lost.empty(); });
  CHECK(durable); // at once, within the call
}

TEST_CASE("a group's durable marks are the highest seq of each slot it "
          "numbered",
          "[sim][writer][durability]") {
  actors::commit_report r;
  r.numbers = {{{3, 10}, {1, 4}}, {}, {{3, 11}}, {{2, 7}, {1, 5}}};
  CHECK(r.marks() == std::vector<storage::slot_seq>{{1, 5}, {2, 7}, {3, 11}});
  actors::durable_marks m{4};
  m.raise(r.marks());
  CHECK(m.covers(storage::slot_seq{3, 11}));
  CHECK_FALSE(m.covers(storage::slot_seq{3, 12}));
  CHECK(m.covers(storage::slot_seq{0, 0}));
  CHECK_FALSE(m.covers(storage::slot_seq{4, 0}));  // no such slot
  m.raise(std::vector<storage::slot_seq>{{3, 2}}); // never lowered
  CHECK(m.covers(storage::slot_seq{3, 11}));
}
