// Parts settled by the writer (core/writer/open_parts.hpp): a batch that
// carries parts staged by other actors settles every one with its outcome
// before it is answered, so whatever the submitter sends a holder after
// the answer reaches it after the settle; a part is settled once.

#include "sim/sim_fixture.hpp"

#include <caf/event_based_actor.hpp>

#include <string>
#include <vector>

#include "actors/write.hpp"
#include "actors/writer/writer_actor.hpp"
#include "sim/held_policy.hpp"
#include "unit/storage/fixture.hpp"

using namespace spool;
using namespace spool::test;

namespace {

using log_t = std::shared_ptr<std::vector<std::string>>;

const char* name_of(core::part_outcome o) {
  switch (o) {
  case core::part_outcome::durable:
    return "durable";
  case core::part_outcome::failed:
    return "failed";
  default:
    return "unknown";
  }
}

/// A holder recording, in mailbox order, its settles and the submitter's
/// note sent after the answer (`flush_atom`).
caf::behavior holder(caf::event_based_actor*, log_t log) {
  return {
      [log](actors::settled_atom, const core::part_key& key,
            core::part_outcome o) {
        log->push_back(std::string{name_of(o)} + " "
                       + std::to_string(key.first));
      },
      [log](actors::flush_atom) { log->push_back("after the answer"); },
  };
}

struct parts_fixture : sim_fixture {
  ~parts_fixture() {
    drain();
  }
  store_fixture store;
  std::shared_ptr<held_policy> policy = std::make_shared<held_policy>();
  actors::writer_actor writer;
  log_t log = std::make_shared<std::vector<std::string>>();
  caf::actor h;
  storage::partition_record p;
  storage::partition_log plog{store.make_partition()};

  explicit parts_fixture(bool held = false) {
    actors::writer_config cfg{.env = &store.store->db()};
    if (held)
      cfg.durability = policy;
    auto w = actors::spawn_writer(sys, cfg, false);
    REQUIRE(w);
    writer = *w;
    h = sys.spawn(holder, log);
    p = plog.record();
  }

  actors::part_ref part(std::int64_t first) {
    return {h.address(), core::part_key{p.queue.value, p.id.value, "", first}};
  }

  void hold(std::int64_t first) {
    caf::anon_send(writer, actors::hold_atom::value, part(first));
    run();
  }

  actors::submission segment(std::vector<std::int64_t> firsts) {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto sealed = plog.seal(*t, msgs(1), 1'000'000, store.enc);
    REQUIRE(sealed);
    actors::submission s{storage::write_batch{sealed->mutations}, {}};
    for (auto f : firsts)
      s.parts.push_back(part(f));
    return s;
  }

  /// Submits `s` from an actor that, once answered, notes it to the holder.
  std::shared_ptr<std::optional<actors::write_result>>
  propose(actors::submission s) {
    auto out = std::make_shared<std::optional<actors::write_result>>();
    sys.spawn(
        [=, w = writer, h = h](caf::event_based_actor* self, int) {
          self->request(w, caf::infinite, actors::propose_atom::value, s)
              .then([=](actors::write_result& r) {
                *out = r;
                self->send(h, actors::flush_atom::value);
              });
        },
        0);
    return out;
  }
};

} // namespace

TEST_CASE("every part of a batch is settled durable before the batch is "
          "answered",
          "[sim][writer][parts]") {
  parts_fixture fx;
  fx.hold(0);
  fx.hold(7);
  auto r = fx.propose(fx.segment({0, 7}));
  fx.run();
  REQUIRE(*r);
  CHECK((*r)->ok());
  CHECK(*fx.log
        == std::vector<std::string>{"durable 0", "durable 7",
                                    "after the answer"});
}

TEST_CASE("a batch that fails settles its parts failed, before its answer",
          "[sim][writer][parts]") {
  parts_fixture fx;
  fx.hold(0);
  actors::submission bad{{{storage::mut::put_cursor{
                             fx.p.queue, storage::partition_id{999}, "g", {}}}},
                         {fx.part(0)}};
  auto r = fx.propose(bad);
  fx.run();
  REQUIRE(*r);
  CHECK((*r)->failure->code == errc::not_found);
  CHECK(*fx.log == std::vector<std::string>{"failed 0", "after the answer"});
}

TEST_CASE("a batch naming a part that is not open is refused whole, and its "
          "open parts fail",
          "[sim][writer][parts]") {
  parts_fixture fx;
  fx.hold(0);
  auto before = fx.store.stored(fx.p).next_offset;
  auto r = fx.propose(fx.segment({0, 5})); // 5 was never held
  fx.run();
  REQUIRE(*r);
  REQUIRE(!(*r)->ok());
  CHECK(fx.store.stored(fx.p).next_offset == before); // nothing stored
  CHECK(*fx.log == std::vector<std::string>{"failed 0", "after the answer"});
}

TEST_CASE("a part given up is never settled by the writer",
          "[sim][writer][parts]") {
  parts_fixture fx;
  fx.hold(0);
  fx.hold(1);
  caf::anon_send(fx.writer, actors::abort_atom::value,
                 std::vector<actors::part_ref>{fx.part(0)});
  fx.run();
  auto refused = fx.propose(fx.segment({0}));
  fx.run();
  REQUIRE(*refused);
  CHECK(!(*refused)->ok());
  auto stored = fx.propose(fx.segment({1}));
  fx.run();
  REQUIRE(*stored);
  CHECK((*stored)->ok());
  // The given-up part was settled by whoever gave it up, not here.
  CHECK(*fx.log
        == std::vector<std::string>{"after the answer", "durable 1",
                                    "after the answer"});
}

TEST_CASE("a batch committed but not durable when the writer stops settles its "
          "parts as of unknown outcome",
          "[sim][writer][parts][shutdown]") {
  parts_fixture fx{true};
  fx.hold(0);
  auto r = fx.propose(fx.segment({0}));
  fx.run();
  CHECK_FALSE(*r); // committed, held by the policy
  REQUIRE(fx.policy->held.size() == 1);
  caf::anon_send_exit(fx.writer, caf::exit_reason::user_shutdown);
  fx.run();
  REQUIRE(*r);
  CHECK(!(*r)->ok());
  CHECK(*fx.log == std::vector<std::string>{"unknown 0", "after the answer"});
}
