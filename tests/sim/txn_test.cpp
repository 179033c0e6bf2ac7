// Transactions through the broker (semantics.md §10): pushes and acks all
// or nothing in one write, validate-then-commit, stored answers by id. The
// writer sits behind a gate the test can close, reorder and open, so writes
// can be counted and interleavings chosen.

#include "sim/broker_sim.hpp"

#include "actors/broker/broker_actor.hpp"
#include "actors/fan_out.hpp"
#include "actors/writer/writer_actor.hpp"
#include "sim/write_gate.hpp"
#include "unit/storage/fixture.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct txn_fixture : sim_fixture {
  store_fixture store;
  actors::writer_actor writer;
  actors::writer_actor gated;
  std::shared_ptr<gate_state> gate_st = std::make_shared<gate_state>();
  actors::broker_actor broker;
  int leases = 0;
  storage::micros wall = 1'785'000'000'000'000;
  core::txn_retention retention;

  txn_fixture() {
    auto w = actors::spawn_writer(sys, {.env = &store.store->db()}, false);
    REQUIRE(w);
    writer = *w;
    gated = sys.spawn(gate, gate_st, writer);
    start();
  }

  ~txn_fixture() {
    gate_st->closed = false;
    caf::anon_send(gated, actors::flush_atom::value);
    run();
    // Stop the broker (and its linked queues, with their periodic timers)
    // before `store` is destroyed.
    caf::anon_send_exit(broker, caf::exit_reason::user_shutdown);
    drain();
  }

  void start() {
    if (broker)
      caf::anon_send_exit(broker, caf::exit_reason::user_shutdown);
    run();
    actors::broker_config cfg;
    cfg.node.store = store.store.get();
    cfg.node.writer = gated;
    cfg.node.wall = [this] { return wall; };
    cfg.txn_retention = retention;
    auto b = actors::spawn_broker(sys, cfg);
    REQUIRE(b);
    broker = *b;
  }

  /// Makes `q` a queue with maxSize 1 holding one message ("a").
  void fill(const std::string& q) {
    actors::configure_request c;
    c.queue = q;
    c.options.max_size = 1;
    REQUIRE(request<actors::configure_reply>(broker,
                                             actors::configure_atom::value, c));
    push(q, "a");
  }

  void close_gate() {
    gate_st->closed = true;
  }
  /// Releases the held writes in their (possibly reordered) `held` order.
  void open_gate() {
    gate_st->closed = false;
    caf::anon_send(gated, actors::flush_atom::value);
    run();
  }

  actors::queue_push_reply push(const std::string& q, std::string payload,
                                std::string txid = {}) {
    std::vector<actors::broker_push_item> v{
        {q, {"Default", msg(std::move(payload), std::move(txid))}}};
    auto r = request<actors::queue_push_reply>(broker, actors::push_atom::value,
                                               v);
    REQUIRE(r);
    REQUIRE(!r->failure);
    return *r;
  }

  actors::queue_pop_request pop_req(std::string group, std::size_t batch) {
    actors::queue_pop_request req;
    req.partition = "Default";
    req.group = std::move(group);
    req.batch = batch;
    req.lease_id = "lease-" + std::to_string(++leases);
    return req;
  }

  actors::queue_pop_reply pop(const std::string& q, std::string group,
                              std::size_t batch = 10) {
    auto r = request<actors::queue_pop_reply>(
        broker, actors::pop_atom::value, q, pop_req(std::move(group), batch));
    REQUIRE(r);
    REQUIRE(!r->failure);
    return *r;
  }

  /// The lease of a pop that must have delivered.
  lease_info lease_of(const actors::queue_pop_reply& r) {
    REQUIRE(r.claimed.size() == 1);
    REQUIRE(r.claimed[0].reply.lease);
    return *r.claimed[0].reply.lease;
  }

  /// A transaction sent now, answered when the test runs the actors.
  auto txn_later(const core::txn_request& req) {
    return request_later<actors::txn_reply>(broker, actors::txn_atom::value,
                                            req);
  }

  actors::txn_reply txn(core::txn_request req) {
    auto r = request<actors::txn_reply>(broker, actors::txn_atom::value,
                                        std::move(req));
    REQUIRE(r);
    return *r;
  }

  std::vector<actors::ack_reply>
  plain_ack(const std::string& q, const std::string& group, ack_request a) {
    // As the gateway sends it: (q, "Default") by its stored uuid.
    auto r = ack_located_later(sys, broker, stored(q).first.uuid, group, {a});
    run();
    REQUIRE(*r);
    return **r;
  }

  /// The stored partition record and payloads of (q, "Default").
  std::pair<storage::partition_record, std::vector<std::string>>
  stored(const std::string& q) {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto qs = storage::tables::all_queues(*t);
    REQUIRE(qs);
    auto qi = std::find_if(qs->begin(), qs->end(),
                           [&](auto& x) { return x.name == q; });
    REQUIRE(qi != qs->end());
    auto ps = storage::tables::partitions_of(*t, qi->id);
    REQUIRE(ps);
    REQUIRE(ps->size() == 1);
    auto p = ps->front();
    std::vector<std::string> payloads;
    if (p.next_offset > p.watermark) {
      auto r = storage::read_frames(*t, p.queue, p.id, p.watermark, SIZE_MAX);
      REQUIRE(r);
      for (auto& f : r->frames)
        payloads.push_back(f.data.payload);
    }
    return {p, payloads};
  }

  /// The uuid of (q, "Default"): what a transaction's ack names.
  std::string uuid(const std::string& q) {
    return stored(q).first.uuid;
  }

  std::optional<storage::cursor_record> cursor(const std::string& q,
                                               const std::string& group) {
    auto [p, _] = stored(q);
    auto t = store.store->db().read();
    REQUIRE(t);
    auto c = storage::tables::get_cursor(*t, p.queue, p.id, group);
    REQUIRE(c);
    return *c;
  }

  bool queue_exists(const std::string& q) {
    auto r
        = request<std::vector<std::string>>(broker, actors::list_atom::value);
    REQUIRE(r);
    return std::find(r->begin(), r->end(), q) != r->end();
  }
};

core::txn_ack_op ack_op(const std::string& uuid, const std::string& group,
                        const lease_info& lease, std::int64_t off,
                        ack_status s = ack_status::completed) {
  core::txn_ack_op op{{}, uuid, group, {}};
  op.ack.lease_id = lease.id;
  op.ack.off = offset{off};
  op.ack.status = s;
  op.ack.error = "bad message";
  return op;
}

core::txn_push_op push_op(const std::string& q,
                          std::vector<std::pair<std::string, std::string>> m) {
  core::txn_push_op op;
  for (auto& [payload, txid] : m)
    op.items.push_back({q, "Default", msg(payload, txid)});
  return op;
}

std::vector<std::int64_t> offsets(const actors::queue_pop_reply& r) {
  std::vector<std::int64_t> out;
  for (auto& c : r.claimed)
    for (auto& m : c.reply.messages)
      out.push_back(m.frame.off.value);
  return out;
}

} // namespace

TEST_CASE("a transaction with an invalid ack stores nothing and leaves leases "
          "as they were",
          "[sim][txn]") {
  txn_fixture fx;
  for (auto p : {"a", "b", "c"})
    fx.push("q", p);
  auto lease = fx.lease_of(fx.pop("q", "g", 3));
  auto writes = fx.gate_st->seen.size();
  core::txn_request req;
  req.id = "tx-invalid";
  req.ops.push_back(push_op("fresh", {{"x", ""}}));
  req.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 0));
  auto stale = ack_op(fx.uuid("q"), "g", lease, 1);
  stale.ack.lease_id = "not-the-lease";
  req.ops.push_back(stale);
  auto r = fx.txn(req);
  CHECK(!r.failure);
  CHECK(!r.result.success);
  CHECK(r.result.failed_op == 2u);
  CHECK(r.result.error == "operations[2]: Invalid or expired lease");
  CHECK(r.result.results.empty());
  // Nothing written, no queue created, no answer stored.
  CHECK(fx.gate_st->seen.size() == writes);
  CHECK(!fx.queue_exists("fresh"));
  // The lease is as it was: it still holds, and still settles frame 0.
  CHECK(fx.pop("q", "g").claimed.empty());
  auto c = fx.cursor("q", "g");
  REQUIRE(c);
  CHECK(c->committed == offset{-1});
  ack_request a;
  a.lease_id = lease.id;
  a.off = offset{0};
  auto acked = fx.plain_ack("q", "g", a);
  REQUIRE(acked.size() == 1);
  CHECK(acked[0].error == ack_error::none);
  CHECK(fx.cursor("q", "g")->committed == offset{0});
  // The id was not spent: the corrected transaction runs.
  req.ops.pop_back();
  req.ops.pop_back();
  auto again = fx.txn(req);
  CHECK(again.result.success);
}

TEST_CASE("an aborted transaction leaves no offset gap", "[sim][txn]") {
  txn_fixture fx;
  fx.push("q", "m0");
  auto lease = fx.lease_of(fx.pop("q", "g", 1));
  core::txn_request req;
  req.ops.push_back(push_op("q", {{"t1", ""}, {"t2", ""}}));
  req.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 5)); // beyond lastOffset
  auto r = fx.txn(req);
  CHECK(!r.result.success);
  CHECK(r.result.error == "operations[1]: Message not found");
  auto next = fx.push("q", "m1");
  REQUIRE(next.results.size() == 1);
  CHECK(next.results[0].result.off == offset{1});
  auto [p, payloads] = fx.stored("q");
  CHECK(p.next_offset == offset{2});
  CHECK(payloads == std::vector<std::string>{"m0", "m1"});
}

TEST_CASE("a plain push concurrent with a transaction keeps its order",
          "[sim][txn]") {
  txn_fixture fx;
  fx.push("q", "m0");
  auto lease = fx.lease_of(fx.pop("q", "g", 1));
  fx.close_gate();
  core::txn_request req;
  req.ops.push_back(push_op("q", {{"txn", ""}}));
  req.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 0));
  auto tr = fx.txn_later(req);
  fx.run();
  REQUIRE(fx.gate_st->held.size() == 1); // the transaction's one write
  std::vector<actors::broker_push_item> plain{{"q", {"Default", msg("plain")}}};
  auto pr = fx.request_later<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, plain);
  fx.run();
  REQUIRE(fx.gate_st->held.size() == 2);
  // The plain push commits first; its frame stays unreadable behind the
  // transaction's until that one commits.
  auto txn_write = std::move(fx.gate_st->held.front());
  fx.gate_st->held.pop_front();
  fx.open_gate(); // only the plain push
  REQUIRE(*pr);
  REQUIRE(!(*pr)->failure);
  CHECK((*pr)->results[0].result.off == offset{2});
  CHECK(!*tr);
  CHECK(offsets(fx.pop("q", "reader")) == std::vector<std::int64_t>{0});
  // Now the transaction's write.
  fx.gate_st->closed = true;
  fx.gate_st->held.push_back(std::move(txn_write));
  fx.open_gate();
  REQUIRE(*tr);
  REQUIRE((*tr)->result.success);
  CHECK((*tr)->result.results[0].items[0].off == offset{1});
  auto all = fx.pop("q", "reader2");
  CHECK(offsets(all) == std::vector<std::int64_t>{0, 1, 2});
  CHECK(fx.stored("q").second
        == std::vector<std::string>{"m0", "txn", "plain"});
}

TEST_CASE("a transaction's pushes and acks become durable in one write",
          "[sim][txn]") {
  txn_fixture fx;
  fx.push("q", "m0");
  fx.push("q", "m1");
  fx.push("out", "o0");
  auto lease = fx.lease_of(fx.pop("q", "g", 2));
  auto writes = fx.gate_st->seen.size();
  core::txn_request req;
  req.id = "tx-one-write";
  req.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 0));
  req.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 1, ack_status::dlq));
  req.ops.push_back(push_op("out", {{"o1", ""}, {"o2", ""}}));
  auto r = fx.txn(req);
  REQUIRE(!r.failure);
  REQUIRE(r.result.success);
  CHECK(r.result.transaction_id == "tx-one-write");
  REQUIRE(r.result.results.size() == 3);
  CHECK(r.result.results[1].dead_lettered);
  CHECK(r.result.results[1].lease_released);
  REQUIRE(r.result.results[2].items.size() == 2);
  CHECK(r.result.results[2].items[1].off == offset{2});
  REQUIRE(fx.gate_st->seen.size() == writes + 1);
  auto& batch = fx.gate_st->seen.back();
  CHECK(count_of<storage::mut::append_segment>(batch) == 1);
  CHECK(count_of<storage::mut::put_cursor>(batch) == 1);
  CHECK(count_of<storage::mut::put_dlq>(batch) == 1);
  CHECK(count_of<storage::mut::put_txn>(batch) == 1);
  CHECK(fx.cursor("q", "g")->committed == offset{1});
  CHECK(fx.stored("out").second == std::vector<std::string>{"o0", "o1", "o2"});
}

TEST_CASE("a transaction pushing to more queues than the fan-out window "
          "stores every item in one write and answers each in order",
          "[sim][txn]") {
  // The seals and settles of its queues go out at most gather_window at a
  // time (the window itself: fan_out_test).
  txn_fixture fx;
  constexpr std::size_t n = 2 * actors::gather_window + 5;
  for (std::size_t i = 0; i < n; ++i) // the queues exist, one frame each
    fx.push("q" + std::to_string(i), "old");
  auto writes = fx.gate_st->seen.size();
  core::txn_push_op op;
  for (std::size_t i = 0; i < n; ++i) {
    core::txn_push_item item;
    item.queue = "q" + std::to_string(n - 1 - i); // not in queue order
    item.frame = msg("new" + std::to_string(i));
    op.items.push_back(std::move(item));
  }
  core::txn_request req;
  req.id = "tx-wide";
  req.ops.push_back(std::move(op));
  auto r = fx.txn(req);
  REQUIRE(!r.failure);
  REQUIRE(r.result.success);
  REQUIRE(r.result.results.size() == 1);
  auto& items = r.result.results[0].items;
  REQUIRE(items.size() == n);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("item " << i);
    CHECK(items[i].queue == "q" + std::to_string(n - 1 - i));
    CHECK(items[i].off == offset{1});
  }
  CHECK(fx.gate_st->seen.size() == writes + 1);
  CHECK(fx.stored("q0").second
        == std::vector<std::string>{"old", "new" + std::to_string(n - 1)});
}

TEST_CASE("a repeated transaction id returns the stored result", "[sim][txn]") {
  txn_fixture fx;
  core::txn_request req;
  req.id = "tx-repeat";
  req.ops.push_back(push_op("q", {{"once", ""}}));
  auto first = fx.txn(req);
  REQUIRE(first.result.success);
  auto writes = fx.gate_st->seen.size();
  auto again = fx.txn(req);
  CHECK(again.result == first.result);
  CHECK(fx.gate_st->seen.size() == writes); // nothing written again
  // Concurrent repeats: one runs, the other gets its answer.
  core::txn_request other;
  other.id = "tx-concurrent";
  other.ops.push_back(push_op("q", {{"twice?", ""}}));
  auto a = fx.txn_later(other);
  auto b = fx.txn_later(other);
  fx.run();
  REQUIRE(*a);
  REQUIRE(*b);
  CHECK((*a)->result.success);
  CHECK((*a)->result == (*b)->result);
  CHECK(fx.stored("q").second == std::vector<std::string>{"once", "twice?"});
}

TEST_CASE("a transaction's stored answer is kept by its home queue: "
          "deleting that queue forgets it",
          "[sim][txn]") {
  txn_fixture fx;
  core::txn_request req;
  req.id = "tx-home";
  req.ops.push_back(push_op("home", {{"a", ""}}));
  req.ops.push_back(push_op("away", {{"b", ""}}));
  REQUIRE(fx.txn(req).result.success);
  auto& batch = fx.gate_st->seen.back();
  REQUIRE(count_of<storage::mut::put_txn>(batch) == 1);
  auto home_id = fx.stored("home").first.queue;
  for (auto& m : batch.mutations)
    if (auto* put = std::get_if<storage::mut::put_txn>(&m))
      CHECK(put->queue == home_id);
  auto del = fx.request<actors::delete_queue_reply>(
      fx.broker, actors::delete_atom::value, std::string{"home"});
  REQUIRE(del);
  REQUIRE_FALSE(del->failure);
  // The repeat runs again: "home" is a new queue, "away" dedups nothing
  // (no transaction ids on the items), so it holds "b" twice.
  REQUIRE(fx.txn(req).result.success);
  CHECK(fx.stored("home").second == std::vector<std::string>{"a"});
  CHECK(fx.stored("away").second == std::vector<std::string>{"b", "b"});
}

TEST_CASE("one transaction id under two home queues is two transactions, "
          "also while both are in flight",
          "[sim][txn]") {
  txn_fixture fx;
  core::txn_request a;
  a.id = "tx-shared";
  a.ops.push_back(push_op("qa", {{"from a", ""}}));
  auto b = a;
  b.ops.front() = push_op("qb", {{"from b", ""}});
  auto ra = fx.txn_later(a);
  auto rb = fx.txn_later(b);
  fx.run();
  REQUIRE(*ra);
  REQUIRE(*rb);
  CHECK((*ra)->result.success);
  CHECK((*rb)->result.success);
  CHECK(fx.stored("qa").second == std::vector<std::string>{"from a"});
  CHECK(fx.stored("qb").second == std::vector<std::string>{"from b"});
  // Each repeat finds its own answer.
  CHECK(fx.txn(a).result == (*ra)->result);
  CHECK(fx.txn(b).result == (*rb)->result);
}

TEST_CASE("a duplicate push inside a transaction is not a failure",
          "[sim][txn]") {
  txn_fixture fx;
  fx.push("q", "original", "id-1");
  core::txn_request req;
  req.ops.push_back(
      push_op("q", {{"dup", "id-1"}, {"new", "id-2"}, {"dup-in-txn", "id-2"}}));
  auto r = fx.txn(req);
  REQUIRE(r.result.success);
  auto& items = r.result.results[0].items;
  REQUIRE(items.size() == 3);
  CHECK(items[0].status == core::txn_push_status::duplicate);
  CHECK(items[0].off == offset{0});
  CHECK(items[1].status == core::txn_push_status::queued);
  CHECK(items[1].off == offset{1});
  CHECK(items[2].status == core::txn_push_status::duplicate);
  CHECK(items[2].off == offset{1});
  CHECK(fx.stored("q").second == std::vector<std::string>{"original", "new"});
  CHECK(!r.result.transaction_id.empty()); // generated
}

TEST_CASE("retry in a transaction is refused", "[sim][txn]") {
  txn_fixture fx;
  fx.push("q", "m0");
  auto lease = fx.lease_of(fx.pop("q", "g", 1));
  auto writes = fx.gate_st->seen.size();
  core::txn_request req;
  req.ops.push_back(push_op("q", {{"x", ""}}));
  req.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 0, ack_status::retry));
  auto r = fx.txn(req);
  CHECK(!r.result.success);
  CHECK(r.result.error
        == "operations[1]: retry is not allowed in a transaction");
  CHECK(fx.gate_st->seen.size() == writes);
  CHECK(fx.pop("q", "g").claimed.empty()); // the lease still holds
}

TEST_CASE("a committed transaction survives a restart", "[sim][txn][restart]") {
  txn_fixture fx;
  for (auto p : {"m0", "m1", "m2"})
    fx.push("q", p);
  auto lease = fx.lease_of(fx.pop("q", "g", 2));
  core::txn_request req;
  req.id = "tx-restart";
  req.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 0));
  req.ops.push_back(push_op("q", {{"m3", ""}}));
  auto r = fx.txn(req);
  REQUIRE(r.result.success);
  fx.start();
  // Frame 0 stays acked; the lease on frame 1 was lost to the restart.
  CHECK(fx.cursor("q", "g")->committed == offset{0});
  CHECK(offsets(fx.pop("q", "g")) == std::vector<std::int64_t>{1, 2, 3});
  auto again = fx.txn(req);
  CHECK(again.result == r.result);
  CHECK(fx.stored("q").second
        == std::vector<std::string>{"m0", "m1", "m2", "m3"});
}

TEST_CASE("a lease that expires while its transaction is staged ends only "
          "after the transaction settles",
          "[sim][txn][expiry]") {
  txn_fixture fx;
  fx.push("q", "m0");
  fx.push("q", "m1");
  auto lease = fx.lease_of(fx.pop("q", "g", 2));
  fx.close_gate();
  core::txn_request req;
  req.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 0));
  auto tr = fx.txn_later(req);
  fx.run();
  REQUIRE(fx.gate_st->held.size() == 1);
  // The cursor is staged: a pop of its group waits, and the lease's expiry
  // (300 s) passes without touching the staged state.
  auto parked = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"},
      fx.pop_req("g", 10));
  fx.advance(301s);
  CHECK(!*parked);
  CHECK(fx.gate_st->held.size() == 1); // the expiry wrote nothing meanwhile
  fx.open_gate();
  REQUIRE(*tr);
  CHECK((*tr)->result.success);
  // The transaction's ack stands; the deferred expiry then charged the one
  // frame left unsettled, and the waiting pop got it again.
  auto c = fx.cursor("q", "g");
  REQUIRE(c);
  CHECK(c->committed == offset{0});
  CHECK(!c->isolated); // one unsettled frame: charged, not isolated
  REQUIRE(!c->counters.empty());
  CHECK(c->counters.front().off == offset{1});
  CHECK(c->counters.front().failures == 1);
  REQUIRE(*parked);
  CHECK(offsets(**parked) == std::vector<std::int64_t>{1});
}

TEST_CASE("transactions acking the same cursors in opposite orders both "
          "finish",
          "[sim][txn]") {
  txn_fixture fx;
  fx.push("q", "m0");
  auto l1 = fx.lease_of(fx.pop("q", "g1", 1));
  auto l2 = fx.lease_of(fx.pop("q", "g2", 1));
  fx.close_gate();
  core::txn_request a;
  a.ops.push_back(ack_op(fx.uuid("q"), "g2", l2, 0));
  a.ops.push_back(ack_op(fx.uuid("q"), "g1", l1, 0));
  core::txn_request b;
  b.ops.push_back(ack_op(fx.uuid("q"), "g1", l1, 0));
  b.ops.push_back(ack_op(fx.uuid("q"), "g2", l2, 0));
  auto ra = fx.txn_later(a);
  auto rb = fx.txn_later(b);
  fx.run();
  fx.open_gate();
  REQUIRE(*ra);
  REQUIRE(*rb);
  // The second waited for the first at g1's cursor (the first cursor in
  // the global order for both), then found the lease ended by the first.
  CHECK((*ra)->result.success);
  CHECK(!(*rb)->result.success);
  CHECK((*rb)->result.error == "operations[0]: Invalid or expired lease");
  CHECK(fx.cursor("q", "g1")->committed == offset{0});
  CHECK(fx.cursor("q", "g2")->committed == offset{0});
}

TEST_CASE("a transaction id is forgotten after its retention",
          "[sim][txn][retention]") {
  txn_fixture fx;
  fx.retention.keep = std::chrono::seconds{60};
  fx.start();
  core::txn_request old;
  old.id = "tx-old";
  old.ops.push_back(push_op("q", {{"first", ""}}));
  REQUIRE(fx.txn(old).result.success);
  fx.wall += 60'000'000; // exactly `keep` later: still answered from storage
  REQUIRE(fx.txn(old).result.success);
  CHECK(fx.stored("q").second == std::vector<std::string>{"first"});
  fx.wall += 1;
  // The next transaction's write deletes the expired id ...
  core::txn_request next;
  next.id = "tx-next";
  next.ops.push_back(push_op("q", {{"second", ""}}));
  REQUIRE(fx.txn(next).result.success);
  auto& batch = fx.gate_st->seen.back();
  REQUIRE(count_of<storage::mut::delete_txn>(batch) == 1);
  CHECK(std::get<storage::mut::delete_txn>(batch.mutations.back()).id
        == "tx-old");
  // ... and the old id runs again as a new transaction.
  REQUIRE(fx.txn(old).result.success);
  CHECK(fx.stored("q").second
        == std::vector<std::string>{"first", "second", "first"});
}

TEST_CASE("failed in a transaction charges the frame and ends the lease",
          "[sim][txn]") {
  txn_fixture fx;
  fx.push("q", "m0");
  fx.push("q", "m1");
  auto lease = fx.lease_of(fx.pop("q", "g", 2));
  // A later ack of the lease that `failed` ended makes it all roll back.
  core::txn_request both;
  both.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 0, ack_status::failed));
  both.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 1));
  auto refused = fx.txn(both);
  CHECK(!refused.result.success);
  CHECK(refused.result.error == "operations[1]: Invalid or expired lease");
  CHECK(fx.cursor("q", "g")->counters.front().failures == 0);
  both.ops.pop_back();
  auto r = fx.txn(both);
  REQUIRE(r.result.success);
  CHECK(r.result.results[0].lease_released);
  CHECK(!r.result.results[0].dead_lettered);
  auto c = fx.cursor("q", "g");
  CHECK(c->committed == offset{-1});
  CHECK(c->counters.front().failures == 1);
  CHECK(offsets(fx.pop("q", "g")) == std::vector<std::int64_t>{0, 1});
}

TEST_CASE("an ack of an unknown queue or partition rolls a transaction back",
          "[sim][txn]") {
  txn_fixture fx;
  fx.push("q", "m0");
  auto lease = fx.lease_of(fx.pop("q", "g", 1));
  core::txn_request req;
  req.ops.push_back(push_op("q", {{"x", ""}}));
  // A uuid carrying the id of no queue.
  req.ops.push_back(
      ack_op("00000000-ffff-4000-8000-000000000000", "g", lease, 0));
  auto r = fx.txn(req);
  CHECK(r.result.error == "operations[1]: Message not found");
  // One carrying q's id that is none of q's partitions.
  auto other = ack_op(fx.uuid("q").substr(0, 14) + "4000-8000-000000000000",
                      "g", lease, 0);
  req.ops[1] = other;
  r = fx.txn(req);
  CHECK(r.result.error == "operations[1]: Message not found");
  CHECK(fx.stored("q").second == std::vector<std::string>{"m0"});
}

TEST_CASE("a group deletion waits for the group's staged transaction",
          "[sim][txn][admin]") {
  txn_fixture fx;
  fx.push("q", "m0");
  fx.push("q", "m1");
  auto lease = fx.lease_of(fx.pop("q", "g", 2));
  fx.close_gate();
  core::txn_request req;
  req.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 0));
  auto tr = fx.txn_later(req);
  fx.run();
  REQUIRE(fx.gate_st->held.size() == 1);
  auto del = fx.request_later<actors::delete_group_reply>(
      fx.broker, actors::delete_atom::value,
      actors::delete_group_request{"g", std::nullopt, true});
  fx.run();
  CHECK(!*del);
  CHECK(fx.gate_st->held.size() == 1); // the deletion has not written yet
  fx.open_gate();
  REQUIRE(*tr);
  CHECK((*tr)->result.success);
  REQUIRE(*del);
  CHECK(!(*del)->failure);
  CHECK((*del)->deleted_partitions == 1);
  // The transaction's cursor record did not outlive the deletion.
  CHECK(!fx.cursor("q", "g"));
}

TEST_CASE("a transaction pushing to a full queue rolls back naming the push",
          "[sim][txn][maxsize]") {
  txn_fixture fx;
  fx.fill("q"); // holds "a" and is full
  fx.push("src", "s0");
  auto lease = fx.lease_of(fx.pop("src", "g", 1));
  core::txn_request req;
  req.ops.push_back(ack_op(fx.uuid("src"), "g", lease, 0));
  req.ops.push_back(push_op("q", {{"b", ""}}));
  auto r = fx.txn(req);
  CHECK(!r.failure);
  CHECK(!r.result.success);
  CHECK(r.result.error == "operations[1]: Queue q is full");
  // The ack was staged, never applied: the lease holds, nothing moved.
  CHECK(fx.cursor("src", "g")->committed == offset{-1});
  CHECK(fx.pop("src", "g").claimed.empty());
  CHECK(fx.stored("q").second == std::vector<std::string>{"a"});
}

TEST_CASE("a transaction refused by a full queue leaves no offset gap in "
          "the other queue it sealed",
          "[sim][txn][maxsize]") {
  txn_fixture fx;
  fx.fill("q"); // holds "a" and is full
  fx.push("other", "o0");
  core::txn_request req;
  req.ops.push_back(push_op("other", {{"x", ""}, {"y", ""}}));
  req.ops.push_back(push_op("q", {{"b", ""}}));
  auto r = fx.txn(req);
  CHECK(!r.result.success);
  CHECK(r.result.error == "operations[1]: Queue q is full");
  auto next = fx.push("other", "o1");
  REQUIRE(next.results.size() == 1);
  CHECK(next.results[0].result.off == offset{1});
  auto [p, payloads] = fx.stored("other");
  CHECK(p.next_offset == offset{2});
  CHECK(p.watermark == offset{0});
  CHECK(payloads == std::vector<std::string>{"o0", "o1"});
}

TEST_CASE("the release of an unwritten lease waits for the group's staged "
          "transaction",
          "[sim][txn]") {
  txn_fixture fx;
  fx.push("q", "m0");
  fx.push("q", "m1");
  auto lease = fx.lease_of(fx.pop("q", "g", 2));
  fx.close_gate();
  core::txn_request req;
  req.ops.push_back(ack_op(fx.uuid("q"), "g", lease, 0));
  auto tr = fx.txn_later(req);
  fx.run();
  auto released = fx.request_later<bool>(fx.broker, actors::release_atom::value,
                                         lease.id);
  fx.run();
  CHECK(!*released);
  fx.open_gate();
  REQUIRE(*tr);
  CHECK((*tr)->result.success);
  REQUIRE(*released);
  CHECK(**released);
  // The transaction's ack stands and the lease is gone for good: frame 1
  // is delivered again.
  CHECK(fx.cursor("q", "g")->committed == offset{0});
  CHECK(offsets(fx.pop("q", "g")) == std::vector<std::int64_t>{1});
}
