// A node's replication assembled (server/replication.hpp) on three real
// stores in one process: real committer threads, the peer links on
// loopback, the host's ticks. A write on its slot's leader is answered
// durable once a majority has it, and every replica ends with the leader's
// rows; with both followers gone a write is answered "no quorum". Waits
// have deadlines.

#include "server/replication.hpp"
#include "unit/storage/fixture.hpp"
#include "unit/storage/replay.hpp"

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>

using namespace spool;
using namespace spool::storage;
using namespace spool::test;
namespace cl = spool::cluster;
using namespace std::chrono_literals;

namespace {

cl::node_id node(std::uint32_t i) {
  return cl::node_id{i};
}

/// Where node `i`'s clients would reach it (told in its hello).
core::client_addresses addresses_of(std::uint32_t i) {
  return {"127.0.0.1:" + std::to_string(6632 + 10 * i),
          "127.0.0.1:" + std::to_string(6690 + 10 * i)};
}

struct three_processes {
  std::vector<std::unique_ptr<store_fixture>> stores;
  std::vector<std::shared_ptr<actors::committer>> commits;
  std::vector<std::unique_ptr<server::replication>> nodes;
  /// Per node: the slots its `serving` hook says it serves now, and its
  /// durable marks.
  struct served_slots {
    std::mutex mtx;
    std::set<slot_t> now;
  };
  std::vector<std::shared_ptr<served_slots>> served;
  std::vector<std::shared_ptr<actors::durable_marks>> marks;

  three_processes() {
    for (std::uint32_t i = 0; i < 3; ++i) {
      stores.push_back(std::make_unique<store_fixture>());
      commits.push_back(actors::thread_committer(stores[i]->store->db()));
      server::replication_options o;
      o.self = node(i);
      for (std::uint32_t j = 0; j < 3; ++j)
        o.nodes[node(j)] = {"127.0.0.1", 0};
      o.replication_factor = 3;
      o.cluster_id = "t";
      o.secret = "s3cret";
      o.host.quorum_deadline = 2000;
      o.host.election_deadline = 1000;
      o.names = {"a", "b", "c"};
      served.push_back(std::make_shared<served_slots>());
      marks.push_back(std::make_shared<actors::durable_marks>(
          stores[i]->store->slot_count()));
      o.marks = marks[i];
      o.serving = [mine = served[i]](slot_t s, cluster::epoch_t e) {
        std::lock_guard lock{mine->mtx};
        if (e != 0)
          mine->now.insert(s);
        else
          mine->now.erase(s);
      };
      auto r = server::replication::start(stores[i]->store->db(),
                                          stores[i]->store->slot_count(),
                                          commits[i], o);
      REQUIRE(r);
      nodes.push_back(std::move(*r));
    }
    for (auto& n : nodes)
      for (std::uint32_t j = 0; j < 3; ++j)
        n->set_address(node(j), {"127.0.0.1", nodes[j]->peer_port()});
    for (std::uint32_t i = 0; i < 3; ++i)
      nodes[i]->connect(addresses_of(i));
  }
  ~three_processes() {
    for (auto& n : nodes)
      if (n)
        n->stop();
  }

  bool serves(std::uint32_t n, slot_t s) {
    std::lock_guard lock{served[n]->mtx};
    return served[n]->now.contains(s);
  }
  std::optional<core::slot_view> view(std::uint32_t n, slot_t s) {
    std::optional<core::slot_view> v;
    nodes[n]->with_host([&](core::replica_host& h) { v = h.view(s); });
    return v;
  }
  /// Waits up to 10 s for `ok`.
  template <class F>
  bool eventually(F ok) {
    for (auto until = std::chrono::steady_clock::now() + 10s;
         std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(10ms))
      if (ok())
        return true;
    return false;
  }
  /// Commits `b` on node `n` as its writer does, then waits for the
  /// durability policy's decision: the slots lost.
  std::vector<actors::lost_slot> write(std::uint32_t n,
                                       const write_batch& batch) {
    // Stamped with the epoch its slot is served in there, as the actors do.
    auto b = batch;
    if (!b.mutations.empty())
      nodes[n]->with_host([&](core::replica_host& h) {
        if (auto v = h.view(storage::slot_of(b.mutations.front())))
          b.term = v->epoch;
      });
    std::promise<actors::commit_report> committed;
    commits[n]->start({&b}, [&](actors::commit_report r) {
      committed.set_value(std::move(r));
    });
    auto report = committed.get_future().get();
    REQUIRE_FALSE(report.failures[0]);
    auto decided
        = std::make_shared<std::promise<std::vector<actors::lost_slot>>>();
    nodes[n]->durability()->committed(
        actors::marks_of(report),
        [decided](std::vector<actors::lost_slot> lost) {
          decided->set_value(std::move(lost));
        });
    auto f = decided->get_future();
    REQUIRE(f.wait_for(10s) == std::future_status::ready);
    return f.get();
  }
};

} // namespace

TEST_CASE("three nodes on loopback replicate a slot: a write is durable once "
          "a majority has it, every replica ends with the leader's rows, and "
          "without its followers a write is answered 'no quorum'",
          "[replica][replication]") {
  three_processes c;
  auto s = slot_of("orders", c.stores[0]->store->slot_count());
  auto l = static_cast<std::uint32_t>(s % 3);
  REQUIRE(c.eventually([&] {
    auto v = c.view(l, s);
    return v && v->serving;
  }));
  // The broker's side hears it, after the slot's durable mark reached its
  // commit point; the others name the leader.
  REQUIRE(c.eventually([&] { return c.serves(l, s); }));
  CHECK(c.marks[l]->covers(slot_seq{s, c.view(l, s)->commit}));
  CHECK_FALSE(c.nodes[l]->directory()->refusal(s));
  for (std::uint32_t f = 1; f < 3; ++f) {
    auto other = (l + f) % 3;
    CHECK_FALSE(c.serves(other, s));
    REQUIRE(c.eventually(
        [&] { return c.nodes[other]->directory()->get(s).leader == node(l); }));
    auto why = c.nodes[other]->directory()->refusal(s);
    REQUIRE(why);
    CHECK(why->message
          == "Not the leader of slot " + std::to_string(s) + "; leader is "
                 + std::string(1, static_cast<char>('a' + l)));
    // It names where the leader's clients reach it, as its hello said.
    REQUIRE(why->leader);
    CHECK(why->leader->slot == s);
    CHECK(why->leader->epoch == 1);
    CHECK(why->leader->node == std::string(1, static_cast<char>('a' + l)));
    CHECK(why->leader->http == addresses_of(l).http);
    CHECK(why->leader->msgpack == addresses_of(l).msgpack);
  }
  // A queue and its partition, with the leader's ids.
  auto& leader = *c.stores[l]->store;
  write_batch b;
  queue_record q;
  q.name = "orders";
  q.id = leader.next_queue_id(q.name);
  b.mutations.emplace_back(mut::create_queue{q});
  partition_record p;
  p.queue = q.id;
  p.id = leader.next_partition_id(q.id);
  p.name = "Default";
  p.uuid = leader.make_partition_uuid(q.id, p.id);
  b.mutations.emplace_back(mut::create_partition{p});
  CHECK(c.write(l, b).empty());
  partition_log log{p};
  for (int i = 0; i < 20; ++i)
    CHECK(c.write(l, c.stores[l]->seal_next(log, 5)).empty());
  for (std::uint32_t f = 0; f < 3; ++f) {
    INFO("node " << f);
    CHECK(c.eventually([&] {
      return rows_diff(slot_rows(*c.stores[f]->store, s), slot_rows(leader, s))
             == "";
    }));
  }
  // One follower gone: a majority is still there.
  auto f1 = (l + 1) % 3;
  auto f2 = (l + 2) % 3;
  c.nodes[f1]->stop();
  CHECK(c.write(l, c.stores[l]->seal_next(log, 1)).empty());
  // Both gone: no quorum within the deadline.
  c.nodes[f2]->stop();
  auto lost = c.write(l, c.stores[l]->seal_next(log, 1));
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].slot == s);
  CHECK_THAT(lost[0].why.message, Catch::Contains("has no quorum"));
}

TEST_CASE("a handoff whose writer thread is stuck gives up at its budget, "
          "hands off nothing and says why",
          "[replica][replication][handoff]") {
  three_processes c;
  auto s = slot_of("orders", c.stores[0]->store->slot_count());
  auto l = static_cast<std::uint32_t>(s % 3);
  REQUIRE(c.eventually([&] { return c.serves(l, s); }));
  // The committer runs one job at a time: this one holds it.
  std::promise<void> release;
  auto held = release.get_future().share();
  c.commits[l]->run([held] { held.wait(); });
  auto t0 = std::chrono::steady_clock::now();
  auto rep = c.nodes[l]->hand_off(500ms);
  auto took = std::chrono::steady_clock::now() - t0;
  release.set_value();
  CHECK(took < 2s);
  CHECK(rep.handed == 0);
  REQUIRE(rep.lines.size() == 1);
  CHECK(rep.lines[0]
        == "the writer thread did not answer within the budget: no slot "
           "was handed off");
  // The job it gave up on never runs: the slot is still led here.
  CHECK(c.view(l, s)->role == cluster::role::leader);
}

TEST_CASE("a wait on the writer thread that gave up at its deadline never "
          "runs its job afterwards",
          "[replica][replication]") {
  three_processes c;
  std::promise<void> release;
  auto held = release.get_future().share();
  c.commits[0]->run([held] { held.wait(); });
  auto ran = std::make_shared<std::atomic<bool>>(false);
  CHECK_FALSE(c.nodes[0]->with_host([ran](core::replica_host&) { *ran = true; },
                                    std::chrono::steady_clock::now() + 50ms));
  release.set_value();
  c.nodes[0]->with_host([](core::replica_host&) {}); // after it, in order
  CHECK_FALSE(*ran);
  CHECK(c.nodes[0]->with_host([ran](core::replica_host&) { *ran = true; },
                              std::chrono::steady_clock::now() + 10s));
  CHECK(*ran);
}
