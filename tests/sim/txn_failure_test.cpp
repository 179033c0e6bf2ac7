// A transaction meeting a queue that dies (a bug) between its seal of the
// transaction's push and the commit (issue 35, docs/plans/issue-35.md
// §2.12-1): it committed the old seal behind the respawned queue's back,
// which then refused every push ("overlaps stored offsets") and hid the
// frame until the next restart. Now it fails, as a push spanning queues
// does, and nothing of it is stored.

#include "sim/broker_sim.hpp"

using namespace spool;
using namespace spool::test;

namespace {

/// The payloads of (q, p) a fresh group pops, in offset order.
std::vector<std::string> payloads(broker_sim& fx, const std::string& q,
                                  const std::string& p,
                                  const std::string& group) {
  auto req = fx.pop_request(group, p, 100);
  auto r = fx.request<actors::queue_pop_reply>(fx.broker,
                                               actors::pop_atom::value, q, req);
  REQUIRE(r);
  REQUIRE_FALSE(r->failure);
  std::vector<std::string> out;
  std::int64_t next = 0;
  for (auto& c : r->claimed)
    for (auto& m : c.reply.messages) {
      CHECK(m.frame.off.value == next++); // dense
      out.push_back(m.frame.data.payload);
    }
  return out;
}

} // namespace

TEST_CASE("a queue dying between its seal of a transaction's push and the "
          "commit fails the transaction and stores nothing",
          "[failure][txn][supervision]") {
  broker_sim fx;
  fx.push("a", "P", {"a0"});
  fx.push("b", "P", {"b0"});
  // b's part needs a new partition (a write), held at the gate: a seals at
  // once and waits for b.
  fx.gate_st->closed = true;
  core::txn_request req;
  req.id = "tx-dies";
  core::txn_push_op op;
  op.items.push_back({"a", "P", msg("a1")});
  op.items.push_back({"b", "Q", msg("b1")});
  req.ops.push_back(op);
  auto answered = fx.request_later<actors::txn_reply>(
      fx.broker, actors::txn_atom::value, req);
  fx.run();
  REQUIRE_FALSE(*answered);
  // Queue a dies meanwhile (a pop pokes it so it has a job to be killed in).
  auto poke = fx.pop_request("other", std::string{"P"});
  auto poked = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"a"}, poke);
  REQUIRE(fx.kill_next("spool.queue"));
  fx.run();
  fx.gate_st->closed = false;
  caf::anon_send(fx.gated, actors::flush_atom::value);
  fx.run();
  REQUIRE(*answered);
  bool stored = !(*answered)->failure && (*answered)->result.success;
  INFO("transaction: " << ((*answered)->failure ? (*answered)->failure->message
                                                : (*answered)->result.error));
  // Later pushes go on at the next offsets; what a fresh group reads is
  // dense and holds the transaction's frames exactly when it said stored.
  for (auto [q, m] : {std::pair{"a", "a2"}, std::pair{"b", "b2"}}) {
    std::vector<actors::broker_push_item> v{{q, {"P", msg(m)}}};
    auto r = fx.request<actors::queue_push_reply>(fx.broker,
                                                  actors::push_atom::value, v);
    REQUIRE(r);
    INFO(q << ": " << (r->failure ? r->failure->message : "ok"));
    CHECK_FALSE(r->failure);
  }
  auto a = payloads(fx, "a", "P", "g");
  if (stored)
    CHECK(a == std::vector<std::string>{"a0", "a1", "a2"});
  else
    CHECK(a == std::vector<std::string>{"a0", "a2"});
  CHECK(payloads(fx, "b", "P", "g") == std::vector<std::string>{"b0", "b2"});
  // The outcome: the transaction fails (unavailable), nothing is stored.
  CHECK_FALSE(stored);
  REQUIRE((*answered)->failure);
  CHECK((*answered)->failure->code == errc::unavailable);
  CHECK_THAT((*answered)->failure->message,
             Catch::Contains("restarted or was deleted during the "
                             "transaction"));
}
