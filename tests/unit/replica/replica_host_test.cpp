// The replica host (core/replica/replica_host.hpp) on three real LMDB
// stores, its messages carried by the test (cuts per direction, a clock by
// hand): a fresh cluster elects each slot's first replica; the writer's
// hook admits a slot's writes only on its serving leader and stamps their
// epoch; a write is durable only once a majority synced it; without a
// quorum it is answered "no quorum", a deposed leader's waiting writes are
// lost, and its divergent tail is undone; followers end byte for byte
// equal to the leader.

#include "core/replica/replica_host.hpp"
#include "unit/storage/fixture.hpp"
#include "unit/storage/replay.hpp"

#include <deque>
#include <map>
#include <set>

using namespace spool;
using namespace spool::storage;
using namespace spool::test;
namespace cl = spool::cluster;

namespace {

cl::node_id node(std::uint32_t i) {
  return cl::node_id{i};
}

/// What a write's durability wait said (none: still waiting).
struct outcome {
  bool done = false;
  std::vector<actors::lost_slot> lost;
};

struct three_nodes {
  std::vector<std::unique_ptr<store_fixture>> stores;
  std::vector<std::shared_ptr<core::replica_host>> hosts;
  std::deque<core::slot_message> wire;
  /// (from, to) links that drop what they carry.
  std::set<std::pair<std::uint32_t, std::uint32_t>> cut;
  /// Drops what it says (none: nothing).
  std::function<bool(const core::slot_message&)> drop;
  /// Fences sent, by sender.
  std::map<std::uint32_t, int> fences;
  cl::millis now = 1000;
  std::vector<std::pair<slot_t, cl::notice_kind>> notices;

  three_nodes() {
    for (std::uint32_t i = 0; i < 3; ++i)
      stores.push_back(std::make_unique<store_fixture>());
    for (std::uint32_t i = 0; i < 3; ++i) {
      core::host_config cfg;
      cfg.self = node(i);
      cfg.nodes = {node(0), node(1), node(2)};
      cfg.slots = stores[i]->store->slot_count();
      cfg.core.heartbeat = 100;
      cfg.core.retry = 500;
      cfg.election_deadline = 3000;
      cfg.quorum_deadline = 5000;
      core::host_events ev;
      ev.notice = [this](slot_t s, const cl::notice& n) {
        notices.emplace_back(s, n.kind);
      };
      auto h = core::replica_host::make(
          stores[i]->store->db(), cfg,
          [this](core::slot_message m) { wire.push_back(std::move(m)); },
          [this] { return now; }, ev);
      REQUIRE(h);
      hosts.push_back(*h);
    }
  }

  void start() {
    for (auto& h : hosts)
      h->start();
    pump();
  }
  /// Delivers everything in flight, and what that sends, until quiet.
  void pump() {
    for (int i = 0; i < 1'000'000 && !wire.empty(); ++i) {
      auto m = std::move(wire.front());
      wire.pop_front();
      auto from = cl::index_of(m.env.from);
      auto to = cl::index_of(m.env.to);
      if (std::holds_alternative<cl::fence_req>(m.env.msg))
        ++fences[from];
      if (cut.count({from, to}) != 0 || (drop && drop(m)))
        continue;
      hosts[to]->on_message(std::move(m));
    }
    REQUIRE(wire.empty());
  }
  /// Time passes in steps of 50 ms: every host ticks.
  void advance(cl::millis ms) {
    for (cl::millis t = 0; t < ms; t += 50) {
      now += 50;
      for (auto& h : hosts)
        h->tick();
      pump();
    }
  }
  void isolate(std::uint32_t n) {
    for (std::uint32_t o = 0; o < 3; ++o)
      if (o != n) {
        cut.insert({n, o});
        cut.insert({o, n});
      }
  }
  void heal() {
    cut.clear();
  }

  /// `b` as node `n`'s actors send it: stamped with the epoch its slot is
  /// served in there (a test of the fence sets `term` itself).
  write_batch stamped(std::uint32_t n, write_batch b) {
    if (b.term == 0 && !b.mutations.empty())
      if (auto v = hosts[n]->view(storage::slot_of(b.mutations.front())))
        b.term = v->epoch;
    return b;
  }
  /// Commits `b` on node `n` through its hook, as the writer does, and
  /// waits for its durability.
  std::shared_ptr<outcome> write(std::uint32_t n, const write_batch& batch,
                                 actors::commit_report* report = nullptr) {
    auto b = stamped(n, batch);
    auto r = actors::commit_now(stores[n]->store->db(), {&b}, hosts[n].get());
    auto out = std::make_shared<outcome>();
    if (report != nullptr)
      *report = r;
    if (r.failures[0])
      return nullptr;
    hosts[n]->await(actors::marks_of(r),
                    [out](std::vector<actors::lost_slot> lost) {
                      out->done = true;
                      out->lost = std::move(lost);
                    });
    pump();
    return out;
  }
  slot_rows_t rows(std::uint32_t n, slot_t s) {
    return slot_rows(*stores[n]->store, s);
  }
};

/// A queue and its partition, made with `leader`'s store's ids.
struct made_queue {
  write_batch batch;
  partition_record p;
  slot_t slot = 0;
};

made_queue make_queue(store& leader, const std::string& name) {
  made_queue m;
  queue_record q;
  q.name = name;
  q.id = leader.next_queue_id(q.name);
  q.created_at = 1'000'000;
  m.batch.mutations.emplace_back(mut::create_queue{q});
  m.p.queue = q.id;
  m.p.id = leader.next_partition_id(q.id);
  m.p.name = "Default";
  m.p.uuid = leader.make_partition_uuid(q.id, m.p.id);
  m.p.created_at = 1'000'000;
  m.batch.mutations.emplace_back(mut::create_partition{m.p});
  m.slot = slot_of_id(q.id.value);
  return m;
}

/// The slot of queue `name` and its first leader's index.
std::pair<slot_t, std::uint32_t> slot_and_leader(store& s,
                                                 const std::string& name) {
  auto slot = slot_of(name, s.slot_count());
  return {slot, static_cast<std::uint32_t>(slot % 3)};
}

} // namespace

TEST_CASE("a fresh cluster of three makes each slot's first replica its "
          "leader in epoch 1, and the others follow it",
          "[replica][host]") {
  three_nodes c;
  c.start();
  for (slot_t s : {slot_t{0}, slot_t{1}, slot_t{2}, slot_t{77}, slot_t{255}}) {
    INFO("slot " << s);
    auto first = core::replicas_of(s, {node(0), node(1), node(2)}, 3).front();
    for (std::uint32_t n = 0; n < 3; ++n) {
      auto v = c.hosts[n]->view(s);
      REQUIRE(v);
      CHECK(v->epoch == 1);
      REQUIRE(v->leader);
      CHECK(*v->leader == first);
      CHECK(v->serving == (node(n) == first));
    }
  }
}

TEST_CASE("a write is durable only once a majority synced it, and the "
          "followers end with the leader's rows byte for byte",
          "[replica][host]") {
  three_nodes c;
  c.start();
  auto [s, l] = slot_and_leader(*c.stores[0]->store, "orders");
  auto q = make_queue(*c.stores[l]->store, "orders");
  REQUIRE(q.slot == s);
  auto f1 = (l + 1) % 3;
  auto f2 = (l + 2) % 3;
  // Both followers cut off: stored on the leader, not durable.
  c.isolate(l);
  actors::commit_report report;
  auto w = c.write(l, q.batch, &report);
  REQUIRE(w);
  REQUIRE(report.epochs == std::vector<std::uint64_t>{1});
  c.advance(1000);
  CHECK_FALSE(w->done);
  CHECK(c.rows(f1, s).empty());
  // One follower back: a majority of two.
  c.cut.erase({l, f1});
  c.cut.erase({f1, l});
  c.advance(1000);
  REQUIRE(w->done);
  CHECK(w->lost.empty());
  CHECK(rows_diff(c.rows(f1, s), c.rows(l, s)) == "");
  CHECK_FALSE(c.rows(l, s).empty());
  // The other catches up once healed.
  c.heal();
  c.advance(1000);
  CHECK(rows_diff(c.rows(f2, s), c.rows(l, s)) == "");
  // Messages, through the same path.
  partition_log log{q.p};
  auto push = c.stores[l]->seal_next(log, 3);
  auto w2 = c.write(l, push);
  REQUIRE(w2);
  CHECK(w2->done);
  CHECK(w2->lost.empty());
  for (auto f : {f1, f2})
    CHECK(rows_diff(c.rows(f, s), c.rows(l, s)) == "");
}

TEST_CASE("the writer's hook refuses a write on a follower with not_leader "
          "naming the leader, and a batch over two slots with cross_slot: "
          "nothing of either is stored",
          "[replica][host]") {
  three_nodes c;
  c.start();
  auto [s, l] = slot_and_leader(*c.stores[0]->store, "orders");
  auto f = (l + 1) % 3;
  auto q = make_queue(*c.stores[f]->store, "orders");
  actors::commit_report r;
  CHECK_FALSE(c.write(f, q.batch, &r));
  REQUIRE(r.failures[0]);
  CHECK(r.failures[0]->code == errc::not_leader);
  CHECK(r.failures[0]->message
        == "Not the leader of slot " + std::to_string(s) + "; leader is n"
               + std::to_string(l + 1));
  CHECK(c.rows(f, s).empty());

  // Two queues of different slots in one batch, on the first's leader.
  std::string other = "payments";
  for (int i = 0; slot_of(other, c.stores[0]->store->slot_count()) == s; ++i)
    other = "payments" + std::to_string(i);
  auto a = make_queue(*c.stores[l]->store, "orders");
  auto b = make_queue(*c.stores[l]->store, other);
  write_batch both = a.batch;
  both.mutations.insert(both.mutations.end(), b.batch.mutations.begin(),
                        b.batch.mutations.end());
  CHECK_FALSE(c.write(l, both, &r));
  REQUIRE(r.failures[0]);
  CHECK(r.failures[0]->code == errc::cross_slot);
  CHECK(c.rows(l, s).empty());
}

TEST_CASE("a write without a quorum within its deadline is answered 'no "
          "quorum', its outcome unknown",
          "[replica][host]") {
  three_nodes c;
  c.start();
  auto [s, l] = slot_and_leader(*c.stores[0]->store, "orders");
  auto q = make_queue(*c.stores[l]->store, "orders");
  c.isolate(l);
  auto w = c.write(l, q.batch);
  REQUIRE(w);
  c.advance(4900);
  CHECK_FALSE(w->done);
  c.advance(200);
  REQUIRE(w->done);
  REQUIRE(w->lost.size() == 1);
  CHECK(w->lost[0].slot == s);
  CHECK(w->lost[0].why.code == errc::unavailable);
  CHECK_THAT(w->lost[0].why.message,
             Catch::Contains("slot " + std::to_string(s) + " has no quorum"));
}

TEST_CASE("a leader deposed while a write waits loses it, undoes its "
          "divergent tail, and follows the new leader byte for byte",
          "[replica][host]") {
  three_nodes c;
  c.start();
  auto [s, l] = slot_and_leader(*c.stores[0]->store, "orders");
  auto q = make_queue(*c.stores[l]->store, "orders");
  auto first = c.write(l, q.batch);
  REQUIRE(first);
  REQUIRE(first->done);
  auto f1 = (l + 1) % 3;
  // The leader, cut off, stores a push nobody else has.
  c.isolate(l);
  partition_log log{q.p};
  auto push = c.stores[l]->seal_next(log, 2);
  auto w = c.write(l, push);
  REQUIRE(w);
  CHECK_FALSE(w->done);
  // The operator promotes a follower: the other two elect it in epoch 2.
  REQUIRE(c.hosts[f1]->promote(s, node(f1)));
  c.advance(200);
  auto v = c.hosts[f1]->view(s);
  REQUIRE(v);
  CHECK(v->serving);
  CHECK(v->epoch == 2);
  // It takes a write of its own in epoch 2.
  partition_log log2{q.p};
  auto push2 = c.stores[f1]->seal_next(log2, 1);
  actors::commit_report r;
  auto w2 = c.write(f1, push2, &r);
  REQUIRE(w2);
  CHECK(r.epochs == std::vector<std::uint64_t>{2});
  CHECK(w2->done);
  CHECK(w2->lost.empty());
  CHECK_FALSE(w->done);
  // Healed, the old leader hears epoch 2: deposed, its write lost, its tail
  // undone, then the new leader's entries.
  c.heal();
  c.advance(1000);
  REQUIRE(w->done);
  REQUIRE(w->lost.size() == 1);
  CHECK_THAT(w->lost[0].why.message, Catch::Contains("changed leader"));
  auto old = c.hosts[l]->view(s);
  REQUIRE(old);
  CHECK_FALSE(old->serving);
  REQUIRE(old->leader);
  CHECK(*old->leader == node(f1));
  for (std::uint32_t n = 0; n < 3; ++n)
    CHECK(rows_diff(c.rows(n, s), c.rows(f1, s)) == "");
  // Its hook now refuses the slot's writes, naming the new leader.
  auto again = c.stores[l]->seal_next(log, 1);
  actors::commit_report refused;
  CHECK_FALSE(c.write(l, again, &refused));
  REQUIRE(refused.failures[0]);
  CHECK(refused.failures[0]->code == errc::not_leader);
}

TEST_CASE("a slot's first replica that granted another node's election "
          "waits for its leader and runs no first election of its own",
          "[replica][host]") {
  three_nodes c;
  c.start();
  auto [s, l] = slot_and_leader(*c.stores[0]->store, "orders");
  auto f1 = (l + 1) % 3;
  // The new leader's appends to the old one are lost for a while: it has
  // promised epoch 2 and knows no leader of it.
  c.drop = [&, s = s, l = l](const core::slot_message& m) {
    return m.slot == s && cl::index_of(m.env.from) == f1
           && cl::index_of(m.env.to) == l
           && std::holds_alternative<cl::append_req>(m.env.msg);
  };
  REQUIRE(c.hosts[f1]->promote(s, node(f1)));
  c.pump();
  auto before = c.fences[l];
  c.advance(5000);
  CHECK(c.fences[l] == before);
  auto v = c.hosts[f1]->view(s);
  REQUIRE(v);
  CHECK(v->serving);
  CHECK(v->epoch == 2);
  auto old = c.hosts[l]->view(s);
  REQUIRE(old);
  CHECK(old->epoch == 2);
  CHECK_FALSE(old->leader);
  c.drop = nullptr;
  c.advance(1000);
  old = c.hosts[l]->view(s);
  REQUIRE(old->leader);
  CHECK(*old->leader == node(f1));
}

TEST_CASE("a stopped host admits no write and loses what waits",
          "[replica][host]") {
  three_nodes c;
  c.start();
  auto [s, l] = slot_and_leader(*c.stores[0]->store, "orders");
  auto q = make_queue(*c.stores[l]->store, "orders");
  c.isolate(l);
  auto w = c.write(l, q.batch);
  REQUIRE(w);
  CHECK_FALSE(w->done);
  c.hosts[l]->stop();
  REQUIRE(w->done);
  REQUIRE(w->lost.size() == 1);
  CHECK_THAT(w->lost[0].why.message, Catch::Contains("node stopped"));
  auto again = make_queue(*c.stores[l]->store, "orders");
  actors::commit_report r;
  CHECK_FALSE(c.write(l, again.batch, &r));
  REQUIRE(r.failures[0]);
  CHECK(r.failures[0]->code == errc::unavailable);
}

TEST_CASE("a leader promoted again admits a write only in the epoch it was "
          "made in",
          "[replica][host][fence]") {
  three_nodes c;
  c.start();
  auto [s, leader] = slot_and_leader(*c.stores[0]->store, "orders");
  auto l = leader;
  auto first = c.hosts[l]->view(s)->epoch;
  // The operator elects it again: a new epoch, the same leader. A second
  // promote while that election runs is refused at once.
  std::optional<core::promote_outcome> got, again;
  REQUIRE(c.hosts[l]->promote(
      s, node(l), [&](const core::promote_outcome& o) { got = o; }));
  CHECK_FALSE(c.hosts[l]->promote(
      s, {}, [&](const core::promote_outcome& o) { again = o; }));
  REQUIRE(again);
  REQUIRE(again->failure);
  CHECK_THAT(again->failure->message, Catch::Contains("runs already"));
  c.pump();
  REQUIRE(got);
  REQUIRE_FALSE(got->failure);
  CHECK(got->leader == node(l));
  CHECK(got->epoch > first);
  REQUIRE(c.hosts[l]->view(s)->serving);
  auto now = c.hosts[l]->view(s)->epoch;
  CHECK(now == got->epoch);
  auto refused = [&c, l](std::uint64_t term) {
    auto q = make_queue(*c.stores[l]->store, "orders");
    q.batch.term = term;
    return c.hosts[l]->admit(q.batch);
  };
  // Made while it led in the first epoch: never committed in this one.
  auto old = refused(first);
  REQUIRE(old);
  CHECK(old->code == errc::unavailable);
  CHECK_THAT(old->message, Catch::Contains("changed leader"));
  auto none = refused(0);
  REQUIRE(none);
  CHECK(none->code == errc::internal);
  CHECK_FALSE(refused(now));
}

TEST_CASE("the report gives each slot's role and epoch, and on its leader "
          "each follower's lag in entries and payload bytes, estimated past "
          "its read budget",
          "[replica][host]") {
  three_nodes c;
  c.start();
  auto [s, l] = slot_and_leader(*c.stores[0]->store, "orders");
  auto q = make_queue(*c.stores[l]->store, "orders");
  REQUIRE(c.write(l, q.batch)->done);
  auto f1 = (l + 1) % 3;
  auto f2 = (l + 2) % 3;
  // f2 cut off: three pushes it lacks, durable on the leader and f1.
  c.cut.insert({l, f2});
  c.cut.insert({f2, l});
  partition_log log{q.p};
  std::uint64_t lacked = 0;
  for (int i = 0; i < 3; ++i) {
    auto push = c.stores[l]->seal_next(log, 2);
    auto before = c.hosts[l]->view(s)->last.seq;
    REQUIRE(c.write(l, push)->done);
    lacked += c.hosts[l]->view(s)->last.seq - before;
  }
  auto find = [&](const std::vector<core::slot_report>& rs)
      -> const core::slot_report* {
    for (auto& r : rs)
      if (r.slot == s)
        return &r;
    return nullptr;
  };
  auto lag_of = [&](const core::slot_report& r, std::uint32_t n) {
    for (auto& f : r.followers)
      if (f.node == node(n))
        return f;
    FAIL("no lag for n" << n + 1);
    return core::follower_lag{};
  };
  auto all = c.hosts[l]->report();
  auto* r = find(all);
  REQUIRE(r);
  CHECK(r->view.role == cl::role::leader);
  CHECK(r->view.serving);
  CHECK(r->view.epoch == 1);
  REQUIRE(r->followers.size() == 2);
  CHECK(lag_of(*r, f1).entries == 0);
  CHECK(lag_of(*r, f1).bytes == 0);
  auto full = lag_of(*r, f2);
  CHECK(full.entries == lacked);
  CHECK(full.bytes > 0);
  // A budget of one byte reads one entry, and estimates the rest from it.
  auto small = lag_of(*find(c.hosts[l]->report(1)), f2);
  CHECK(small.entries == lacked);
  CHECK(small.bytes > 0);
  CHECK(small.bytes >= full.bytes / lacked);
  // A follower reports no lags; it follows in the same epoch.
  auto follower_reports = c.hosts[f1]->report();
  auto* fr = find(follower_reports);
  REQUIRE(fr);
  CHECK(fr->view.role == cl::role::follower);
  CHECK(fr->followers.empty());
  // Healed, f2 catches up: no lag left.
  c.heal();
  c.advance(1000);
  auto healed = lag_of(*find(c.hosts[l]->report()), f2);
  CHECK(healed.entries == 0);
  CHECK(healed.bytes == 0);
}

TEST_CASE("a handoff's election makes the preferred follower lead when it "
          "holds the longest log, and one that holds it when the preferred "
          "one lacks the log's end",
          "[replica][host][handoff]") {
  three_nodes c;
  c.start();
  auto [s, l] = slot_and_leader(*c.stores[0]->store, "orders");
  auto q = make_queue(*c.stores[l]->store, "orders");
  REQUIRE(c.write(l, q.batch)->done);
  auto f1 = (l + 1) % 3;
  auto f2 = (l + 2) % 3;
  // f2 misses a push (durable on the leader and f1): preferring it elects
  // a replica with the longest log instead.
  c.cut.insert({l, f2});
  c.cut.insert({f2, l});
  partition_log log{q.p};
  REQUIRE(c.write(l, c.stores[l]->seal_next(log, 2))->done);
  c.cut.clear(); // no tick before the election: it has not caught up
  std::optional<core::promote_outcome> got;
  REQUIRE(c.hosts[l]->promote(
      s, std::nullopt, [&](const core::promote_outcome& o) { got = o; },
      node(f2)));
  c.pump();
  REQUIRE(got);
  REQUIRE_FALSE(got->failure);
  REQUIRE(got->leader);
  CHECK(*got->leader != node(f2));
  auto cur = cl::index_of(*got->leader);
  c.advance(3500); // caught up; the election's `lead` stops at its deadline
  REQUIRE(c.hosts[cur]->view(s)->serving);
  // Now f2 holds the whole log: preferred, it leads, the old leader
  // follows it.
  got.reset();
  REQUIRE(c.hosts[cur]->promote(
      s, std::nullopt, [&](const core::promote_outcome& o) { got = o; },
      node(f2)));
  c.pump();
  REQUIRE(got);
  REQUIRE_FALSE(got->failure);
  CHECK(got->leader == node(f2));
  c.advance(500);
  auto v = c.hosts[f2]->view(s);
  REQUIRE(v);
  CHECK(v->serving);
  CHECK(v->epoch == got->epoch);
  auto old = c.hosts[cur]->view(s);
  CHECK_FALSE(old->serving);
  CHECK(old->leader == node(f2));
  CHECK(rows_diff(c.rows(f2, s), c.rows(cur, s)) == "");
  (void)f1;
}
