// A cluster node's broker (docs/cluster.md, "Serving"): it runs the queues
// of the slots it serves as leader only, loads a slot's queues from the
// store when it starts serving it and stops them when deposed, and refuses
// everything else of the slot naming the leader. A request over several
// slots is refused with cross_slot. The replica host is played by hand: the
// directory it keeps, and the notices it sends.

#include "sim/broker_sim.hpp"

#include "core/replica/slot_directory.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using cluster::node_id;

namespace {

constexpr node_id n1{0}, n2{1}, n3{2};

/// The replica host's fence as the writer meets it: a batch is admitted
/// only in the epoch the directory gives its slot now. A batch with no term
/// is refused and counted: every write of a cluster node carries one.
struct fence_hook : actors::commit_hook {
  std::shared_ptr<core::slot_directory> dir;
  std::vector<std::string> unfenced;
  std::size_t fenced = 0;

  std::optional<api_error> admit(const storage::write_batch& b) override {
    if (b.mutations.empty())
      return std::nullopt;
    auto st = dir->get(storage::slot_of(b.mutations.front()));
    if (b.term == 0) {
      unfenced.push_back("mutation #"
                         + std::to_string(b.mutations.front().index()));
      return make_error(errc::internal, "a write with no term");
    }
    if (!st.serving || st.epoch != b.term) {
      ++fenced;
      return make_error(errc::unavailable, "Server busy: epoch ", b.term,
                        " is over");
    }
    return std::nullopt;
  }
  std::vector<std::uint64_t>
  committed(const std::vector<storage::slot_seq>& marks) override {
    std::vector<std::uint64_t> out;
    for (auto& m : marks)
      out.push_back(dir->get(m.slot).epoch);
    return out;
  }
};

struct cluster_sim : broker_sim {
  std::shared_ptr<core::slot_directory> dir;
  std::shared_ptr<fence_hook> fence = std::make_shared<fence_hook>();
  /// The epoch the next `lead` or `depose` gives.
  cluster::epoch_t epoch = 1;

  ~cluster_sim() {
    if (std::uncaught_exceptions() == 0)
      CHECK(fence->unfenced.empty());
  }

  cluster_sim() {
    dir = std::make_shared<core::slot_directory>(
        store.store->slot_count(),
        core::cluster_names{n1, {n1, n2, n3}, {"alpha", "beta", "gamma"}, 3});
    slots = dir;
    fence->dir = dir;
    commits->set_hook(fence);
    start(); // again, in cluster mode
  }

  slot_t slot(const std::string& queue) {
    return store.store->slot_of(queue);
  }

  /// The host's notice: this node serves (or stops serving) slot `s`;
  /// `leader` is who leads it then.
  void lead(slot_t s) {
    tell_lead(s);
    run();
  }
  void depose(slot_t s, node_id leader) {
    tell_depose(s, leader);
    run();
  }
  /// The notices alone, nothing run.
  void tell_lead(slot_t s) {
    auto e = ++epoch;
    dir->set(s, {.held = true, .serving = true, .leader = n1, .epoch = e});
    caf::anon_send(broker, actors::slot_atom::value, s, std::uint64_t{e});
  }
  void tell_depose(slot_t s, node_id leader) {
    dir->set(s, {.held = true, .leader = leader, .epoch = ++epoch});
    caf::anon_send(broker, actors::slot_atom::value, s, std::uint64_t{0});
  }

  actors::queue_push_reply try_push(std::vector<std::string> queues) {
    std::vector<actors::broker_push_item> v;
    for (auto& q : queues)
      v.push_back({q, {"Default", msg("m-" + q)}});
    auto r = request<actors::queue_push_reply>(broker, actors::push_atom::value,
                                               v);
    REQUIRE(r);
    return *r;
  }

  actors::queue_pop_reply try_pop(const std::string& queue,
                                  const std::string& group) {
    auto r = request<actors::queue_pop_reply>(broker, actors::pop_atom::value,
                                              queue, pop_request(group));
    REQUIRE(r);
    return *r;
  }

  bool stored(const std::string& queue) {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto qs = storage::tables::all_queues(*t);
    REQUIRE(qs);
    return std::any_of(qs->begin(), qs->end(),
                       [&](auto& q) { return q.name == queue; });
  }

  std::vector<std::string> listed() {
    auto r = request<actors::queues_reply>(broker, actors::info_atom::value,
                                           std::optional<std::string>{});
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    std::vector<std::string> out;
    for (auto& q : r->queues)
      out.push_back(q.record.name);
    return out;
  }
};

/// Two queue names in different slots.
std::pair<std::string, std::string> two_slots(cluster_sim& c) {
  std::string a = "orders";
  for (int i = 0;; ++i) {
    auto b = "billing-" + std::to_string(i);
    if (c.slot(b) != c.slot(a))
      return {a, b};
  }
}

} // namespace

TEST_CASE("a cluster node refuses a slot it does not lead, naming the leader, "
          "and stores nothing",
          "[sim][cluster][slots]") {
  cluster_sim c;
  auto s = c.slot("orders");
  // No leader known yet: retry later.
  auto r = c.try_push({"orders"});
  REQUIRE(r.failure);
  CHECK(r.failure->code == errc::unavailable);
  CHECK(r.failure->message.find("no leader yet") != std::string::npos);
  // Another node leads it: the answer names that node.
  c.dir->set(s, {.held = true, .leader = n2, .epoch = 1});
  r = c.try_push({"orders"});
  REQUIRE(r.failure);
  CHECK(r.failure->code == errc::not_leader);
  CHECK(r.failure->message
        == "Not the leader of slot " + std::to_string(s) + "; leader is beta");
  auto p = c.try_pop("orders", "g");
  REQUIRE(p.failure);
  CHECK(p.failure->code == errc::not_leader);
  CHECK_FALSE(c.stored("orders"));
  CHECK(c.listed().empty());
}

TEST_CASE("a cluster node serves a slot's queues while it leads the slot and "
          "stops them when deposed",
          "[sim][cluster][slots]") {
  cluster_sim c;
  auto s = c.slot("orders");
  c.lead(s);
  REQUIRE_FALSE(c.try_push({"orders"}).failure);
  auto got = c.try_pop("orders", "g");
  REQUIRE_FALSE(got.failure);
  REQUIRE(got.claimed.size() == 1);
  CHECK(c.listed() == std::vector<std::string>{"orders"});
  // Deposed: the queue stops here; everything of it names the new leader.
  c.depose(s, n3);
  auto r = c.try_push({"orders"});
  REQUIRE(r.failure);
  CHECK(r.failure->code == errc::not_leader);
  CHECK(r.failure->message.find("leader is gamma") != std::string::npos);
  auto p = c.try_pop("orders", "g2");
  REQUIRE(p.failure);
  CHECK(p.failure->code == errc::not_leader);
  CHECK(c.listed().empty());
  // Leading again: the queue comes back from the store, its message with it.
  c.lead(s);
  CHECK(c.listed() == std::vector<std::string>{"orders"});
  auto again = c.try_pop("orders", "g2");
  REQUIRE_FALSE(again.failure);
  REQUIRE(again.claimed.size() == 1);
  REQUIRE(again.claimed[0].reply.messages.size() == 1);
  CHECK(again.claimed[0].reply.messages[0].frame.data.payload == "m-orders");
}

TEST_CASE("a parked pop on a slot whose leader is deposed is answered empty",
          "[sim][cluster][slots]") {
  cluster_sim c;
  auto s = c.slot("orders");
  c.lead(s);
  auto req = c.pop_request("g");
  req.wait = true;
  req.timeout = 30s;
  auto parked = c.request_later<actors::queue_pop_reply>(
      c.broker, actors::pop_atom::value, std::string{"orders"}, req);
  c.run();
  CHECK_FALSE(*parked); // waiting for a push
  c.depose(s, n2);
  REQUIRE(*parked);
  CHECK((*parked)->claimed.empty());
}

TEST_CASE("a push or a transaction over two slots is refused with cross_slot "
          "in a cluster, and nothing of it is stored",
          "[sim][cluster][slots]") {
  cluster_sim c;
  auto [a, b] = two_slots(c);
  c.lead(c.slot(a));
  c.lead(c.slot(b));
  auto r = c.try_push({a, b});
  REQUIRE(r.failure);
  CHECK(r.failure->code == errc::cross_slot);
  CHECK(r.failure->message.find("{tag}") != std::string::npos);
  CHECK_FALSE(c.stored(a));
  CHECK_FALSE(c.stored(b));
  core::txn_request t;
  t.ops.push_back(core::txn_push_op{{{a, "Default", msg("x")}}});
  t.ops.push_back(core::txn_push_op{{{b, "Default", msg("y")}}});
  auto tr = c.request<actors::txn_reply>(c.broker, actors::txn_atom::value, t);
  REQUIRE(tr);
  REQUIRE(tr->failure);
  CHECK(tr->failure->code == errc::cross_slot);
  CHECK_FALSE(c.stored(a));
  // Queues that share a {tag} share a slot: one push, one commit.
  c.lead(c.slot("{orders}.in"));
  REQUIRE(c.slot("{orders}.in") == c.slot("{orders}.out"));
  CHECK_FALSE(c.try_push({"{orders}.in", "{orders}.out"}).failure);
}

TEST_CASE("a slot a node starts serving continues the ids another leader "
          "minted there",
          "[sim][cluster][slots]") {
  cluster_sim c;
  auto s = c.slot("orders");
  // Another leader created a queue of the slot: this node applied it as a
  // follower (its rows and the slot's counters), its own counters did not
  // move.
  storage::queue_record rec;
  rec.id = storage::queue_id{slot_id(s, 1)};
  for (int i = 0; rec.name.empty() || c.slot(rec.name) != s; ++i)
    rec.name = "made-elsewhere-" + std::to_string(i);
  storage::write_batch b;
  b.mutations.emplace_back(storage::mut::create_queue{rec});
  c.commits->set_hook(nullptr); // an apply, not a write of this node's
  auto w
      = c.request<actors::write_result>(c.writer, actors::write_atom::value, b);
  c.commits->set_hook(c.fence);
  REQUIRE(w);
  REQUIRE_FALSE(w->failure);
  c.lead(s);
  CHECK(c.listed() == std::vector<std::string>{rec.name});
  REQUIRE_FALSE(c.try_push({"orders"}).failure);
  CHECK(c.queue_id("orders").value != rec.id.value);
  CHECK(slot_of_id(c.queue_id("orders").value) == s);
}

TEST_CASE("a slot stopped while its queues load runs none of them",
          "[sim][cluster][slots]") {
  cluster_sim c;
  auto s = c.slot("orders");
  c.lead(s);
  REQUIRE_FALSE(c.try_push({"orders"}).failure);
  c.depose(s, n2);
  // Served again and deposed again before the load's barrier returns.
  c.tell_lead(s);
  c.tell_depose(s, n2);
  c.run();
  CHECK(c.listed().empty());
  auto p = c.try_pop("orders", "g");
  REQUIRE(p.failure);
  CHECK(p.failure->code == errc::not_leader);
}

TEST_CASE("an ack of a slot this node no longer leads names the leader",
          "[sim][cluster][slots]") {
  cluster_sim c;
  auto s = c.slot("orders");
  c.lead(s);
  REQUIRE_FALSE(c.try_push({"orders"}).failure);
  auto got = c.try_pop("orders", "g");
  REQUIRE(got.claimed.size() == 1);
  auto& d = got.claimed[0];
  ack_request a;
  a.lease_id = d.reply.lease->id;
  a.off = d.reply.messages.at(0).frame.off;
  auto uuid = c.partition("orders", "Default").uuid;
  c.depose(s, n2);
  auto acked = c.ack_located(uuid, "g", std::vector{a});
  REQUIRE(acked);
  REQUIRE(acked->size() == 1);
  REQUIRE(acked->front().failure);
  CHECK(acked->front().failure->code == errc::not_leader);
  CHECK(acked->front().failure->message.find("leader is beta")
        != std::string::npos);
}

TEST_CASE("a write made while this node led a slot in an earlier epoch is not "
          "stored when it leads the slot again",
          "[sim][cluster][slots][fence]") {
  cluster_sim c;
  auto s = c.slot("{o}.a");
  REQUIRE(c.slot("{o}.b") == s);
  c.lead(s);
  REQUIRE_FALSE(c.try_push({"{o}.a", "{o}.b"}).failure);
  // Two pushes reach the writer and wait there: one a queue writes, one
  // over two queues the broker writes.
  c.gate_st->closed = true;
  std::vector<actors::broker_push_item> one{
      {"{o}.a", {"Default", msg("late-1")}}};
  std::vector<actors::broker_push_item> two{
      {"{o}.a", {"Default", msg("late-2")}},
      {"{o}.b", {"Default", msg("late-3")}}};
  auto p1 = c.request_later<actors::queue_push_reply>(
      c.broker, actors::push_atom::value, one);
  auto p2 = c.request_later<actors::queue_push_reply>(
      c.broker, actors::push_atom::value, two);
  c.run();
  REQUIRE(c.gate_st->held.size() == 2);
  // Deposed and elected again before the writer takes them: the node
  // leads the slot, in a later epoch (another leader may have written in
  // between: their offsets are stale).
  c.tell_depose(s, n2);
  c.tell_lead(s);
  c.run();
  c.gate_st->closed = false;
  caf::anon_send(c.gated, actors::flush_atom::value);
  c.run();
  CHECK(c.fence->fenced == 2);
  // The queue that made the first one is gone (no answer); the broker
  // answers the second with the refusal.
  REQUIRE(*p2);
  REQUIRE((*p2)->failure);
  CHECK((*p2)->failure->code == errc::unavailable);
  // Served again: only what the first term stored is there.
  for (auto q : {"{o}.a", "{o}.b"}) {
    auto got = c.try_pop(q, "fresh");
    REQUIRE_FALSE(got.failure);
    REQUIRE(got.claimed.size() == 1);
    CHECK(got.claimed[0].reply.messages.size() == 1);
  }
  REQUIRE_FALSE(c.try_push({"{o}.a"}).failure);
}
