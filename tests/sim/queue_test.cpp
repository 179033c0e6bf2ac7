// The queue coordinator: pushes across partitions, wildcard rotation, the
// global batch cap, long poll.

#include "sim/sim_fixture.hpp"

#include <set>

#include "actors/queue/queue_actor.hpp"
#include "actors/writer/writer_actor.hpp"
#include "sim/held_policy.hpp"
#include "unit/storage/fixture.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct queue_fixture : sim_fixture {
  ~queue_fixture() {
    drain(); // before `store` is destroyed
  }

  store_fixture store;
  actors::writer_actor writer;
  actors::queue_actor queue;
  storage::queue_record rec;
  int pops = 0;

  explicit queue_fixture(std::shared_ptr<actors::durability_policy> policy
                         = nullptr) {
    rec.name = "orders";
    rec.id = store.store->next_queue_id(rec.name);
    rec.options.lease_time_s = 30;
    REQUIRE(
        store.commit(storage::write_batch{{storage::mut::create_queue{rec}}}));
    // After the direct commit: the writer's durable marks start there.
    actors::writer_config wc{.env = &store.store->db()};
    wc.durability = std::move(policy);
    auto w = actors::spawn_writer(sys, wc, false);
    REQUIRE(w);
    writer = *w;
    actors::queue_config cfg;
    cfg.node.store = store.store.get();
    cfg.node.writer = writer;
    cfg.record = rec;
    cfg.node.wall = [this] {
      return storage::micros{1'785'000'000'000'000}
             + std::chrono::duration_cast<std::chrono::microseconds>(
                   now().time_since_epoch())
                   .count();
    };
    auto q = actors::spawn_queue(sys, cfg);
    REQUIRE(q);
    queue = *q;
  }

  actors::queue_push_reply
  push(std::vector<std::pair<std::string, std::string>> items) {
    std::vector<actors::push_item> v;
    for (auto& [part, payload] : items)
      v.push_back({part, msg(payload)});
    auto r
        = request<actors::queue_push_reply>(queue, actors::push_atom::value, v);
    REQUIRE(r);
    return *r;
  }

  actors::queue_pop_request req(std::size_t batch = 1,
                                std::size_t partitions = 1) {
    actors::queue_pop_request r;
    r.group = "g";
    r.batch = batch;
    r.partitions = partitions;
    r.lease_id = "L" + std::to_string(++pops);
    return r;
  }

  actors::queue_pop_reply pop(actors::queue_pop_request r) {
    auto reply
        = request<actors::queue_pop_reply>(queue, actors::pop_atom::value, r);
    REQUIRE(reply);
    REQUIRE(!reply->failure);
    return *reply;
  }

  void ack_all(const actors::queue_pop_reply& r) {
    for (auto& c : r.claimed) {
      // As the broker routes them: located by the partition's uuid.
      std::vector<actors::located_ack> acks;
      for (auto& m : c.reply.messages) {
        ack_request a;
        a.lease_id = c.reply.lease->id;
        a.off = m.frame.off;
        acks.push_back({c.partition_uuid, "g", a});
      }
      auto res = request<std::vector<actors::located_ack_reply>>(
          queue, actors::ack_atom::value, acks);
      REQUIRE(res);
      for (auto& x : *res)
        REQUIRE(x.reply.error == ack_error::none);
    }
  }
};

} // namespace

TEST_CASE("a push creates partitions on first use and answers in input order",
          "[sim][queue][push]") {
  queue_fixture fx;
  auto r = fx.push({{"a", "1"}, {"b", "2"}, {"a", "3"}});
  REQUIRE(!r.failure);
  REQUIRE(r.results.size() == 3);
  CHECK(r.target_of(0).partition == "a");
  CHECK(r.results[0].result.off == offset{0});
  CHECK(r.target_of(1).partition == "b");
  CHECK(r.results[1].result.off == offset{0});
  CHECK(r.results[2].result.off == offset{1});
  CHECK(r.target_of(0).partition_uuid == r.target_of(2).partition_uuid);
  CHECK(r.target_of(0).partition_uuid != r.target_of(1).partition_uuid);
  CHECK(r.targets.size() == 2); // items of one partition share its target
  auto t = fx.store.store->db().read();
  auto parts = storage::tables::partitions_of(*t, fx.rec.id);
  REQUIRE(parts);
  CHECK(parts->size() == 2);
}

TEST_CASE("wildcard pops rotate so every partition is served within "
          "ceil(P / partitions) pops",
          "[sim][queue][pop][fairness]") {
  queue_fixture fx;
  fx.push({{"a", "a0"},
           {"b", "b0"},
           {"c", "c0"},
           {"a", "a1"},
           {"b", "b1"},
           {"c", "c1"}});
  std::vector<std::string> served;
  for (int i = 0; i < 6; ++i) {
    auto r = fx.pop(fx.req(1, 1));
    REQUIRE(r.claimed.size() == 1);
    served.push_back(r.claimed[0].partition);
    fx.ack_all(r);
  }
  CHECK(served == std::vector<std::string>{"a", "b", "c", "a", "b", "c"});
}

TEST_CASE("batch is a global cap across the partitions a wildcard pop claims, "
          "under one lease id",
          "[sim][queue][pop]") {
  queue_fixture fx;
  fx.push({{"a", "a0"}, {"a", "a1"}, {"b", "b0"}, {"b", "b1"}, {"c", "c0"}});
  auto r = fx.pop(fx.req(3, 3));
  std::size_t total = 0;
  std::set<std::string> ids;
  for (auto& c : r.claimed) {
    total += c.reply.messages.size();
    ids.insert(c.reply.lease->id);
  }
  CHECK(total == 3);
  CHECK(r.claimed.size() == 2);
  CHECK(ids.size() == 1);
}

TEST_CASE("a pop on a partition that does not exist answers no_partition",
          "[sim][queue][pop]") {
  queue_fixture fx;
  auto r = fx.req();
  r.partition = "nope";
  CHECK(fx.pop(r).reason == empty_reason::no_partition);
  CHECK(fx.pop(fx.req()).reason == empty_reason::no_partition);
}

TEST_CASE("a parked pop is answered as soon as a push lands",
          "[sim][queue][long-poll]") {
  queue_fixture fx;
  auto r = fx.req();
  r.wait = true;
  r.timeout = 10s;
  auto parked = fx.request_later<actors::queue_pop_reply>(
      fx.queue, actors::pop_atom::value, r);
  fx.run();
  CHECK(!*parked); // still waiting, no time passed
  fx.push({{"a", "hello"}});
  REQUIRE(*parked);
  REQUIRE((*parked)->claimed.size() == 1);
  CHECK((*parked)->claimed[0].reply.messages[0].frame.data.payload == "hello");
}

TEST_CASE("a parked pop times out empty at its timeout",
          "[sim][queue][long-poll]") {
  queue_fixture fx;
  auto r = fx.req();
  r.wait = true;
  r.timeout = 5s;
  auto parked = fx.request_later<actors::queue_pop_reply>(
      fx.queue, actors::pop_atom::value, r);
  fx.run();
  fx.advance(5s - 1ms);
  CHECK(!*parked);
  fx.advance(1ms);
  REQUIRE(*parked);
  CHECK((*parked)->claimed.empty());
}

TEST_CASE("parked pops of a group are served in arrival order",
          "[sim][queue][long-poll]") {
  queue_fixture fx;
  auto r1 = fx.req();
  r1.wait = true;
  r1.timeout = 10s;
  auto r2 = fx.req();
  r2.wait = true;
  r2.timeout = 10s;
  auto first = fx.request_later<actors::queue_pop_reply>(
      fx.queue, actors::pop_atom::value, r1);
  fx.run();
  auto second = fx.request_later<actors::queue_pop_reply>(
      fx.queue, actors::pop_atom::value, r2);
  fx.run();
  fx.push({{"a", "one"}});
  REQUIRE(*first);
  CHECK((*first)->claimed.size() == 1);
  CHECK(!*second);     // the lease on "a" holds it back
  fx.ack_all(**first); // releasing the lease wakes it; nothing left
  CHECK(!*second);
  fx.push({{"a", "two"}});
  REQUIRE(*second);
  CHECK((*second)->claimed[0].reply.messages[0].frame.data.payload == "two");
}

TEST_CASE("a pop reaching a deleted queue's coordinator is answered at once, "
          "empty, and registers nothing",
          "[sim][queue][long-poll][admin]") {
  queue_fixture fx;
  fx.push({{"p", "a"}});
  fx.ack_all(fx.pop(fx.req())); // g is registered
  auto del = fx.request<actors::delete_queue_reply>(fx.queue,
                                                    actors::delete_atom::value);
  REQUIRE(del);
  REQUIRE_FALSE(del->failure);
  // A pop already on its way (the broker routed it before the deletion).
  auto r = fx.req();
  r.group = "late";
  r.wait = true;
  r.timeout = 20s;
  auto late = fx.request_later<actors::queue_pop_reply>(
      fx.queue, actors::pop_atom::value, r);
  r.group = "g";
  r.lease_id = "L-g";
  auto known = fx.request_later<actors::queue_pop_reply>(
      fx.queue, actors::pop_atom::value, r);
  fx.run();
  for (auto* p : {&late, &known}) {
    REQUIRE(**p); // not parked for the grace period
    CHECK_FALSE((**p)->failure);
    CHECK((**p)->claimed.empty());
    CHECK((**p)->reason == empty_reason::no_partition);
  }
  auto t = fx.store.store->db().read();
  REQUIRE(t);
  auto sub = storage::tables::get_subscription(*t, fx.rec.id, "late");
  REQUIRE(sub);
  CHECK_FALSE(sub->has_value());
}

TEST_CASE("a requeue reaching a deleted queue's coordinator is answered at "
          "once with nothing requeued, as a DLQ delete is",
          "[sim][queue][dlq][admin]") {
  queue_fixture fx;
  fx.push({{"p", "a"}});
  auto r = fx.pop(fx.req());
  REQUIRE(r.claimed.size() == 1);
  ack_request a;
  a.lease_id = r.claimed[0].reply.lease->id;
  a.off = offset{0};
  a.status = ack_status::dlq;
  a.error = "bad";
  auto acked = fx.request<std::vector<actors::located_ack_reply>>(
      fx.queue, actors::ack_atom::value,
      std::vector<actors::located_ack>{{r.claimed[0].partition_uuid, "g", a}});
  REQUIRE(acked);
  REQUIRE(acked->at(0).reply.error == ack_error::none);
  std::vector<storage::dlq_entry> entries;
  {
    auto t = fx.store.store->db().read();
    REQUIRE(t);
    REQUIRE(storage::tables::scan_queue_dlq(
        *t, fx.rec.id, [&](std::string_view, const storage::dlq_entry& e) {
          entries.push_back(e);
          return true;
        }));
  }
  REQUIRE(entries.size() == 1);
  auto del = fx.request<actors::delete_queue_reply>(fx.queue,
                                                    actors::delete_atom::value);
  REQUIRE(del);
  REQUIRE_FALSE(del->failure);
  // A requeue already on its way (the broker selected it before the
  // deletion).
  auto late = fx.request<actors::dlq_count_reply>(
      fx.queue, actors::requeue_atom::value, std::string{"g"}, entries);
  REQUIRE(late);
  CHECK_FALSE(late->failure);
  CHECK(late->count == 0);
}

TEST_CASE("a push of only duplicates of an id in flight does not disturb the "
          "next push to the partition",
          "[sim][queue][push][dedup]") {
  // The writer commits each push and holds its answer (a durability
  // policy released by hand), so the first push's id stays in flight.
  auto policy = std::make_shared<held_policy>();
  queue_fixture fx{policy};
  // Whatever fails, the held answers go before the actors stop.
  // (Draining fires the lease timer, whose write is held too.)
  struct release_at_end {
    std::shared_ptr<held_policy> p;
    queue_fixture& fx;
    ~release_at_end() {
      do {
        p->release_all();
        fx.drain();
      } while (p->pending());
    }
  } guard{policy, fx};
  auto push = [&](std::string payload, std::string txid) {
    std::vector<actors::push_item> v{{"P", msg(std::move(payload), txid)}};
    return fx.request_later<actors::queue_push_reply>(
        fx.queue, actors::push_atom::value, v);
  };
  auto settle = [&] {
    while (policy->pending()) {
      policy->release_all();
      fx.run();
    }
  };
  auto warm = push("w", "w"); // creates the partition
  fx.run();
  settle();
  REQUIRE(*warm);
  auto first = push("a", "x");
  fx.run();
  // Only a duplicate of "x", still in flight: no offset taken, a guard
  // that "x" be stored rides in its batch.
  auto dup = push("a again", "x");
  fx.run();
  // A new id takes the next offset, the one the duplicate did not take.
  auto next = push("b", "y");
  fx.run();
  settle();
  REQUIRE(*first);
  REQUIRE(*dup);
  REQUIRE(*next);
  for (auto* r : {&first, &dup, &next})
    REQUIRE_FALSE((**r)->failure);
  CHECK((*first)->results[0].result.off.value == 1);
  CHECK((*dup)->results[0].result.status == storage::frame_result::duplicate);
  CHECK((*next)->results[0].result.off.value == 2);
  auto popped = fx.request_later<actors::queue_pop_reply>(
      fx.queue, actors::pop_atom::value, fx.req(10));
  fx.run();
  settle();
  REQUIRE(*popped);
  REQUIRE((*popped)->claimed.size() == 1);
  CHECK((*popped)->claimed[0].reply.messages.size() == 3);
}
