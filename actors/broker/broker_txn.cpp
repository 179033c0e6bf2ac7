// Message flow of one transaction (validate-then-commit).
//
// 0. check: `core::check_txn` (ids, push items, `retry`, the lease named,
//    push.maxItems and push.maxBytes);
//    a client id already answered (and not expired) returns the stored
//    answer; one in flight makes the repeat wait for its answer.
// 1. stage: the acks, grouped by cursor, are staged one cursor after the
//    other in (queue, partition uuid, group) order: broker -> queue ->
//    partition -> cursor (`stage_atom`). A cursor validates on a copy of its
//    core and then defers everything else until settled; the stage is a
//    part held by the cursor, its partition and its queue (each tells the
//    writer). A refusal aborts: every part is given up (settled failed) and
//    nothing was sealed, written or created.
// 2. seal: only now are missing queues created and the pushes sealed
//    (queue `seal_atom`: partitions created, offsets assigned), so an
//    invalid ack never consumes an offset. Sealing in the partitions'
//    serialized path keeps concurrent plain pushes in order.
// 3. write: ONE batch with the sealed segments, the staged cursor records
//    and DLQ entries, the stored answer (client id) and the deletion of a
//    few expired ids, carrying every part; the writer settles each part
//    (cursors, partitions, queues) with the outcome before it answers, and
//    the answer goes out.

#include <algorithm>
#include <utility>

#include "actors/broker/broker_txn.hpp"
#include "actors/durable.hpp"
#include "storage/tables.hpp"

namespace spool::actors::broker_detail {

/// Answers the transaction and every repeat that waited for it.
void answer(run_ptr run, txn_reply reply) {
  auto& in_flight = run->self->state.txn_in_flight;
  if (run->client_id) {
    auto it = in_flight.find(flight_key(*run, run->id));
    if (it != in_flight.end()) {
      for (auto& waiter : it->second)
        waiter.deliver(reply);
      in_flight.erase(it);
    }
  }
  run->rp.deliver(std::move(reply));
}

/// Ends the run's stages: gives up the staged acks and sealed pushes not
/// submitted (a submitted part is the writer's to settle, and was settled
/// before its answer), and closes the stages this broker counted.
void settle_all(run_ptr run) {
  auto self = run->self;
  auto& writer = self->state.cfg.node.writer;
  std::vector<std::string> closed;
  for (std::size_t k = 0; k < run->staged.size(); ++k) {
    if (!run->opened[k])
      continue;
    abort_parts(self, writer, std::exchange(run->staged[k].parts, {}));
    run->opened[k] = false; // closed once
    closed.push_back(run->plan.acks[k].queue);
  }
  drop_seals(self, run->seals);
  // Closing a stage may respawn a dead queue: only now, so every settle
  // above went to the handles that staged and sealed.
  for (auto& q : closed)
    stage_closed(self, q);
}

/// Ends a transaction that did not commit: no trace is left.
void abort(run_ptr run) {
  settle_all(run);
  if (run->rollback)
    return answer(run, txn_reply{std::move(*run->rollback), std::nullopt});
  core::txn_result r;
  r.transaction_id = run->id;
  r.error = run->failure ? run->failure->message : "transaction failed";
  answer(run, txn_reply{std::move(r), run->failure});
}

namespace {

/// Phase 1: stages the next cursor's acks (one at a time, in plan order).
void stage_next(run_ptr run) {
  auto k = run->staged.size();
  if (k == run->plan.acks.size())
    return push_phase(run);
  auto& g = run->plan.acks[k];
  auto q = find_queue(run->self, g.queue);
  if (!q) {
    run->rollback = core::txn_rollback(run->id, g.ops.front(),
                                       to_string(ack_error::not_found));
    return abort(run);
  }
  run->self
      ->request(*q, caf::infinite, stage_atom::value,
                partition_ref{{}, g.partition_uuid}, g.group, g.reqs)
      .then(
          [run, k](stage_reply& r) {
            auto& g = run->plan.acks[k];
            if (r.failure) {
              run->failure = std::move(r.failure);
              return abort(run);
            }
            if (r.refused) {
              auto j = std::min(r.refused->index, g.ops.size() - 1);
              run->rollback
                  = core::txn_rollback(run->id, g.ops[j], r.refused->reason);
              return abort(run);
            }
            run->opened.push_back(!r.parts.empty());
            if (!r.parts.empty())
              run->self->state.stages.opened(g.queue);
            run->staged.push_back(std::move(r));
            stage_next(run);
          },
          [run](caf::error& err) {
            run->failure = unreachable(err);
            abort(run);
          });
}

/// The answer queue `home` keeps for transaction `id`, if any. No live
/// home queue: no answer can be stored (one kept by a deleted queue went
/// with it).
storage::expected<std::optional<storage::txn_record>>
stored_answer(broker_ptr self, std::optional<storage::queue_id> home,
              const std::string& id) {
  if (!home)
    return std::optional<storage::txn_record>{};
  auto t = self->state.cfg.node.store.read();
  if (!t)
    return std::move(t).err();
  auto stored = storage::tables::get_txn(*t, *home, id);
  t->abort();
  return stored;
}

} // namespace

caf::result<txn_reply> run_transaction(broker_ptr self, core::txn_request req) {
  auto& st = self->state;
  auto& node = st.cfg.node;
  // Without a client id the answer's id is generated, refusals included
  // (Queen answers a UUID either way).
  auto id = req.id ? *req.id : node.store.make_uuid();
  if (auto refused = core::check_txn(req, node.frames, st.cfg.push)) {
    refused->transaction_id = id;
    return txn_reply{std::move(*refused), std::nullopt};
  }
  auto run = std::make_shared<txn_run>();
  run->self = self;
  run->client_id = req.id.has_value();
  run->id = std::move(id);
  run->home = core::txn_home_queue(req);
  run->term = txn_term(self, req);
  if (run->client_id) {
    if (auto it = st.txn_in_flight.find(flight_key(*run, run->id));
        it != st.txn_in_flight.end()) {
      auto rp = promise_for<txn_reply>(self);
      it->second.push_back(rp); // answered with the first one's answer
      return rp.later();
    }
    auto home = run->home ? queue_id_of(self, *run->home) : std::nullopt;
    auto stored = stored_answer(self, home, run->id);
    if (!stored)
      return txn_reply{{}, stored.err()};
    if (*stored
        && !st.cfg.txn_retention.expired((*stored)->created_at, node.wall())) {
      auto r = core::decode_txn_result((*stored)->result);
      if (!r)
        return txn_reply{{},
                         make_error(errc::internal, "transaction ", run->id,
                                    ": stored answer does not decode")};
      // Released once the batch that stored it is durable.
      auto rp = promise_for<txn_reply>(self);
      after_durable(
          self, node, slot_of_id(home->value),
          [rp, r = std::move(*r)](std::optional<api_error> failure) mutable {
            rp.deliver(failure ? txn_reply{{}, std::move(failure)}
                               : txn_reply{std::move(r), std::nullopt});
          });
      return rp.later();
    }
    st.txn_in_flight.emplace(flight_key(*run, run->id),
                             std::vector<promise<txn_reply>>{});
  }
  run->rp = promise_for<txn_reply>(self);
  run->req = std::move(req);
  run->plan = core::plan_txn(run->req);
  stage_next(run);
  return run->rp.later();
}

} // namespace spool::actors::broker_detail
