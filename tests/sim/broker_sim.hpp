#pragma once

// A broker over a real store and writer under the test coordinator, with a
// restart that spawns a fresh broker over the same store.

#include "sim/sim_fixture.hpp"

#include "actors/broker/broker_actor.hpp"
#include "actors/writer/writer_actor.hpp"
#include "sim/write_gate.hpp"
#include "unit/storage/fixture.hpp"
#include "unit/storage/replay.hpp"

namespace spool::test {

/// `reqs` as the gateway sends acks (`located_ack`): each names its frame's
/// partition by uuid, with `group`.
inline std::vector<actors::located_ack>
located_acks(const std::string& partition_uuid, const std::string& group,
             std::vector<ack_request> reqs) {
  std::vector<actors::located_ack> out;
  for (auto& a : reqs)
    out.push_back({partition_uuid, group, std::move(a)});
  return out;
}

/// Each ack's outcome in a located list's answer, in order.
inline std::vector<actors::ack_reply>
ack_replies(std::vector<actors::located_ack_reply> rs) {
  std::vector<actors::ack_reply> out;
  for (auto& r : rs)
    out.push_back(std::move(r.reply));
  return out;
}

/// Sends `reqs` of `group` to `broker` as located acks of partition
/// `partition_uuid`, as the gateway does; the answer (each ack's outcome,
/// in order; nullopt: none) arrives during later runs.
inline std::shared_ptr<std::optional<std::vector<actors::ack_reply>>>
ack_located_later(caf::actor_system& sys, const actors::broker_actor& broker,
                  const std::string& partition_uuid, const std::string& group,
                  std::vector<ack_request> reqs) {
  auto result
      = std::make_shared<std::optional<std::vector<actors::ack_reply>>>();
  auto acks = located_acks(partition_uuid, group, std::move(reqs));
  // The unused int: as sim_fixture::request (CAF 0.17's init_fun_factory).
  sys.spawn(
      [=](caf::event_based_actor* self, int) {
        self->request(broker, caf::infinite, actors::ack_atom::value, acks)
            .then(
                [=](std::vector<actors::located_ack_reply>& rs) {
                  *result = ack_replies(std::move(rs));
                },
                [=](caf::error&) { /* left empty */ });
      },
      0);
  return result;
}

struct broker_sim : sim_fixture {
  store_fixture store;
  actors::writer_actor writer;
  actors::broker_actor broker;
  std::shared_ptr<actors::node_metrics> metrics
      = std::make_shared<actors::node_metrics>();
  /// The caps the next `start()` gives the broker.
  config::pop_limits pop_limits;
  /// The push caps the next `start()` gives the broker.
  config::push_limits push_limits;
  /// The default subscription mode the next `start()` gives the broker.
  storage::subscription_mode default_subscription
      = storage::subscription_mode::all;
  /// Every write the broker's actors make passes this gate (open unless a
  /// test closes it): with `gate_st->keep`, `gate_st->seen` lists them.
  std::shared_ptr<gate_state> gate_st = std::make_shared<gate_state>();
  actors::writer_actor gated;
  /// The retention interval and deletion step the next `start()` gives.
  std::chrono::seconds retention_interval{10};
  std::size_t delete_step = 1024;
  std::size_t sweep_step = 10'000;
  /// Passivation for the next `start()` (docs/architecture.md).
  std::chrono::milliseconds partition_idle{60'000};
  std::size_t max_partition_actors = 100'000;
  /// How far each slot is durable (shared by the writer and the broker).
  std::shared_ptr<actors::durable_marks> marks;
  /// How the next `start()`'s broker cuts segments.
  storage::segment_limits segments;
  /// Cluster mode for the next `start()`: who serves each slot (none: one
  /// node).
  std::shared_ptr<const core::slot_directory> slots;
  /// The writer's commits (inline); a cluster test hooks them.
  std::shared_ptr<actors::committer> commits;

  /// `durability`: the writer's policy (none: the local commit).
  explicit broker_sim(std::shared_ptr<actors::durability_policy> durability
                      = nullptr) {
    auto m = actors::durable_marks::of(store.store->db());
    REQUIRE(m);
    marks = *m;
    commits = actors::inline_committer(store.store->db());
    auto w = actors::spawn_writer(sys,
                                  {.env = &store.store->db(),
                                   .commits = commits,
                                   .durability = std::move(durability),
                                   .marks = marks},
                                  false);
    REQUIRE(w);
    writer = *w;
    gate_st->keep = false; // a test that counts writes turns it on
    gated = sys.spawn(gate, gate_st, writer);
    start();
  }

  /// After every simulation (unless it failed already): each slot's log,
  /// replayed into a fresh store, gives the same rows byte for byte, and a
  /// truncated tail equals never having applied it (`check_replay`).
  ~broker_sim() noexcept(false) {
    gate_st->closed = false;
    caf::anon_send(gated, actors::flush_atom::value);
    run();
    // Stop the broker (and its linked queues, with their periodic timers)
    // before `store` is destroyed.
    caf::anon_send_exit(broker, caf::exit_reason::user_shutdown);
    drain();
    if (std::uncaught_exceptions() == 0 && replay_at_end)
      check_replay(*store.store);
  }

  /// Whether the destructor replays the slot logs (a test that checks them
  /// itself turns it off).
  bool replay_at_end = true;

  /// The wall clock in µs: follows the simulated clock.
  storage::micros wall() {
    return storage::micros{1'785'000'000'000'000}
           + std::chrono::duration_cast<std::chrono::microseconds>(
                 now().time_since_epoch())
                 .count();
  }

  /// Pushes `payloads` to (queue, partition) as one push: one segment,
  /// stamped with the current wall time (must succeed).
  actors::queue_push_reply push(const std::string& queue,
                                const std::string& partition,
                                std::vector<std::string> payloads) {
    std::vector<actors::broker_push_item> v;
    for (auto& p : payloads)
      v.push_back({queue, {partition, msg(p)}});
    auto r = request<actors::queue_push_reply>(broker, actors::push_atom::value,
                                               v);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    return *r;
  }

  /// A pop by `group` of `partition` (none: any), with a fresh lease id.
  actors::queue_pop_request pop_request(const std::string& group,
                                        std::optional<std::string> partition
                                        = {},
                                        std::size_t batch = 10) {
    actors::queue_pop_request r;
    r.group = group;
    r.partition = std::move(partition);
    r.batch = batch;
    r.lease_id = "L" + std::to_string(++leases);
    return r;
  }
  int leases = 0;

  /// The group's DLQ entries on `queue` as listed, newest first (none for
  /// a group the queue does not know).
  std::vector<core::dlq_item> dlq_of(const std::string& queue,
                                     const std::string& group) {
    core::dlq_query query;
    query.filter.queue = queue;
    query.filter.group = group;
    auto r = request<actors::dlq_list_reply>(
        broker, actors::dlq_list_atom::value, query);
    REQUIRE(r);
    if (r->failure)
      return {};
    return r->page.items;
  }

  /// Creates queue `queue` or changes the named options (must succeed).
  void configure(const std::string& queue, core::options_patch opts) {
    actors::configure_request c;
    c.queue = queue;
    c.options = std::move(opts);
    auto r = request<actors::configure_reply>(broker,
                                              actors::configure_atom::value, c);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
  }

  // -- acks, as the gateway sends them ------------------------------------

  /// Acks `reqs` of `group` on the partition with uuid `partition_uuid`
  /// (a located list); each ack's outcome, in order (nullopt: no answer).
  /// `_later`: not run, the answer arrives during later runs.
  std::shared_ptr<std::optional<std::vector<actors::ack_reply>>>
  ack_located_later(const std::string& partition_uuid, const std::string& group,
                    std::vector<ack_request> reqs) {
    return test::ack_located_later(sys, broker, partition_uuid, group,
                                   std::move(reqs));
  }

  std::optional<std::vector<actors::ack_reply>>
  ack_located(const std::string& partition_uuid, const std::string& group,
              std::vector<ack_request> reqs) {
    auto r = ack_located_later(partition_uuid, group, std::move(reqs));
    run();
    return *r;
  }

  /// As above, of partition `partition` of `queue` by name: its uuid is the
  /// stored record's (the partition must be stored).
  std::shared_ptr<std::optional<std::vector<actors::ack_reply>>>
  ack_located_later(const std::string& queue, const std::string& partition,
                    const std::string& group, std::vector<ack_request> reqs) {
    return ack_located_later(this->partition(queue, partition).uuid, group,
                             std::move(reqs));
  }

  std::optional<std::vector<actors::ack_reply>>
  ack_located(const std::string& queue, const std::string& partition,
              const std::string& group, std::vector<ack_request> reqs) {
    return ack_located(this->partition(queue, partition).uuid, group,
                       std::move(reqs));
  }

  // -- what the store holds (read directly, not through the actors) --------

  /// The id of stored queue `queue` (fails the test if none).
  storage::queue_id queue_id(const std::string& queue) {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto qs = storage::tables::all_queues(*t);
    REQUIRE(qs);
    for (auto& q : *qs)
      if (q.name == queue)
        return q.id;
    FAIL("no queue " << queue);
    return {};
  }

  /// The stored record of partition `name` of `queue` (fails the test if none).
  storage::partition_record partition(const std::string& queue,
                                      const std::string& name) {
    auto q = queue_id(queue);
    auto t = store.store->db().read();
    REQUIRE(t);
    auto ps = storage::tables::partitions_of(*t, q);
    REQUIRE(ps);
    for (auto& p : *ps)
      if (p.name == name)
        return p;
    FAIL("no partition " << name);
    return {};
  }

  /// The stored cursor row of `group` on (queue, part), if any.
  std::optional<storage::cursor_record> cursor(const std::string& queue,
                                               const std::string& part,
                                               const std::string& group) {
    auto p = partition(queue, part);
    auto t = store.store->db().read();
    REQUIRE(t);
    auto c = storage::tables::get_cursor(*t, p.queue, p.id, group);
    REQUIRE(c);
    return *c;
  }

  /// (Re)starts the broker over the same store, as after a restart.
  void start() {
    if (broker)
      caf::anon_send_exit(broker, caf::exit_reason::user_shutdown);
    run();
    actors::broker_config cfg;
    cfg.node.store = store.store.get();
    cfg.node.writer = gated;
    cfg.node.durable = marks;
    cfg.node.metrics = metrics;
    cfg.node.default_subscription = default_subscription;
    cfg.node.wall = [this] { return wall(); };
    cfg.pop = pop_limits;
    cfg.push = push_limits;
    cfg.node.retention_interval = retention_interval;
    cfg.node.delete_step = delete_step;
    cfg.node.sweep_step = sweep_step;
    cfg.node.partition_idle = partition_idle;
    cfg.node.max_partition_actors = max_partition_actors;
    cfg.node.segments = segments;
    cfg.slots = slots;
    auto b = actors::spawn_broker(sys, cfg);
    REQUIRE(b);
    broker = *b;
  }
};

} // namespace spool::test
