// A transaction's commit (broker_txn.cpp has the flow): the pushes sealed
// by their queues (missing queues created first), then ONE batch with the
// seals, the staged cursor records, the stored answer and a few expired
// ids, carrying every part; answered once the writer settled them.

#include <algorithm>
#include <utility>

#include "actors/broker/broker_txn.hpp"
#include "actors/durable.hpp"
#include "core/broker/txn_answer.hpp"
#include "storage/tables.hpp"

namespace spool::actors::broker_detail {

namespace {

/// The queues a plan pushes to or acks on (repeats left in).
std::vector<std::string> queues_of(const core::txn_plan& plan) {
  std::vector<std::string> out;
  for (auto& p : plan.pushes)
    out.push_back(p.queue);
  for (auto& a : plan.acks)
    out.push_back(a.queue);
  return out;
}

/// The answer of a committed transaction, from the staged acks and the
/// sealed pushes.
core::txn_result result_of(txn_run& run) {
  return core::txn_answer(
      run.id, run.req, run.plan,
      [&](std::size_t k, std::size_t j) -> std::optional<core::txn_op_result> {
        auto& replies = run.staged[k].replies;
        if (j >= replies.size())
          return std::nullopt;
        return core::txn_op_result{
            {}, replies[j].lease_released, replies[j].dead_lettered};
      },
      [&](std::size_t k,
          std::size_t j) -> std::optional<core::txn_item_result> {
        auto& pushed = run.seals.results[k];
        if (j >= pushed.results.size())
          return std::nullopt;
        auto& to = pushed.target_of(j);
        auto& src = pushed.results[j].result;
        auto dup = src.status == storage::frame_result::duplicate;
        return core::txn_item_result{to.queue, to.partition, to.partition_uuid,
                                     dup ? core::txn_push_status::duplicate
                                         : core::txn_push_status::queued,
                                     src.off};
      });
}

void commit(run_ptr run) {
  auto self = run->self;
  auto& st = self->state;
  auto& node = st.cfg.node;
  submission sub;
  auto& batch = sub.batch;
  if (auto stale = take_seals(self, run->seals, sub, "transaction")) {
    run->failure = std::move(stale);
    return abort(run);
  }
  for (auto& s : run->staged)
    for (auto& m : s.batch.mutations)
      batch.mutations.push_back(std::move(m));
  auto result = result_of(*run);
  // The answer is kept by the home queue, which exists now: an ack needs
  // its queue, a push has created it. Deleted meanwhile: the transaction
  // fails rather than commit without its answer.
  auto home = run->home ? queue_id_of(self, *run->home) : std::nullopt;
  if (run->client_id && run->home && !home) {
    abort_parts(self, node.writer, std::move(sub.parts));
    run->failure
        = make_error(errc::not_found, "queue ", *run->home, " vanished");
    return abort(run);
  }
  if (run->client_id && home) {
    auto now = node.wall();
    batch.mutations.emplace_back(storage::mut::put_txn{
        *home, run->id, {now, core::encode_txn_result(result)}});
    // Retention: every transaction write forgets a few expired ids of its
    // home queue (only if still expired when the batch applies: an id may
    // run again).
    auto cutoff = st.cfg.txn_retention.cutoff(now);
    if (auto t = node.store.read()) {
      auto old = storage::tables::txns_before(*t, *home, cutoff,
                                              st.cfg.txn_retention.sweep);
      t->abort();
      if (old)
        for (auto& id : *old)
          if (id != run->id && !st.txn_in_flight.contains(flight_key(*run, id)))
            batch.mutations.emplace_back(
                storage::mut::delete_txn{*home, id, cutoff});
    }
  }
  if (batch.mutations.empty()) { // duplicates and idempotent acks only
    abort_parts(self, node.writer, std::move(sub.parts));
    settle_all(run);
    std::vector<storage::slot_t> slots;
    for (auto& q : queues_of(run->plan))
      slots.push_back(node.store.slot_of(q));
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    return after_durable(
        self, node, std::move(slots),
        [run, result](std::optional<api_error> failure) mutable {
          answer(run, failure ? txn_reply{{}, std::move(failure)}
                              : txn_reply{std::move(result), std::nullopt});
        });
  }
  // The stages' parts go with the batch too: the writer settles them before
  // it answers.
  for (auto& s : run->staged)
    for (auto& r : std::exchange(s.parts, {}))
      sub.parts.push_back(std::move(r));
  propose_then(self, node.writer, run->term, std::move(sub),
               [run, result](std::optional<api_error> failure) mutable {
                 if (failure) {
                   run->failure = std::move(failure);
                   return abort(run);
                 }
                 settle_all(run);
                 // Parked namespace pops are woken now: every queue applied its
                 // settle, which the writer sent before this answer.
                 wake(run->self, queues_of(run->plan));
                 answer(run, txn_reply{std::move(result), std::nullopt});
               });
}

/// Seals every queue's pushes, then commits, or aborts when one failed (a
/// full queue rolls back, naming its first push op).
void seal_all(run_ptr run) {
  for (auto& part : run->plan.pushes)
    run->seals.queues.push_back(part.queue);
  seal_queues(
      run->self, {run, &run->seals},
      [run](std::size_t k) {
        std::vector<push_item> items;
        auto& part = run->plan.pushes[k];
        items.reserve(part.from.size());
        for (auto [op, j] : part.from) {
          auto& item = std::get<core::txn_push_op>(run->req.ops[op]).items[j];
          items.push_back(push_item{item.partition, std::move(item.frame)});
        }
        return items;
      },
      [run] {
        auto& s = run->seals;
        if (s.full)
          run->rollback = core::txn_rollback(
              run->id, run->plan.pushes[s.full->first].from.front().first,
              s.full->second);
        else if (s.failure)
          run->failure = s.failure;
        if (run->failure || run->rollback)
          return abort(run);
        commit(run);
      });
}

} // namespace

void push_phase(run_ptr run) {
  if (run->plan.pushes.empty())
    return commit(run);
  std::vector<std::string> names;
  for (auto& part : run->plan.pushes)
    if (!find_queue(run->self, part.queue))
      names.push_back(part.queue);
  if (names.empty())
    return seal_all(run);
  ensure_queues(run->self, std::move(names),
                [run](std::optional<api_error> failure) {
                  if (failure) {
                    run->failure = std::move(failure);
                    return abort(run);
                  }
                  seal_all(run);
                });
}

} // namespace spool::actors::broker_detail
