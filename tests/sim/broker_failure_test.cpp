// The broker's own failure paths: a queue that dies between its deletion's
// write and its answer, a queue erased while a push's creation write is in
// flight, and a queue that answers fewer ack replies than it was asked.

#include "actors/broker/broker_state.hpp"
#include "sim/fault_sim.hpp"
#include "storage/tables.hpp"

using namespace spool;
using namespace spool::test;

namespace {

/// Rows stored under queue id `q` in every table.
std::size_t rows_of(broker_sim& fx, storage::queue_id q) {
  auto t = fx.store.store->db().read();
  REQUIRE(t);
  return rows_under(*t, q);
}

/// Pokes queue `q` through the broker, so that `kill_next` finds it
/// scheduled (the pop's answer is not looked at).
void poke(broker_sim& fx, const std::string& q) {
  actors::queue_pop_request pop;
  pop.group = "other";
  pop.lease_id = "poke";
  fx.request_later<actors::queue_pop_reply>(fx.broker, actors::pop_atom::value,
                                            q, pop);
}

/// Deletes queue `q` and kills it after its deletion's write is sent,
/// before the write's answer reaches it; the writes flow again after.
std::shared_ptr<std::optional<actors::delete_queue_reply>>
delete_and_kill(fault_fixture& fx, const std::string& q) {
  fx.gate_st->closed = true; // the deletion's write waits at the writer
  auto del = fx.request_later<actors::delete_queue_reply>(
      fx.broker, actors::delete_atom::value, q);
  fx.run();
  REQUIRE_FALSE(*del);
  REQUIRE(fx.gate_st->held.size() == 1);
  poke(fx, q);
  REQUIRE(fx.kill_next("spool.queue"));
  fx.run();
  return del;
}

void flush(fault_fixture& fx) {
  fx.gate_st->closed = false;
  caf::anon_send(fx.gated, actors::flush_atom::value);
  fx.run();
}

} // namespace

TEST_CASE("a queue dying between its deletion's write and its answer is not "
          "respawned, and its rows are removed as a deletion's are",
          "[failure][admin][supervision]") {
  fault_fixture fx;
  fx.push("doomed", "P", {"a", "b"});
  fx.push("other", "P", {"x"});
  auto q = fx.queue_id("doomed");
  REQUIRE(rows_of(fx, q) > 0);
  auto del = delete_and_kill(fx, "doomed");
  flush(fx); // the deletion is durable; the queue never answers it
  REQUIRE(*del);
  CHECK((*del)->failure); // unknown outcome: the queue died
  // The respawn finds the queue deleted: its rows go in bounded steps, as
  // after a deletion, not at the next start.
  CHECK(rows_of(fx, q) == 0);
  {
    auto t = fx.store.store->db().read();
    REQUIRE(t);
    CHECK(storage::tables::doomed_queues(*t)->empty());
  }
  auto list = fx.request<std::vector<std::string>>(fx.broker,
                                                   actors::list_atom::value);
  REQUIRE(list);
  CHECK(*list == std::vector<std::string>{"other"});
  CHECK(fx.popped("other", "P", "g") == std::vector<std::int64_t>{0});
}

TEST_CASE("a push spanning queues whose known queue is erased while the new "
          "one's creation is written fails, and the broker keeps serving",
          "[failure][push][supervision]") {
  fault_fixture fx;
  fx.push("a", "P", {"a0"});
  fx.push("other", "P", {"x"});
  fx.gate_st->closed = true;
  auto del = fx.request_later<actors::delete_queue_reply>(
      fx.broker, actors::delete_atom::value, std::string{"a"});
  fx.run();
  REQUIRE(fx.gate_st->held.size() == 1); // a's deletion
  // The push waits for the deletion (one at a time with creations); queue a
  // dies before it answers; the push then writes b's creation while a's
  // respawn finds it deleted.
  std::vector<actors::broker_push_item> v{{"a", {"P", msg("a1")}},
                                          {"b", {"P", msg("b0")}}};
  auto pushed = fx.request_later<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, v);
  fx.run();
  poke(fx, "a");
  REQUIRE(fx.kill_next("spool.queue"));
  fx.run();
  // Held: a's deletion, the barrier of a's respawn and b's creation; the
  // creation goes last, so the respawn erases a before the push seals.
  auto& held = fx.gate_st->held;
  REQUIRE(held.size() == 3);
  std::stable_partition(held.begin(), held.end(), [](auto& w) {
    return count_of<storage::mut::create_queue>(w.sub.batch) == 0;
  });
  REQUIRE(count_of<storage::mut::delete_queue>(held[0].sub.batch) == 1);
  REQUIRE(held[1].sub.batch.mutations.empty());
  flush(fx);
  REQUIRE(*del);
  REQUIRE(*pushed); // answered: the broker did not die
  REQUIRE((*pushed)->failure);
  CHECK((*pushed)->failure->code == errc::not_found);
  CHECK((*pushed)->failure->message == "queue a vanished");
  CHECK(fx.popped("b", "P", "g").empty()); // nothing of it stored
  CHECK(fx.popped("other", "P", "g") == std::vector<std::int64_t>{0});
}

TEST_CASE("a queue answering fewer replies than acks gives the missing ones "
          "an error naming the queue and the counts",
          "[failure][ack]") {
  fault_fixture fx;
  auto pushed = fx.push("a", "P", {"a0", "a1"});
  auto uuid = pushed.targets.at(0).partition_uuid;
  // Queue a's handle is replaced by one answering no reply at all. (One
  // argument: CAF 0.17 spawns a function without any through a null
  // pointer to its empty argument tuple, which UBSan reports.)
  auto fake = fx.sys.spawn(
      [](caf::event_based_actor*, int) -> caf::behavior {
        return {[](actors::ack_atom, const std::vector<actors::located_ack>&) {
          return std::vector<actors::located_ack_reply>{};
        }};
      },
      0);
  auto* b
      = dynamic_cast<caf::stateful_actor<actors::broker_detail::broker_state,
                                         actors::broker_actor::base>*>(
          caf::actor_cast<caf::abstract_actor*>(fx.broker));
  REQUIRE(b != nullptr);
  auto real = b->state.queues.at("a");
  b->state.queues["a"] = caf::actor_cast<actors::queue_actor>(fake);
  std::vector<actors::located_ack> acks;
  for (std::int64_t off : {0, 1}) {
    actors::located_ack a;
    a.partition_uuid = uuid;
    a.group = "g";
    a.ack.lease_id = "L";
    a.ack.off = storage::offset{off};
    acks.push_back(a);
  }
  auto r = fx.request<std::vector<actors::located_ack_reply>>(
      fx.broker, actors::ack_atom::value, acks);
  b->state.queues["a"] = real;
  caf::anon_send_exit(fake, caf::exit_reason::user_shutdown);
  REQUIRE(r);
  REQUIRE(r->size() == 2);
  for (auto& x : *r) {
    REQUIRE(x.reply.failure);
    CHECK(x.reply.failure->message == "queue a answered 0 replies for 2 acks");
  }
}
