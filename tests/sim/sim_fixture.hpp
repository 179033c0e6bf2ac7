#pragma once

// Deterministic actor tests: CAF's test coordinator (no threads, simulated
// clock) under Catch2. `run()` processes every mailbox; `advance(d)` moves the
// simulated clock and fires due timers. Requests from the test go through a
// short-lived helper actor whose response lands in a std::optional.

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/send.hpp>

#include <cstring>

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>

namespace spool::test {

inline caf::actor_system_config& sim_config(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("testing"));
  return cfg;
}

struct sim_fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;

  sim_fixture() :
      sys(sim_config(cfg)),
      sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {
    // Start the simulated clock away from zero.
    sched.clock().current_time += std::chrono::hours(1000);
  }

  ~sim_fixture() {
    drain();
  }

  /// Runs everything left, timers included: actors with pending timers never
  /// end otherwise. Fixtures holding a store call it in their destructor,
  /// before the store goes away under the actors.
  void drain() {
    for (int i = 0;
         i < 1000 && (sched.run() > 0 || sched.trigger_timeouts() > 0); ++i) {
    }
  }

  /// Runs every mailbox until all are empty; returns the messages handled.
  std::size_t run() {
    return sched.run();
  }

  /// Moves the simulated clock by `d`, fires what is due, runs mailboxes.
  void advance(caf::timespan d) {
    sched.advance_time(d);
    run();
  }

  caf::actor_clock::time_point now() {
    return sched.clock().now();
  }

  /// Runs mailboxes one message at a time until an actor whose state is
  /// named `name` ("spool.cursor") has a message waiting, then ends it
  /// with `unhandled_exception` after that message (a bug's death; not
  /// `exit_reason::kill`, which CAF makes fatal to linked actors too).
  /// Returns whether one was found; the rest runs with the next `run()`.
  bool kill_next(const char* name) {
    for (;;) {
      for (auto* job : sched.jobs)
        if (auto* a = dynamic_cast<caf::scheduled_actor*>(job);
            a && std::strcmp(a->name(), name) == 0) {
          caf::anon_send_exit(caf::actor_cast<caf::actor>(a),
                              caf::exit_reason::unhandled_exception);
          return true;
        }
      if (!sched.try_run_once())
        return false;
    }
  }

  /// Sends a request from a helper actor, runs until it is answered, and
  /// returns the answer (nullopt: no answer or an error).
  template <class R, class Handle, class... Ts>
  std::optional<R> request(const Handle& dest, Ts... xs) {
    auto result = std::make_shared<std::optional<R>>();
    // The unused int works around CAF 0.17's init_fun_factory, which binds
    // a reference through a null shared_ptr for argument-less spawns (UBSan).
    sys.spawn(
        [=](caf::event_based_actor* self, int) {
          self->request(dest, caf::infinite, xs...)
              .then([=](R& r) { *result = std::move(r); },
                    [=](caf::error&) { /* left empty */ });
        },
        0);
    run();
    return *result;
  }

  /// Like `request`, but does not run: the answer arrives during later runs.
  template <class R, class Handle, class... Ts>
  std::shared_ptr<std::optional<R>> request_later(const Handle& dest,
                                                  Ts... xs) {
    auto result = std::make_shared<std::optional<R>>();
    sys.spawn(
        [=](caf::event_based_actor* self, int) {
          self->request(dest, caf::infinite, xs...)
              .then([=](R& r) { *result = std::move(r); }, [=](caf::error&) {});
        },
        0);
    return result;
  }
};

} // namespace spool::test
