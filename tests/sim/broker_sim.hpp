#pragma once

// A broker over a real store and writer under the test coordinator, with a
// restart that spawns a fresh broker over the same store.

#include "sim/sim_fixture.hpp"

#include "actors/broker/broker_actor.hpp"
#include "actors/writer/writer_actor.hpp"
#include "unit/storage/fixture.hpp"

namespace spool::test {

struct broker_sim : sim_fixture {
  store_fixture store;
  actors::writer_actor writer;
  actors::broker_actor broker;
  std::shared_ptr<actors::node_metrics> metrics
      = std::make_shared<actors::node_metrics>();
  /// The caps the next `start()` gives the broker.
  config::pop_limits pop_limits;
  /// How the next `start()`'s broker cuts segments.
  storage::segment_limits segments;

  broker_sim() {
    auto w = actors::spawn_writer(sys, {.env = &store.store->db()}, false);
    REQUIRE(w);
    writer = *w;
    start();
  }

  ~broker_sim() {
    run();
    // Stop the broker (and its linked queues, with their periodic timers)
    // before `store` is destroyed.
    caf::anon_send_exit(broker, caf::exit_reason::user_shutdown);
    drain();
  }

  /// The wall clock in µs: follows the simulated clock.
  storage::micros wall() {
    return storage::micros{1'785'000'000'000'000}
           + std::chrono::duration_cast<std::chrono::microseconds>(
                 now().time_since_epoch())
                 .count();
  }

  /// (Re)starts the broker over the same store, as after a restart.
  void start() {
    if (broker)
      caf::anon_send_exit(broker, caf::exit_reason::user_shutdown);
    run();
    actors::broker_config cfg;
    cfg.node.store = store.store.get();
    cfg.node.writer = writer;
    cfg.node.metrics = metrics;
    cfg.node.wall = [this] { return wall(); };
    cfg.pop = pop_limits;
    cfg.node.segments = segments;
    auto b = actors::spawn_broker(sys, cfg);
    REQUIRE(b);
    broker = *b;
  }
};

} // namespace spool::test
