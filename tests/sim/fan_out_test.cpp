// The fan-out helper (actors/fan_out.hpp) under the test coordinator, and
// Spool's scheduler (actors/scheduler.hpp). The scheduler is the subject of
// its own test, so that one runs real threads; it asserts only that every
// job runs, never how fast.

#include "sim/sim_fixture.hpp"

#include <caf/scoped_actor.hpp>

#include <memory>
#include <vector>

#include "actors/fan_out.hpp"
#include "actors/scheduler.hpp"

using namespace spool;
using namespace spool::test;

namespace {

using release_atom = caf::atom_constant<caf::atom("release")>;

/// Holds the question it is asked until released, then answers twice it.
struct holder_state {
  std::optional<caf::response_promise> rp;
  int x = 0;
};

caf::behavior holder(caf::stateful_actor<holder_state>* self,
                     std::shared_ptr<std::size_t> asked) {
  return {
      [self, asked](int x) {
        ++*asked;
        self->state.x = x;
        self->state.rp = self->make_response_promise();
        return *self->state.rp;
      },
      [self](release_atom) {
        if (self->state.rp) {
          self->state.rp->deliver(self->state.x * 2);
          self->state.rp.reset();
        }
      },
  };
}

} // namespace

TEST_CASE("A gather over more actors than its window keeps at most the "
          "window in flight and answers every slot, in order, once",
          "[sim][fan_out]") {
  sim_fixture fx;
  constexpr std::size_t n = 3 * actors::gather_window + 7;
  auto asked = std::make_shared<std::size_t>(0);
  std::vector<caf::actor> dests;
  for (std::size_t i = 0; i < n; ++i)
    dests.push_back(fx.sys.spawn(holder, asked));
  auto calls = std::make_shared<int>(0);
  auto slots = std::make_shared<std::vector<actors::fanned<int>>>();
  fx.sys.spawn(
      [=](caf::event_based_actor* self, int) {
        actors::gather<int>(
            n,
            [=](std::size_t i) {
              return self->request(dests[i], caf::infinite,
                                   static_cast<int>(i));
            },
            [=](std::vector<actors::fanned<int>> got) {
              ++*calls;
              *slots = std::move(got);
            });
      },
      0);
  fx.run();
  // Nobody answered yet: only the first window was asked.
  CHECK(*asked == actors::gather_window);
  // Answering the first one lets exactly one more question out.
  caf::anon_send(dests[0], release_atom::value);
  fx.run();
  CHECK(*asked == actors::gather_window + 1);
  for (std::size_t round = 0; round < 5 && *calls == 0; ++round) {
    for (auto& d : dests)
      caf::anon_send(d, release_atom::value);
    fx.run();
  }
  CHECK(*asked == n);
  CHECK(*calls == 1);
  REQUIRE(slots->size() == n);
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(slots->at(i).reply);
    CHECK(*slots->at(i).reply == static_cast<int>(2 * i));
  }
  for (auto& d : dests)
    caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
}

TEST_CASE("Spool's scheduler runs every job of a burst: one actor wakes "
          "10,000 actors, each of which answers it",
          "[fan_out][scheduler]") {
  caf::actor_system_config cfg;
  REQUIRE(actors::use_scheduler(cfg, "spool", 2));
  caf::actor_system sys{cfg};
  constexpr int n = 10'000;
  std::vector<caf::actor> leaves;
  for (int i = 0; i < n; ++i)
    leaves.push_back(sys.spawn(
        [](caf::event_based_actor* self, int) {
          return caf::behavior{
              [self](int x, const caf::actor& back) { self->send(back, x); }};
        },
        0)); // the unused int: see sim_fixture.hpp (CAF 0.17 and UBSan)
  // The root sends to every leaf from inside the scheduler (a burst of jobs
  // on one worker) and answers the test once every leaf answered.
  auto root = sys.spawn(
      [leaves](caf::event_based_actor* self, int) {
        auto left = std::make_shared<int>(0);
        auto seen = std::make_shared<std::vector<bool>>(leaves.size(), false);
        auto rp = std::make_shared<caf::response_promise>();
        return caf::behavior{
            [=](caf::get_atom) {
              *left = static_cast<int>(leaves.size());
              seen->assign(leaves.size(), false);
              *rp = self->make_response_promise();
              for (std::size_t i = 0; i < leaves.size(); ++i)
                self->send(leaves[i], static_cast<int>(i),
                           caf::actor_cast<caf::actor>(self));
              return *rp;
            },
            [=](int x) {
              if (!seen->at(static_cast<std::size_t>(x))) {
                seen->at(static_cast<std::size_t>(x)) = true;
                if (--*left == 0)
                  rp->deliver(true);
              }
            },
        };
      },
      0);
  caf::scoped_actor self{sys};
  for (int round = 0; round < 3; ++round) {
    bool all = false;
    self->request(root, std::chrono::minutes(2), caf::get_atom::value)
        .receive([&](bool b) { all = b; }, [](caf::error&) {});
    CHECK(all);
  }
  for (auto& l : leaves)
    self->send_exit(l, caf::exit_reason::user_shutdown);
  self->send_exit(root, caf::exit_reason::user_shutdown);
}

TEST_CASE("An unknown scheduler name is refused", "[fan_out][scheduler]") {
  caf::actor_system_config cfg;
  CHECK_FALSE(actors::use_scheduler(cfg, "fastest", 2));
  CHECK(actors::use_scheduler(cfg, "sharing", 2));
}
