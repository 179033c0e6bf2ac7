// Claim in the append (docs/operations.md, "Long poll"): a push serves
// the pops parked for it in its own commit. The pop's lease and delivery
// count are written in the push's batch, so the woken pop is answered when
// the push is durable, not one commit later; a failed write leaves the pop
// parked and nothing of either stored.

#include "sim/fault_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct claim_fixture : fault_fixture {
  claim_fixture() {
    configure("q", {});
  }

  /// q/p holds one frame ("old", offset 0) that `groups` completed.
  void caught_up(std::initializer_list<const char*> groups) {
    push("q", "p", {"old"});
    for (auto* g : groups)
      consume("q", "p", g);
  }

  /// Sends a push of `payloads` to `queue`/p; its answer arrives later.
  std::shared_ptr<std::optional<actors::queue_push_reply>>
  push_later(const std::string& p, std::vector<std::string> payloads,
             const std::string& queue = "q") {
    std::vector<actors::broker_push_item> v;
    for (auto& s : payloads)
      v.push_back({queue, {p, msg(s)}});
    return request_later<actors::queue_push_reply>(broker,
                                                   actors::push_atom::value, v);
  }

  /// Pushes `payloads` to `queue`/`p` (must succeed) and returns the actor
  /// of partition `p`: the one partition the push's seal reaches.
  caf::actor push_seen(const std::string& p, std::vector<std::string> payloads,
                       const std::string& queue = "q") {
    auto pushed = push_later(p, std::move(payloads), queue);
    caf::actor seen;
    while (!seen) {
      for (auto* job : sched.jobs)
        if (auto* a = dynamic_cast<caf::scheduled_actor*>(job);
            a && std::strcmp(a->name(), "spool.partition") == 0)
          seen = caf::actor_cast<caf::actor>(a);
      if (!seen && !sched.try_run_once())
        break;
    }
    run();
    REQUIRE(*pushed);
    REQUIRE_FALSE((*pushed)->failure);
    REQUIRE(seen);
    return seen;
  }

  /// Runs one message at a time until only `held` has messages waiting;
  /// `held` itself handles its next `pass` messages, then waits.
  void run_holding(const caf::actor& held, int pass = 0) {
    for (;;) {
      auto& jobs = sched.jobs;
      auto it = std::find_if(jobs.begin(), jobs.end(), [&](auto* job) {
        auto* a = dynamic_cast<caf::abstract_actor*>(job);
        return !a || a->address() != held.address() || pass > 0;
      });
      if (it == jobs.end())
        return;
      if (auto* a = dynamic_cast<caf::abstract_actor*>(*it);
          a && a->address() == held.address())
        --pass;
      auto* job = *it;
      jobs.erase(it);
      jobs.push_front(job);
      sched.run_once();
    }
  }

  /// Sends one push of `a` to q/P1 and `b` to q/P2; its answer arrives
  /// later.
  std::shared_ptr<std::optional<actors::queue_push_reply>>
  push_both(const std::string& a, const std::string& b) {
    std::vector<actors::broker_push_item> v{{"q", {"P1", msg(a)}},
                                            {"q", {"P2", msg(b)}}};
    return request_later<actors::queue_push_reply>(broker,
                                                   actors::push_atom::value, v);
  }

  /// Parks a long-poll pop of q (partition `p`, none: any) by `group`.
  std::shared_ptr<std::optional<actors::queue_pop_reply>>
  park(const std::string& group, std::optional<std::string> p = {},
       bool auto_ack = false) {
    auto r = pop_request(group, std::move(p));
    r.wait = true;
    r.timeout = 60s;
    r.auto_ack = auto_ack;
    auto out = request_later<actors::queue_pop_reply>(
        broker, actors::pop_atom::value, std::string{"q"}, r);
    run();
    REQUIRE_FALSE(*out);
    return out;
  }

  static std::vector<std::string>
  payloads(const std::optional<actors::queue_pop_reply>& r) {
    std::vector<std::string> out;
    for (auto& c : r->claimed)
      for (auto& m : c.reply.messages)
        out.push_back(m.frame.data.payload);
    return out;
  }

  /// The stored delivery count of `off` for `group` on q/p (0: none).
  std::uint32_t stored_deliveries(const std::string& p,
                                  const std::string& group, std::int64_t off) {
    auto rec = cursor("q", p, group);
    if (!rec)
      return 0;
    for (auto& c : rec->counters)
      if (c.off.value == off)
        return c.deliveries;
    return 0;
  }
};

} // namespace

TEST_CASE("a push serves a parked pop in its own commit: frames, lease and "
          "delivery count in one write",
          "[sim][long-poll][claim]") {
  claim_fixture fx;
  fx.caught_up({"g"});
  auto parked = fx.park("g");
  auto before = fx.gate_st->batches;
  fx.push("q", "p", {"a", "b"});
  REQUIRE(*parked);
  CHECK(fx.gate_st->batches == before + 1);
  CHECK(claim_fixture::payloads(*parked) == std::vector<std::string>{"a", "b"});
  auto& reply = (*parked)->claimed.at(0).reply;
  REQUIRE(reply.lease);
  CHECK(reply.messages.at(0).delivery_count == 1);
  // Memory equals disk: the delivery counts are stored, the lease is live.
  CHECK(fx.stored_deliveries("p", "g", 1) == 1);
  CHECK(fx.stored_deliveries("p", "g", 2) == 1);
  // The frames are the stored ones, to the byte (a generated
  // transactionId included): a group reading them from the store agrees.
  auto stored = fx.pop("q", fx.pop_request("h", "p"));
  REQUIRE(stored.claimed.size() == 1);
  auto& read = stored.claimed[0].reply.messages;
  REQUIRE(read.size() == 3);
  CHECK(read[1].frame == reply.messages.at(0).frame);
  CHECK(read[2].frame == reply.messages.at(1).frame);
  CHECK_FALSE(reply.messages.at(0).frame.data.transaction_id.empty());
  CHECK(fx.ack("q", "p", "g", reply.lease->id, 1) == ack_error::none);
  CHECK(fx.ack("q", "p", "g", reply.lease->id, 2) == ack_error::none);
  CHECK(fx.popped("q", "p", "g").empty());
}

TEST_CASE("a push serves the first parked pop of every group in its one "
          "commit",
          "[sim][long-poll][claim]") {
  claim_fixture fx;
  fx.caught_up({"g", "h"});
  auto g = fx.park("g");
  auto h = fx.park("h", "p");
  auto before = fx.gate_st->batches;
  fx.push("q", "p", {"a"});
  REQUIRE(*g);
  REQUIRE(*h);
  CHECK(fx.gate_st->batches == before + 1);
  CHECK(claim_fixture::payloads(*g) == std::vector<std::string>{"a"});
  CHECK(claim_fixture::payloads(*h) == std::vector<std::string>{"a"});
  // Once g completes it, a second parked pop of g is served by the next
  // push.
  auto& lease = (*g)->claimed.at(0).reply.lease;
  REQUIRE(lease);
  REQUIRE(fx.ack("q", "p", "g", lease->id, 1) == ack_error::none);
  auto g2 = fx.park("g");
  fx.push("q", "p", {"b"});
  REQUIRE(*g2);
  CHECK(claim_fixture::payloads(*g2) == std::vector<std::string>{"b"});
}

TEST_CASE("an autoAck parked pop served by a push commits in the push's "
          "write",
          "[sim][long-poll][claim]") {
  claim_fixture fx;
  fx.caught_up({"g"});
  auto parked = fx.park("g", "p", true);
  auto before = fx.gate_st->batches;
  fx.push("q", "p", {"a"});
  REQUIRE(*parked);
  CHECK(fx.gate_st->batches == before + 1);
  CHECK(claim_fixture::payloads(*parked) == std::vector<std::string>{"a"});
  CHECK_FALSE((*parked)->claimed.at(0).reply.lease);
  auto rec = fx.cursor("q", "p", "g");
  REQUIRE(rec);
  CHECK(rec->committed == offset{1});
  CHECK(fx.popped("q", "p", "g").empty());
}

TEST_CASE("a push whose write fails leaves the parked pop parked and stores "
          "neither the frames nor the pop's delivery count",
          "[sim][long-poll][claim][failure]") {
  claim_fixture fx;
  fx.caught_up({"g"});
  auto parked = fx.park("g");
  fault_plan f;
  f.nth = 1;
  f.times = 1;
  fx.gate_st->inject(std::move(f));
  auto failed = fx.push_later("p", {"lost"});
  fx.run();
  REQUIRE(*failed);
  CHECK((*failed)->failure);
  CHECK_FALSE(*parked); // parked again, as it was
  CHECK(fx.partition("q", "p").next_offset == offset{1});
  auto rec = fx.cursor("q", "p", "g");
  REQUIRE(rec);
  CHECK(rec->counters.empty());
  CHECK_FALSE(rec->leased);
  // The next push serves it, with a first delivery.
  fx.push("q", "p", {"b"});
  REQUIRE(*parked);
  CHECK(claim_fixture::payloads(*parked) == std::vector<std::string>{"b"});
  CHECK((*parked)->claimed.at(0).reply.messages.at(0).delivery_count == 1);
}

TEST_CASE("a push behind an earlier push still in flight does not claim: "
          "the parked pop gets the frames in offset order after both",
          "[sim][long-poll][claim]") {
  claim_fixture fx;
  fx.caught_up({"g"});
  // The first push is held by the writer before any pop is parked.
  fx.gate_st->closed = true;
  auto first = fx.push_later("p", {"a"});
  fx.run();
  auto parked = fx.park("g");
  // The second push would be served first were it claimed on.
  auto second = fx.push_later("p", {"b"});
  fx.run();
  CHECK_FALSE(*parked);
  fx.gate_st->closed = false;
  caf::anon_send(fx.gated, actors::flush_atom::value);
  fx.run();
  REQUIRE(*first);
  REQUIRE(*second);
  REQUIRE(*parked);
  auto got = claim_fixture::payloads(*parked);
  REQUIRE_FALSE(got.empty());
  CHECK(got.front() == "a");
}

TEST_CASE("a parked pop whose cursor is busy is not claimed: the push's "
          "wake serves it after its own write",
          "[sim][long-poll][claim]") {
  claim_fixture fx;
  fx.push("q", "p", {"held"});
  auto first = fx.pop("q", fx.pop_request("g", "p"));
  REQUIRE(first.claimed.size() == 1);
  auto lease = first.claimed[0].reply.lease->id;
  auto parked = fx.park("g", "p"); // the lease holds the partition
  // The ack's write is held: g's cursor on p is busy while the push seals.
  auto before = fx.gate_st->batches;
  fx.gate_st->closed = true;
  ack_request a;
  a.lease_id = lease;
  a.off = offset{0};
  auto acked = fx.ack_located_later(first.claimed[0].partition_uuid, "g",
                                    std::vector{a});
  auto pushed = fx.push_later("p", {"a"});
  fx.run();
  CHECK_FALSE(*parked);
  fx.gate_st->closed = false;
  caf::anon_send(fx.gated, actors::flush_atom::value);
  fx.run();
  REQUIRE(*acked);
  REQUIRE(*pushed);
  REQUIRE(*parked);
  CHECK(claim_fixture::payloads(*parked) == std::vector<std::string>{"a"});
  // The ack, the push, then the pop's own lease: three writes, not two.
  CHECK(fx.gate_st->batches == before + 3);
}

TEST_CASE("a push to another partition does not claim a pop parked on one "
          "partition",
          "[sim][long-poll][claim]") {
  claim_fixture fx;
  fx.caught_up({"g"});
  auto parked = fx.park("g", "p");
  fx.push("q", "other", {"x"});
  CHECK_FALSE(*parked);
  fx.push("q", "p", {"a"});
  REQUIRE(*parked);
  CHECK(claim_fixture::payloads(*parked) == std::vector<std::string>{"a"});
}

// A partition that dies (a bug) is respawned from its stored record after
// a write barrier. A push's batch is written only once every partition of
// the push sealed (and its claims are staged): a partition that sealed and
// died meanwhile must not be respawned before that batch, or it would
// read a record without the frames the batch then stores, and every push
// to it after would collide with them.

TEST_CASE("a partition that dies between its seal and its push's write is "
          "respawned from the record the push wrote",
          "[sim][failure][supervision][push]") {
  claim_fixture fx;
  auto p1 = fx.push_seen("P1", {"x"});
  auto p2 = fx.push_seen("P2", {"y"});
  auto pushed = fx.push_both("a", "b");
  fx.run_holding(p2); // P1 seals; P2's seal waits
  caf::anon_send_exit(p1, caf::exit_reason::unhandled_exception);
  fx.run_holding(p2); // P1 dies; the queue's restart barrier passes
  fx.run();           // P2 seals, the push is written
  REQUIRE(*pushed);
  REQUIRE_FALSE((*pushed)->failure);
  CHECK(fx.partition("q", "P1").next_offset == offset{2});
  // The respawned P1 continues after the push: a next push is stored, and
  // a group reads all three.
  fx.push("q", "P1", {"c"});
  CHECK(fx.popped("q", "P1", "g") == std::vector<std::int64_t>{0, 1, 2});
}

TEST_CASE("a partition that dies with a claim staged is respawned from the "
          "rows the push wrote, the claim's delivery count included",
          "[sim][failure][supervision][long-poll][claim]") {
  claim_fixture fx;
  auto p1 = fx.push_seen("P1", {"old"});
  auto p2 = fx.push_seen("P2", {"old"});
  fx.consume("q", "P1", "g");
  fx.consume("q", "P2", "h");
  auto g = fx.park("g", "P1");
  auto h = fx.park("h", "P2");
  auto pushed = fx.push_both("a", "b");
  // Both seal; g's claim on P1 is staged; h's claim waits at P2, so the
  // push's batch is not written yet.
  fx.run_holding(p2, 1);
  REQUIRE_FALSE(*pushed);
  caf::anon_send_exit(p1, caf::exit_reason::unhandled_exception);
  fx.run_holding(p2); // P1 dies; the queue's restart barrier passes
  fx.run();           // h's claim is staged, the push is written
  REQUIRE(*pushed);
  REQUIRE_FALSE((*pushed)->failure);
  REQUIRE(*g);
  REQUIRE(*h);
  CHECK(claim_fixture::payloads(*g) == std::vector<std::string>{"a"});
  CHECK(claim_fixture::payloads(*h) == std::vector<std::string>{"b"});
  auto& reply = (*g)->claimed.at(0).reply;
  REQUIRE(reply.lease);
  CHECK(fx.stored_deliveries("P1", "g", 1) == 1);
  // The respawned P1 holds what the store holds: leases live in memory and
  // end with it, the claim's delivery count stays, and a next push
  // continues the offsets.
  fx.push("q", "P1", {"c"});
  auto again = fx.pop("q", fx.pop_request("g", "P1"));
  REQUIRE(again.claimed.size() == 1);
  auto& got = again.claimed[0].reply.messages;
  REQUIRE(got.size() == 2);
  CHECK(got[0].frame.off == offset{1});
  CHECK(got[0].delivery_count == 2);
  CHECK(got[1].frame.off == offset{2});
  CHECK(got[1].delivery_count == 1);
}

TEST_CASE("a partition that dies between its seal and the write of a push "
          "spanning queues is respawned from the record that write stored",
          "[sim][failure][supervision][push]") {
  claim_fixture fx;
  auto qp = fx.push_seen("P", {"x"}, "q");
  auto rp = fx.push_seen("P", {"y"}, "r");
  std::vector<actors::broker_push_item> both{{"q", {"P", msg("a")}},
                                             {"r", {"P", msg("b")}}};
  auto pushed = fx.request_later<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, both);
  fx.run_holding(rp); // q's part seals; r's seal waits, so no write yet
  REQUIRE_FALSE(*pushed);
  caf::anon_send_exit(qp, caf::exit_reason::unhandled_exception);
  fx.run_holding(rp); // q/P dies; q's restart barrier passes
  fx.run();           // r seals, the broker writes both parts
  REQUIRE(*pushed);
  REQUIRE_FALSE((*pushed)->failure);
  CHECK(fx.partition("q", "P").next_offset == offset{2});
  fx.push("q", "P", {"c"});
  CHECK(fx.popped("q", "P", "g") == std::vector<std::int64_t>{0, 1, 2});
}
