// Message flow of one transaction (validate-then-commit).
//
// 0. check: `core::check_txn` (ids, push items, `retry`, the lease named);
//    a client id already answered (and not expired) returns the stored
//    answer; one in flight makes the repeat wait for its answer.
// 1. stage: the acks, grouped by cursor, are staged one cursor after the
//    other in (queue, partition, group) order: broker -> queue -> partition
//    -> cursor (`stage_atom`). A cursor validates on a copy of its core and
//    then defers everything else until settled; the stage is a part held by
//    the cursor, its partition and its queue (each tells the writer). A
//    refusal aborts: every part is given up (settled failed) and nothing was
//    sealed, written or created.
// 2. seal: only now are missing queues created and the pushes sealed
//    (queue `seal_atom`: partitions created, offsets assigned), so an
//    invalid ack never consumes an offset. Sealing in the partitions'
//    serialized path keeps concurrent plain pushes in order.
// 3. write: ONE batch with the sealed segments, the staged cursor records
//    and DLQ entries, the stored answer (client id) and the deletion of a
//    few expired ids, carrying every part; the writer settles each part
//    (cursors, partitions, queues) with the outcome before it answers, and
//    the answer goes out.

#include "actors/broker/broker_txn.hpp"
#include "actors/promise.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <utility>

#include "actors/durable.hpp"
#include "actors/fan_out.hpp"
#include "actors/queue/queue_actor.hpp"
#include "actors/write.hpp"
#include "core/limits/names.hpp"
#include "storage/tables.hpp"

namespace spool::actors {

namespace {

struct txn_run {
  std::shared_ptr<txn_host> host;
  core::txn_request req;
  std::string id;
  bool client_id = false;
  /// The queue that keeps the stored answer (`core::txn_home_queue`).
  std::optional<std::string> home;
  core::txn_plan plan;
  promise<txn_reply> rp;
  // -- stage --
  std::vector<stage_reply> staged; ///< per plan.acks, as far as staged
  /// Per staged ack group: its stage is open here (`stage_opened`).
  std::vector<bool> opened;
  // -- seal --
  /// Per plan.pushes: who sealed it, and its batch and parts (moved into
  /// the submission: the writer settles them from then on).
  std::vector<queue_actor> sealed_by;
  std::vector<submission> prepared;
  /// Per sealed push: its items' results and their targets.
  std::vector<queue_push_reply> push_results;
  std::optional<api_error> failure;
  std::optional<core::txn_result> rollback;
};

using run_ptr = std::shared_ptr<txn_run>;

/// The key of a run (or of stored id `id` of its home) among those in
/// flight: a repeat is the same id under the same home queue.
std::pair<std::string, std::string> flight_key(const txn_run& run,
                                               const std::string& id) {
  return {run.home.value_or(""), id};
}

/// Queue `k` of the plan's pushes with its coordinator, for the queues
/// that exist; a fan-out over them keeps at most `gather_window` requests
/// in flight (a transaction may span thousands of queues).
using queue_slots = std::vector<std::pair<std::size_t, queue_actor>>;

/// Answers the transaction and every repeat that waited for it.
void answer(run_ptr run, txn_reply reply) {
  auto& host = *run->host;
  if (run->client_id) {
    auto it = host.in_flight.find(flight_key(*run, run->id));
    if (it != host.in_flight.end()) {
      for (auto& waiter : it->second)
        waiter.deliver(reply);
      host.in_flight.erase(it);
    }
  }
  if (!reply.failure && reply.result.success && host.stored)
    for (auto& part : run->push_results)
      host.stored(part.targets);
  run->rp.deliver(std::move(reply));
}

/// Ends the run's stages: gives up the staged acks and sealed pushes not
/// submitted (a submitted part is the writer's to settle, and was settled
/// before its answer), and closes the stages this broker counted.
void settle_all(run_ptr run) {
  auto& host = *run->host;
  std::vector<std::string> closed;
  for (std::size_t k = 0; k < run->staged.size(); ++k) {
    if (!run->opened[k])
      continue;
    abort_parts(host.self, host.node.writer,
                std::exchange(run->staged[k].parts, {}));
    run->opened[k] = false; // closed once
    closed.push_back(run->plan.acks[k].queue);
  }
  for (auto& p : run->prepared)
    abort_parts(host.self, host.node.writer, std::exchange(p.parts, {}));
  // Closing a stage may respawn a dead queue: only now, so every settle
  // above went to the handles that staged and sealed.
  if (host.stage_closed)
    for (auto& q : closed)
      host.stage_closed(q);
}

/// The queues a plan pushes to or acks on (repeats left in).
std::vector<std::string> queues_of(const core::txn_plan& plan) {
  std::vector<std::string> out;
  for (auto& p : plan.pushes)
    out.push_back(p.queue);
  for (auto& a : plan.acks)
    out.push_back(a.queue);
  return out;
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

/// The answer of a committed transaction, from the staged acks and the
/// sealed pushes.
core::txn_result result_of(txn_run& run) {
  auto r = core::txn_success(run.id, run.req.ops.size());
  for (std::size_t k = 0; k < run.plan.acks.size(); ++k) {
    auto& g = run.plan.acks[k];
    auto& replies = run.staged[k].replies;
    for (std::size_t j = 0; j < g.ops.size() && j < replies.size(); ++j) {
      r.results[g.ops[j]].lease_released = replies[j].lease_released;
      r.results[g.ops[j]].dead_lettered = replies[j].dead_lettered;
    }
  }
  for (std::size_t i = 0; i < run.req.ops.size(); ++i)
    if (auto* push = std::get_if<core::txn_push_op>(&run.req.ops[i]))
      r.results[i].items.resize(push->items.size());
  for (std::size_t k = 0; k < run.plan.pushes.size(); ++k) {
    auto& from = run.plan.pushes[k].from;
    auto& pushed = run.push_results[k];
    for (std::size_t j = 0; j < from.size() && j < pushed.results.size(); ++j) {
      auto& src = pushed.results[j];
      auto& to = pushed.target_of(j);
      auto& dst = r.results[from[j].first].items[from[j].second];
      dst.queue = to.queue;
      dst.partition = to.partition;
      dst.partition_uuid = to.partition_uuid;
      dst.status = src.result.status == storage::frame_result::duplicate
                       ? core::txn_push_status::duplicate
                       : core::txn_push_status::queued;
      dst.off = src.result.off;
    }
  }
  return r;
}

void commit(run_ptr run) {
  auto& host = *run->host;
  // A queue that died after its seal may be respawned already from what is
  // stored: writing its old seal now would put a segment behind its new
  // partitions' backs. Nothing is stored yet, so "failed" is the truth.
  for (std::size_t k = 0; k < run->prepared.size(); ++k)
    if (!run->prepared[k].parts.empty()
        && !host.serving(run->plan.pushes[k].queue, run->sealed_by[k])) {
      run->failure = make_error(
          errc::unavailable, "queue ", run->plan.pushes[k].queue,
          " restarted or was deleted during the transaction; nothing was "
          "stored, retry");
      return abort(run);
    }
  submission sub;
  auto& batch = sub.batch;
  for (auto& p : run->prepared)
    for (auto& m : p.batch.mutations)
      batch.mutations.push_back(std::move(m));
  for (auto& s : run->staged)
    for (auto& m : s.batch.mutations)
      batch.mutations.push_back(std::move(m));
  auto result = result_of(*run);
  // The answer is kept by the home queue, which exists now: an ack needs
  // its queue, a push has created it. Deleted meanwhile: the transaction
  // fails rather than commit without its answer.
  auto home = run->home ? host.queue_id_of(*run->home) : std::nullopt;
  if (run->client_id && run->home && !home) {
    run->failure
        = make_error(errc::not_found, "queue ", *run->home, " vanished");
    return abort(run);
  }
  if (run->client_id && home) {
    auto now = host.node.wall();
    batch.mutations.emplace_back(storage::mut::put_txn{
        *home, run->id, {now, core::encode_txn_result(result)}});
    // Retention: every transaction write forgets a few expired ids of its
    // home queue (only if still expired when the batch applies: an id may
    // run again).
    auto cutoff = host.retention.cutoff(now);
    if (auto t = host.node.store.read()) {
      auto old = storage::tables::txns_before(*t, *home, cutoff,
                                              host.retention.sweep);
      t->abort();
      if (old)
        for (auto& id : *old)
          if (id != run->id && !host.in_flight.contains(flight_key(*run, id)))
            batch.mutations.emplace_back(
                storage::mut::delete_txn{*home, id, cutoff});
    }
  }
  if (batch.mutations.empty()) { // duplicates and idempotent acks only
    settle_all(run);
    std::vector<storage::slot_t> slots;
    for (auto& q : queues_of(run->plan))
      slots.push_back(host.node.store.slot_of(q));
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    return after_durable(
        host.self, host.node, std::move(slots),
        [run, result](std::optional<api_error> failure) mutable {
          answer(run, failure ? txn_reply{{}, std::move(failure)}
                              : txn_reply{std::move(result), std::nullopt});
        });
  }
  // The pushes' parts go with the batch: the writer settles them (every
  // queue applies its push) before it answers.
  for (auto& p : run->prepared)
    for (auto& r : std::exchange(p.parts, {}))
      sub.parts.push_back(std::move(r));
  for (auto& s : run->staged)
    for (auto& r : std::exchange(s.parts, {}))
      sub.parts.push_back(std::move(r));
  propose_then(host.self, host.node.writer, std::move(sub),
               [run, result](std::optional<api_error> failure) mutable {
                 if (failure) {
                   run->failure = std::move(failure);
                   return abort(run);
                 }
                 settle_all(run);
                 // Parked namespace pops are woken now: every queue applied its
                 // settle, which the writer sent before this answer.
                 if (run->host->committed)
                   run->host->committed(queues_of(run->plan));
                 answer(run, txn_reply{std::move(result), std::nullopt});
               });
}

/// Seals every queue's pushes, then commits, or aborts when one failed.
void seal_all(run_ptr run) {
  auto& host = *run->host;
  auto n = run->plan.pushes.size();
  run->sealed_by.resize(n);
  run->prepared.resize(n);
  run->push_results.resize(n);
  auto queues = std::make_shared<queue_slots>();
  for (std::size_t k = 0; k < n; ++k) {
    auto& name = run->plan.pushes[k].queue;
    if (auto q = host.find_queue(name))
      queues->emplace_back(k, *q);
    else
      run->failure = make_error(errc::not_found, "queue ", name, " vanished");
  }
  gather<prepared_push>(
      queues->size(),
      [run, queues](std::size_t i) {
        auto& [k, q] = (*queues)[i];
        auto& part = run->plan.pushes[k];
        std::vector<push_item> items;
        items.reserve(part.from.size());
        for (auto [op, j] : part.from) {
          auto& item = std::get<core::txn_push_op>(run->req.ops[op]).items[j];
          items.push_back(push_item{item.partition, std::move(item.frame)});
        }
        return run->host->self->request(q, caf::infinite, seal_atom::value,
                                        std::move(items));
      },
      [run, queues](std::vector<fanned<prepared_push>> slots) {
        for (std::size_t i = 0; i < slots.size(); ++i) {
          auto k = (*queues)[i].first;
          if (!slots[i].reply) {
            if (!run->failure)
              run->failure = unreachable(slots[i].error);
            continue;
          }
          auto& p = *slots[i].reply;
          // maxSize: a full queue rolls back, naming its first push op.
          if (p.failure && p.failure->code == errc::queue_full
              && !run->rollback)
            run->rollback = core::txn_rollback(
                run->id, run->plan.pushes[k].from.front().first,
                p.failure->message);
          else if (p.failure && !run->failure)
            run->failure = p.failure;
          run->sealed_by[k] = (*queues)[i].second;
          run->prepared[k] = std::move(p.part);
          run->push_results[k].results = std::move(p.results);
          run->push_results[k].targets = std::move(p.targets);
        }
        if (run->failure || run->rollback)
          return abort(run);
        commit(run);
      });
}

/// Phase 2: every ack is staged; create missing queues, then seal.
void push_phase(run_ptr run) {
  if (run->plan.pushes.empty())
    return commit(run);
  std::vector<std::string> names;
  for (auto& part : run->plan.pushes)
    if (!run->host->find_queue(part.queue))
      names.push_back(part.queue);
  if (names.empty())
    return seal_all(run);
  run->host->create_queues(std::move(names),
                           [run](std::optional<api_error> failure) {
                             if (failure) {
                               run->failure = std::move(failure);
                               return abort(run);
                             }
                             seal_all(run);
                           });
}

/// Phase 1: stages the next cursor's acks (one at a time, in plan order).
void stage_next(run_ptr run) {
  auto k = run->staged.size();
  if (k == run->plan.acks.size())
    return push_phase(run);
  auto& g = run->plan.acks[k];
  auto q = run->host->find_queue(g.queue);
  if (!q) {
    run->rollback = core::txn_rollback(run->id, g.ops.front(),
                                       to_string(ack_error::not_found));
    return abort(run);
  }
  run->host->self
      ->request(*q, caf::infinite, stage_atom::value, g.partition, g.group,
                g.reqs)
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
            if (!r.parts.empty() && run->host->stage_opened)
              run->host->stage_opened(g.queue);
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
stored_answer(txn_host& h, std::optional<storage::queue_id> home,
              const std::string& id) {
  if (!home)
    return std::optional<storage::txn_record>{};
  auto t = h.node.store.read();
  if (!t)
    return std::move(t).err();
  auto stored = storage::tables::get_txn(*t, *home, id);
  t->abort();
  return stored;
}

} // namespace

caf::result<txn_reply> run_transaction(std::shared_ptr<txn_host> host,
                                       core::txn_request req) {
  auto& h = *host;
  // Without a client id the answer's id is generated, refusals included
  // (Queen answers a UUID either way).
  auto id = req.id ? *req.id : h.node.store.make_uuid();
  if (auto refused = core::check_txn(req, h.node.frames)) {
    refused->transaction_id = id;
    return txn_reply{std::move(*refused), std::nullopt};
  }
  std::vector<const storage::frame*> frames;
  for (auto& op : req.ops)
    if (auto* push = std::get_if<core::txn_push_op>(&op))
      for (auto& item : push->items)
        frames.push_back(&item.frame);
  if (auto ok = core::check_push_size(
          h.push, frames.size(),
          [&](std::size_t i) { return frames[i]->payload.size(); });
      !ok) {
    core::txn_result refused;
    refused.transaction_id = id;
    refused.error = ok.err().message;
    return txn_reply{std::move(refused), std::nullopt};
  }
  auto run = std::make_shared<txn_run>();
  run->host = host;
  run->client_id = req.id.has_value();
  run->id = std::move(id);
  run->home = core::txn_home_queue(req);
  if (run->client_id) {
    if (auto it = h.in_flight.find(flight_key(*run, run->id));
        it != h.in_flight.end()) {
      auto rp = promise_for<txn_reply>(h.self);
      it->second.push_back(rp); // answered with the first one's answer
      return rp.later();
    }
    auto home = run->home ? h.queue_id_of(*run->home) : std::nullopt;
    auto stored = stored_answer(h, home, run->id);
    if (!stored)
      return txn_reply{{}, stored.err()};
    if (*stored && !h.retention.expired((*stored)->created_at, h.node.wall())) {
      auto r = core::decode_txn_result((*stored)->result);
      if (!r)
        return txn_reply{{},
                         make_error(errc::internal, "transaction ", run->id,
                                    ": stored answer does not decode")};
      // Released once the batch that stored it is durable.
      auto rp = promise_for<txn_reply>(h.self);
      after_durable(
          h.self, h.node, slot_of_id(home->value),
          [rp, r = std::move(*r)](std::optional<api_error> failure) mutable {
            rp.deliver(failure ? txn_reply{{}, std::move(failure)}
                               : txn_reply{std::move(r), std::nullopt});
          });
      return rp.later();
    }
    h.in_flight.emplace(flight_key(*run, run->id),
                        std::vector<promise<txn_reply>>{});
  }
  run->rp = promise_for<txn_reply>(h.self);
  run->req = std::move(req);
  run->plan = core::plan_txn(run->req);
  stage_next(run);
  return run->rp.later();
}

} // namespace spool::actors
