// Message flow.
//
// push: items grouped by queue; queues met for the first time are created in
//   one durable write, then every queue prepares its part (partitions
//   created, frames sealed); the broker writes all parts as ONE batch and
//   settles each queue with the outcome, answering in input order. A push
//   for a single queue goes to it directly (it commits its own batch).
// pop / ack: routed to the queue by name.
// DLQ: listing and delete read the store directly (one short read
//   transaction; deletes go through the writer, answered when durable);
//   requeue resolves the entries, then each queue routes them to the
//   entries' group cursors (see queue_actor).
// txn: run by `run_transaction` (broker_txn.cpp) over a `txn_host` view of
//   this broker.
// seek: routed to the queue (which writes every partition in one batch).
// subscription update: the group's records on every queue, read directly
//   and rewritten in one durable write.

#include "actors/broker/broker_actor.hpp"
#include "actors/promise.hpp"

#include <spdlog/spdlog.h>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "actors/async_mutex.hpp"
#include "actors/broker/broker_txn.hpp"
#include "actors/create_missing.hpp"
#include "actors/fan_out.hpp"
#include "actors/parking_lot.hpp"
#include "actors/queue/queue_actor.hpp"
#include "actors/supervise.hpp"
#include "actors/write.hpp"
#include "core/broker/pop_checks.hpp"
#include "core/broker/priority.hpp"
#include "core/dlq/dlq_reader.hpp"
#include "core/limits/names.hpp"
#include "core/push/push_items.hpp"
#include "storage/segment.hpp"
#include "storage/tables.hpp"

namespace spool::actors {

namespace {

struct broker_state {
  static inline const char* name = "spool.broker";
  broker_config cfg;
  std::map<std::string, queue_actor> queues;
  /// Parked pops across every queue (the pop.maxParked cap).
  std::shared_ptr<std::atomic<std::size_t>> parked_total
      = std::make_shared<std::atomic<std::size_t>>(0);
  /// Queue creations, one at a time.
  async_mutex gate;
  /// Pops waiting for their queue's creation, by lease id: true once
  /// cancelled (answered empty instead of handed to the queue).
  std::unordered_map<std::string, bool> creating;
  /// The queues' records as last configured (namespace, task, priority).
  std::map<std::string, storage::queue_record> records;
  /// Parked namespace pops, and the broker's one timer for them.
  parking_lot<namespace_pop_request, namespace_pop_reply> parked;
  std::optional<mono_time> armed;
  std::uint64_t timer_id = 0;
  std::shared_ptr<txn_host> txn;
  /// Queue deaths allowed before the broker gives up (supervise.hpp), and
  /// the dead queues whose respawn waits for its barrier.
  restart_budget restarts;
  std::set<caf::actor_addr> restarting;
  /// Transaction stages open on each queue (staged, not settled). A queue
  /// that dies with one open is respawned only once they settled: the
  /// transaction's batch may be written after its barrier, and its new
  /// cursors must read the rows it writes.
  std::map<std::string, std::size_t> open_stages;
  /// Respawns waiting for their queue's open stages.
  std::map<std::string, std::function<void()>> respawn_waiting;
};

using broker_ptr = broker_actor::stateful_pointer<broker_state>;

api_error queue_not_found() {
  return make_error(errc::not_found, "Queue not found");
}

expected<void> add_queue(broker_ptr self, const storage::queue_record& rec,
                         std::vector<storage::partition_record> partitions) {
  auto& st = self->state;
  queue_config qc;
  qc.node = st.cfg.node;
  qc.record = rec;
  qc.partitions = std::move(partitions);
  qc.max_parked = st.cfg.pop.max_parked;
  qc.parked_total = st.parked_total;
  auto q = spawn_queue(self->system(), std::move(qc));
  if (!q)
    return std::move(q).err();
  self->link_to(*q);
  st.queues.emplace(rec.name, *q);
  st.records[rec.name] = rec;
  return {};
}

/// A queue died (a bug): spawned again from its stored record and
/// partitions in its place, after a write barrier; other queues never
/// notice. A second exit of the same dead queue (a link to it again) is
/// ignored. If storage cannot be read, the broker ends (spoold then exits
/// non-zero).
void restart_queue(broker_ptr self, const std::string& name,
                   const caf::error& why) {
  auto& st = self->state;
  auto dead = st.queues.at(name).address();
  if (!st.restarting.insert(dead).second)
    return; // its death was seen already (a link to the dead handle again)
  note_death(st.cfg.node.metrics, "queue", name, why,
             "respawned from its stored record");
  if (!st.restarts.spend(self->clock().now())) {
    self->quit(why); // not transient: spoold exits and is restarted
    return;
  }
  auto id = st.records.at(name).id;
  // Until the respawn, requests meet the dead queue's handle and fail (the
  // name stays taken: no push creates a second queue of that name); the
  // respawn reads storage once every write the dead queue sent is settled.
  auto fail = [self](const api_error& err) {
    self->quit(caf::make_error(caf::sec::runtime_error,
                               "cannot restart a queue: " + to_string(err)));
  };
  auto respawn = [self, name, id, dead, fail] {
    auto& st = self->state;
    // Dead until here (also while waiting for open stages): a push it
    // sealed must not commit, and a second exit of it is ignored.
    st.restarting.erase(dead);
    if (auto it = st.queues.find(name);
        it == st.queues.end() || it->second.address() != dead)
      return; // deleted or replaced meanwhile
    auto t = st.cfg.node.store->db().read();
    if (!t)
      return fail(t.err());
    auto rec = storage::tables::get_queue(*t, id);
    if (!rec)
      return fail(rec.err());
    st.queues.erase(name);
    if (!*rec) { // deleted meanwhile
      st.records.erase(name);
      return;
    }
    auto parts = storage::tables::partitions_of(*t, id);
    if (!parts)
      return fail(parts.err());
    t->abort();
    if (auto ok = add_queue(self, **rec, std::move(*parts)); !ok)
      return fail(ok.err());
  };
  write_then(self, st.cfg.node.writer, barrier(),
             [self, name, fail, respawn](std::optional<api_error> failure) {
               auto& st = self->state;
               // A barrier is never refused: an error means the writer or
               // the store is gone.
               if (failure)
                 return fail(*failure);
               if (st.open_stages.contains(name)) {
                 st.respawn_waiting[name] = respawn;
                 return;
               }
               respawn();
             });
}

/// A new queue's record: fresh id, default options, namespace and task
/// derived from the name.
storage::queue_record new_queue_record(broker_ptr self,
                                       const std::string& name) {
  auto& node = self->state.cfg.node;
  storage::queue_record rec;
  rec.id = node.store->next_queue_id();
  rec.name = name;
  std::tie(rec.name_space, rec.task) = core::namespace_and_task(name);
  rec.created_at = node.wall();
  return rec;
}

/// Creates the queues of `names` the broker does not have yet, in one
/// durable write (one creation at a time: a concurrent first push to the
/// same name waits and then finds it), then calls `k` (with the write's
/// error, if any).
void ensure_queues(broker_ptr self, std::vector<std::string> names,
                   std::function<void(std::optional<api_error>)> k) {
  create_missing<std::remove_pointer_t<broker_ptr>, storage::queue_record>(
      self, &self->state.gate, self->state.cfg.node.writer, std::move(names),
      [self](const std::string& n) { return self->state.queues.contains(n); },
      [self](const std::string& n) { return new_queue_record(self, n); },
      [self](const storage::queue_record& rec) {
        return add_queue(self, rec, {});
      },
      std::move(k));
}

void wake(broker_ptr self, const std::vector<std::string>& queues);

/// A push spanning queues, gathered by the broker.
struct multi_push {
  std::vector<std::string> queues;
  std::vector<std::vector<std::size_t>> items; ///< input indices per queue
  std::vector<std::vector<push_item>> parts;
  std::vector<push_token> tokens;
  std::vector<storage::write_batch> batches;
  /// The queues sealed (settled by handle: a queue deleted meanwhile still
  /// settles what it sealed), and what each answers once durable.
  std::vector<queue_actor> actors;
  std::vector<queue_push_reply> prepared;
  std::vector<queue_push_reply> replies;
  std::optional<api_error> failure;
  std::size_t item_count = 0;
  promise<queue_push_reply> rp;
  /// Called once the push is durable (wakes parked namespace pops).
  std::function<void()> stored;
};

void answer(std::shared_ptr<multi_push> run) {
  if (run->failure) {
    run->rp.deliver(push_failed(run->failure));
    return;
  }
  queue_push_reply reply;
  reply.results.resize(run->item_count);
  for (std::size_t k = 0; k < run->queues.size(); ++k) {
    auto& part = run->replies[k];
    if (part.failure) {
      run->rp.deliver(push_failed(part.failure));
      return;
    }
    reply.created_at = std::max(reply.created_at, part.created_at);
    auto base = static_cast<std::uint32_t>(reply.targets.size());
    for (auto& t : part.targets)
      reply.targets.push_back(std::move(t));
    for (std::size_t j = 0; j < run->items[k].size(); ++j) {
      auto r = part.results[j];
      r.target += base;
      reply.results[run->items[k][j]] = r;
    }
  }
  run->rp.deliver(std::move(reply));
  if (run->stored)
    run->stored();
}

/// Settles every prepared part with `failure` (none: durable), at most
/// `gather_window` queues at a time.
void settle(broker_ptr self, std::shared_ptr<multi_push> run,
            std::optional<api_error> failure) {
  if (failure && !run->failure)
    run->failure = failure;
  run->replies.resize(run->queues.size());
  // Each queue that sealed settles by its handle, also one deleted (or
  // restarted) meanwhile: a durable push is answered as stored.
  auto held
      = std::make_shared<std::vector<std::pair<std::size_t, queue_actor>>>();
  for (std::size_t k = 0; k < run->queues.size(); ++k)
    if (run->tokens[k])
      held->emplace_back(k, run->actors[k]);
  gather<queue_push_reply>(
      held->size(),
      [self, run, held, failure](std::size_t i) {
        auto& [k, queue] = (*held)[i];
        return self->request(queue, caf::infinite, settle_atom::value,
                             run->tokens[k], failure);
      },
      [run, held, failure](std::vector<fanned<queue_push_reply>> slots) {
        for (std::size_t i = 0; i < slots.size(); ++i) {
          auto k = (*held)[i].first;
          if (slots[i].reply)
            run->replies[k] = std::move(*slots[i].reply);
          else if (!failure) // durable: its queue died after the commit
            run->replies[k] = run->prepared[k];
          else if (!run->failure)
            run->failure = unreachable(slots[i].error);
        }
        answer(run);
      });
}

void commit(broker_ptr self, std::shared_ptr<multi_push> run) {
  // A queue that died after its seal may be respawned already from what is
  // stored: writing its old seal now would put a segment behind its new
  // partitions' backs. Nothing is stored yet, so "failed" is the truth.
  auto& st = self->state;
  for (std::size_t k = 0; k < run->queues.size() && !run->failure; ++k) {
    if (!run->tokens[k])
      continue;
    auto now = st.queues.find(run->queues[k]);
    if (now == st.queues.end() || now->second != run->actors[k]
        || st.restarting.contains(run->actors[k].address()))
      run->failure = make_error(
          errc::unavailable, "queue ", run->queues[k],
          " restarted or was deleted during the push; nothing was stored, "
          "retry");
  }
  if (run->failure)
    return settle(self, run, run->failure);
  storage::write_batch batch;
  for (auto& b : run->batches)
    for (auto& m : b.mutations)
      batch.mutations.push_back(std::move(m));
  if (batch.mutations.empty())
    return settle(self, run, std::nullopt);
  write_then(self, self->state.cfg.node.writer, std::move(batch),
             [self, run](std::optional<api_error> failure) {
               settle(self, run, std::move(failure));
             });
}

void prepare_all(broker_ptr self, std::shared_ptr<multi_push> run) {
  auto n = run->queues.size();
  if (n == 1) { // one queue commits its own batch
    self->request(self->state.queues.at(run->queues[0]), caf::infinite,
                  push_atom::value, std::move(run->parts[0]))
        .then(
            [run](queue_push_reply& r) mutable {
              run->replies = {std::move(r)};
              answer(run);
            },
            [run](caf::error& err) {
              run->failure = unreachable(err);
              answer(run);
            });
    return;
  }
  // Seals at most `gather_window` queues at a time (a push to thousands of
  // queues stays linear); the queues exist now, after `ensure_queues`.
  std::vector<queue_actor> dests;
  dests.reserve(n);
  for (auto& name : run->queues)
    dests.push_back(self->state.queues.at(name));
  run->actors = dests;
  gather<prepared_push>(
      n,
      [self, run, dests = std::move(dests)](std::size_t k) {
        return self->request(dests[k], caf::infinite, seal_atom::value,
                             std::move(run->parts[k]));
      },
      [self, run](std::vector<fanned<prepared_push>> slots) {
        run->tokens.resize(slots.size());
        run->batches.resize(slots.size());
        run->prepared.resize(slots.size());
        for (std::size_t k = 0; k < slots.size(); ++k) {
          if (!slots[k].reply) {
            if (!run->failure)
              run->failure = unreachable(slots[k].error);
            continue;
          }
          auto& p = *slots[k].reply;
          if (p.failure && !run->failure)
            run->failure = p.failure;
          run->tokens[k] = p.token;
          run->batches[k] = std::move(p.batch);
          run->prepared[k].results = std::move(p.results);
          run->prepared[k].targets = std::move(p.targets);
        }
        commit(self, run);
      });
}

caf::typed_response_promise<queue_push_reply>
on_push(broker_ptr self, std::vector<broker_push_item>& items) {
  auto& st = self->state;
  auto run = std::make_shared<multi_push>();
  run->rp = promise_for<queue_push_reply>(self);
  run->item_count = items.size();
  std::vector<std::string> names;
  for (auto& i : items)
    if (names.empty() || names.back() != i.queue)
      names.push_back(i.queue); // repeats left: wake dedupes namespaces
  run->stored = [self, names = std::move(names)] { wake(self, names); };
  if (items.empty()) {
    run->rp.deliver(queue_push_reply{});
    return run->rp;
  }
  if (auto ok = core::check_push_size(
          st.cfg.push, items.size(),
          [&](std::size_t i) { return items[i].item.frame.payload.size(); });
      !ok) {
    run->rp.deliver(push_failed(ok.err()));
    return run->rp;
  }
  // Everything is validated before a queue is created: a bad item leaves
  // no trace.
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& item = items[i];
    if (auto ok = core::check_push_item(i, &item.queue, item.item.partition,
                                        item.item.frame, st.cfg.node.frames);
        !ok) {
      run->rp.deliver(push_failed(ok.err()));
      return run->rp;
    }
  }
  auto groups = core::group_by_name(
      items.size(),
      [&](std::size_t i) -> const std::string& { return items[i].queue; });
  run->parts = core::distribute<push_item>(
      groups, [&](std::size_t i) { return std::move(items[i].item); });
  run->queues = std::move(groups.names);
  run->items = std::move(groups.items);
  ensure_queues(self, run->queues,
                [self, run](std::optional<api_error> failure) {
                  if (failure)
                    run->rp.deliver(push_failed(failure));
                  else
                    prepare_all(self, run);
                });
  return run->rp;
}

// -- routing -----------------------------------------------------------------

/// Forwards a request to queue `name`, `q`. For a queue in a namespace the
/// answer passes through here, and wakes the parked namespace pops it may
/// serve when `woke(answer)`; `fail(error)` answers an unreachable queue.
template <class Reply, class Woke, class Fail, class... Ts>
caf::delegated<Reply> via_queue(broker_ptr self, const std::string& name,
                                const queue_actor& q, Woke woke, Fail fail,
                                Ts&&... xs) {
  // A queue without a namespace serves no namespace pop; for one with a
  // namespace the answer passes here even when nothing waits now: a pop
  // may park while the request is on its way.
  auto rec = self->state.records.find(name);
  if (rec == self->state.records.end() || rec->second.name_space.empty())
    return self->delegate(q, std::forward<Ts>(xs)...);
  auto rp = promise_for<Reply>(self);
  self->request(q, caf::infinite, std::forward<Ts>(xs)...)
      .then(
          [self, rp, woke, name](Reply& r) mutable {
            bool wakes = woke(r);
            rp.deliver(std::move(r));
            if (wakes)
              wake(self, {name});
          },
          [rp, fail](caf::error& err) mutable { rp.deliver(fail(err)); });
  return {};
}

// -- dead-letter queue
// ---------------------------------------------------------

/// The oldest `dlq_max_batch` entries `f` selects (and the count of all),
/// from one short read transaction.
expected<core::dlq_selection>
select_dlq(broker_ptr self, const core::dlq_filter& f,
           std::optional<std::size_t> per_cursor = std::nullopt) {
  auto& node = self->state.cfg.node;
  auto t = node.store->db().read();
  if (!t)
    return std::move(t).err();
  return core::select_dlq(*t, f, node.wall(), core::dlq_max_batch, per_cursor);
}

dlq_list_reply on_dlq_list(broker_ptr self, const core::dlq_query& q) {
  auto& node = self->state.cfg.node;
  auto t = node.store->db().read();
  if (!t)
    return dlq_list_reply{{}, t.err()};
  auto page = core::list_dlq(*t, q, node.wall());
  if (!page)
    return dlq_list_reply{{}, page.err()};
  return dlq_list_reply{std::move(*page), std::nullopt};
}

/// Writes `batch` and answers `Reply{n, failure}` once it is durable (a
/// count of 0 when it failed): DLQ deletes, subscription updates.
template <class Reply>
void write_counted(broker_ptr self, storage::write_batch batch, std::size_t n,
                   promise<Reply> rp) {
  write_then(self, self->state.cfg.node.writer, std::move(batch),
             [rp, n](std::optional<api_error> failure) mutable {
               auto stored = failure ? std::size_t{0} : n;
               rp.deliver(Reply{stored, std::move(failure)});
             });
}

caf::typed_response_promise<dlq_count_reply>
on_dlq_delete(broker_ptr self, const core::dlq_filter& f) {
  auto rp = promise_for<dlq_count_reply>(self);
  auto selected = select_dlq(self, f);
  if (!selected) {
    rp.deliver(dlq_count_reply{0, selected.err()});
    return rp.later();
  }
  auto& items = selected->items;
  if (items.empty()) {
    rp.deliver(dlq_count_reply{});
    return rp.later();
  }
  storage::write_batch b;
  for (auto& x : items)
    b.mutations.emplace_back(
        storage::mut::delete_dlq{x.queue_id, x.group, x.entry.id});
  auto remaining = selected->total - items.size();
  write_then(self, self->state.cfg.node.writer, std::move(b),
             [rp, n = items.size(),
              remaining](std::optional<api_error> failure) mutable {
               if (failure)
                 rp.deliver(dlq_count_reply{0, std::move(failure), 0});
               else
                 rp.deliver(dlq_count_reply{n, std::nullopt, remaining});
             });
  return rp.later();
}

caf::typed_response_promise<dlq_count_reply>
on_requeue(broker_ptr self, const core::dlq_filter& f) {
  auto rp = promise_for<dlq_count_reply>(self);
  // Entries pending already are left out, and each cursor gets at most its
  // free places: one full cursor does not hold the others back.
  auto selected = select_dlq(self, f, core::cursor_core::max_requeued);
  if (!selected) {
    rp.deliver(dlq_count_reply{0, selected.err()});
    return rp.later();
  }
  auto& items = selected->items;
  auto remaining = selected->total - items.size();
  // By (queue, group), oldest first: requeue order is delivery order.
  std::map<std::pair<std::string, std::string>, std::vector<storage::dlq_entry>>
      parts;
  for (auto it = items.rbegin(); it != items.rend(); ++it)
    parts[{it->queue, it->group}].push_back(std::move(it->entry));
  for (auto& [key, _] : parts)
    if (!self->state.queues.contains(key.first)) {
      rp.deliver(dlq_count_reply{
          0, make_error(errc::not_found, "Queue not found: ", key.first)});
      return rp.later();
    }
  if (parts.empty()) {
    rp.deliver(dlq_count_reply{});
    return rp.later();
  }
  std::vector<std::pair<
      queue_actor, std::pair<std::string, std::vector<storage::dlq_entry>>>>
      asks;
  for (auto& [key, entries] : parts)
    asks.push_back(
        {self->state.queues.at(key.first), {key.second, std::move(entries)}});
  auto n = asks.size();
  gather<dlq_count_reply>(
      n,
      [self, asks = std::move(asks)](std::size_t i) mutable {
        return self->request(asks[i].first, caf::infinite, requeue_atom::value,
                             asks[i].second.first,
                             std::move(asks[i].second.second));
      },
      [rp, remaining](std::vector<fanned<dlq_count_reply>> slots) mutable {
        auto total = total_of(slots);
        if (total.failure) // what was done stays done; the rest: retry
          total.remaining = 0;
        else
          total.remaining += remaining;
        rp.deliver(std::move(total));
      });
  return rp.later();
}

// -- configure ----------------------------------------------------------------

void configure_now(broker_ptr self, configure_request& req,
                   promise<configure_reply> rp) {
  auto& st = self->state;
  auto fail = [&rp](api_error err) mutable {
    configure_reply reply;
    reply.failure = std::move(err);
    rp.deliver(std::move(reply));
  };
  if (auto it = st.queues.find(req.queue); it != st.queues.end()) {
    self->request(it->second, caf::infinite, configure_atom::value,
                  std::move(req))
        .then(
            [self, rp](configure_reply& r) mutable {
              auto name = r.queue.name;
              bool ok = !r.failure;
              if (ok)
                self->state.records[name] = r.queue;
              rp.deliver(std::move(r));
              if (ok) // it may now be in the namespace of a parked pop
                wake(self, {name});
            },
            [fail](caf::error& err) mutable { fail(unreachable(err)); });
    return;
  }
  auto opts = core::apply_options(storage::queue_options{}, req.options);
  if (!opts)
    return fail(opts.err());
  auto rec = new_queue_record(self, req.queue);
  rec.options = std::move(*opts);
  if (req.name_space)
    rec.name_space = *req.name_space;
  if (req.task)
    rec.task = *req.task;
  auto part = new_partition_record(st.cfg.node, rec.id, default_partition);
  storage::write_batch batch;
  batch.mutations.emplace_back(storage::mut::create_queue{rec});
  batch.mutations.emplace_back(storage::mut::create_partition{part});
  st.gate.enter();
  auto done = [self, rp, rec, part](std::optional<api_error> failure) mutable {
    if (!failure)
      if (auto ok = add_queue(self, rec, {part}); !ok)
        failure = ok.err();
    configure_reply reply;
    if (failure) {
      reply.failure = std::move(failure);
    } else {
      reply.queue = rec;
      reply.default_partition_uuid = part.uuid;
      reply.created = true;
    }
    rp.deliver(std::move(reply));
    self->state.gate.leave();
  };
  write_then(self, st.cfg.node.writer, std::move(batch), std::move(done));
}

caf::typed_response_promise<configure_reply>
on_configure(broker_ptr self, configure_request& req) {
  auto rp = promise_for<configure_reply>(self);
  if (auto ok = core::check_name(core::name_kind::queue, req.queue); !ok) {
    configure_reply reply;
    reply.failure = ok.err();
    rp.deliver(std::move(reply));
    return rp.later();
  }
  self->state.gate.wait([self, req = std::move(req), rp]() mutable {
    configure_now(self, req, rp);
  });
  return rp.later();
}

// -- administration -----------------------------------------------------------

queues_reply describe(broker_ptr self, const std::optional<std::string>& only) {
  queues_reply reply;
  auto t = self->state.cfg.node.store->db().read();
  if (!t) {
    reply.failure = t.err();
    return reply;
  }
  auto qs = storage::tables::all_queues(*t);
  auto ps = storage::tables::all_partitions(*t);
  if (!qs || !ps) {
    reply.failure = !qs ? qs.err() : ps.err();
    return reply;
  }
  for (auto& q : *qs) {
    if (only && q.name != *only)
      continue;
    queue_info info{q, {}};
    for (auto& p : *ps)
      if (p.queue == q.id)
        info.partitions.push_back(p);
    std::sort(info.partitions.begin(), info.partitions.end(),
              [](auto& a, auto& b) { return a.id.value < b.id.value; });
    reply.queues.push_back(std::move(info));
  }
  std::sort(reply.queues.begin(), reply.queues.end(),
            [](auto& a, auto& b) { return a.record.name < b.record.name; });
  if (only && reply.queues.empty())
    reply.failure = queue_not_found();
  return reply;
}

/// The queue actors a request names (one, or all when none is named).
std::vector<queue_actor> queues_named(broker_ptr self,
                                      const std::optional<std::string>& only) {
  std::vector<queue_actor> out;
  for (auto& [name, q] : self->state.queues)
    if (!only || name == *only)
      out.push_back(q);
  return out;
}

caf::typed_response_promise<groups_reply> on_groups(broker_ptr self,
                                                    const groups_request& req) {
  auto rp = promise_for<groups_reply>(self);
  fan_out<groups_reply>(
      self, queues_named(self, req.queue),
      [rp](std::vector<fanned<groups_reply>> slots) mutable {
        rp.deliver(
            fold_replies(slots, [](groups_reply& out, groups_reply& part) {
              for (auto& c : part.cursors)
                out.cursors.push_back(std::move(c));
            }));
      },
      groups_atom::value, req);
  return rp.later();
}

caf::typed_response_promise<delete_group_reply>
on_delete_group(broker_ptr self, const delete_group_request& req) {
  auto rp = promise_for<delete_group_reply>(self);
  if (auto ok = core::check_name(core::name_kind::group, req.group); !ok) {
    rp.deliver(delete_group_reply{0, false, ok.err()});
    return rp.later();
  }
  fan_out<delete_group_reply>(
      self, queues_named(self, req.queue),
      [rp](std::vector<fanned<delete_group_reply>> slots) mutable {
        rp.deliver(fold_replies(slots, [](delete_group_reply& out,
                                          const delete_group_reply& part) {
          out.deleted_partitions += part.deleted_partitions;
          out.metadata_deleted = out.metadata_deleted || part.metadata_deleted;
        }));
      },
      delete_atom::value, req);
  return rp.later();
}

/// One bounded step of removing deleted queue `q`'s rows (one write;
/// other writes go between steps); the next step follows until the queue's
/// doomed mark is gone. A failed step changes nothing and is retried after
/// `reap_retry`; a restart resumes from the doomed marks.
constexpr auto reap_retry = std::chrono::seconds{1};

void reap(broker_ptr self, storage::queue_id q) {
  auto& node = self->state.cfg.node;
  storage::write_batch batch;
  batch.mutations.emplace_back(storage::mut::sweep_queue{q, node.sweep_step});
  write_then(
      self, node.writer, std::move(batch),
      [self, q](std::optional<api_error> failure) {
        auto again = [self, q] {
          self->delayed_send(self, reap_retry, reap_atom::value, q.value);
        };
        if (failure) {
          spdlog::warn("removing the rows of deleted queue {}: {} "
                       "(retried)",
                       q.value, to_string(*failure));
          return again();
        }
        auto t = self->state.cfg.node.store->db().read();
        if (!t)
          return again();
        auto doomed = storage::tables::is_doomed(*t, q);
        if (!doomed)
          return again();
        if (*doomed) // more rows: the next step, after what waits
          self->send(self, reap_atom::value, q.value);
        else
          spdlog::info("deleted queue {}: every row of it is removed", q.value);
      });
}

caf::typed_response_promise<delete_queue_reply>
on_delete_queue(broker_ptr self, const std::string& name) {
  auto rp = promise_for<delete_queue_reply>(self);
  // One at a time with queue creations: a push waiting to create the name
  // finds it gone and creates a new queue.
  self->state.gate.wait([self, rp, name]() mutable {
    auto& st = self->state;
    auto it = st.queues.find(name);
    if (it == st.queues.end()) {
      rp.deliver(delete_queue_reply{false, std::nullopt});
      return;
    }
    auto q = it->second;
    st.gate.enter();
    // The queue quits once deleted; unlinked, its exit does not reach us.
    self->unlink_from(q);
    self->request(q, caf::infinite, delete_atom::value)
        .then(
            [self, rp, name, q](delete_queue_reply& r) mutable {
              auto& st = self->state;
              if (r.failure) {
                self->link_to(q);
              } else {
                st.queues.erase(name);
                if (auto rec = st.records.find(name); rec != st.records.end()) {
                  reap(self, rec->second.id); // its rows, in bounded steps
                  st.records.erase(rec);
                }
              }
              rp.deliver(std::move(r));
              st.gate.leave();
            },
            [self, rp, q](caf::error& err) mutable {
              self->link_to(q);
              rp.deliver(delete_queue_reply{false, unreachable(err)});
              self->state.gate.leave();
            });
  });
  return rp.later();
}

// -- namespace/task pops
// -------------------------------------------------------

/// One try of a namespace pop over its queues, in serving order.
struct namespace_run {
  namespace_pop_request req;
  std::vector<std::string> order;
  std::size_t next = 0;
  std::optional<mono_time> retry_at;
  std::function<void(namespace_pop_reply)> done;
};

void namespace_step(broker_ptr self, std::shared_ptr<namespace_run> run) {
  auto& st = self->state;
  while (run->next < run->order.size()) {
    auto name = run->order[run->next++];
    auto it = st.queues.find(name);
    if (it == st.queues.end())
      continue; // deleted meanwhile
    auto pop = run->req.pop;
    pop.partition.reset();
    pop.wait = false;
    self->request(it->second, caf::infinite, pop_atom::value, pop)
        .then(
            [self, run, name](queue_pop_reply& r) {
              if (!r.claimed.empty() || r.failure) {
                run->done(namespace_pop_reply{name, std::move(r)});
                return;
              }
              if (r.retry_at
                  && (!run->retry_at || *r.retry_at < *run->retry_at))
                run->retry_at = r.retry_at;
              namespace_step(self, run);
            },
            [self, run](caf::error&) { namespace_step(self, run); });
    return;
  }
  namespace_pop_reply empty;
  empty.reply.reason
      = run->order.empty() ? empty_reason::no_partition : empty_reason::empty;
  empty.reply.retry_at = run->retry_at;
  run->done(std::move(empty));
}

/// Tries the namespace's queues once: higher priority first, starved queues
/// (oldest waiting frame older than the cap) before all.
void try_namespace(broker_ptr self, const namespace_pop_request& req,
                   std::function<void(namespace_pop_reply)> done) {
  auto& st = self->state;
  std::vector<core::queue_candidate> candidates;
  std::vector<queue_actor> actors;
  for (auto& [name, rec] : st.records)
    if (core::serves(rec.name_space, rec.task, req.name_space, req.task)) {
      candidates.push_back({name, rec.options.priority, std::nullopt});
      actors.push_back(st.queues.at(name));
    }
  auto run = std::make_shared<namespace_run>();
  run->req = req;
  run->done = std::move(done);
  fan_out<storage::micros>(
      self, actors,
      [self, run,
       candidates](std::vector<fanned<storage::micros>> oldest) mutable {
        for (std::size_t i = 0; i < candidates.size(); ++i)
          if (oldest[i].reply && *oldest[i].reply > 0)
            candidates[i].oldest_waiting = *oldest[i].reply;
        auto& st = self->state;
        auto starvation = static_cast<storage::micros>(
            st.cfg.pop.max_starvation_s * 1'000'000);
        for (auto i :
             core::serving_order(candidates, st.cfg.node.wall(), starvation))
          run->order.push_back(candidates[i].name);
        namespace_step(self, run);
      },
      oldest_atom::value, req.pop.group);
}

void arm(broker_ptr self) {
  auto& st = self->state;
  auto due = st.parked.next_due();
  if (!due || (st.armed && *st.armed <= *due))
    return;
  st.armed = due;
  auto delay
      = std::max(*due - self->clock().now(), mono_clock::duration::zero());
  self->delayed_send(self, delay, timeout_atom::value, ++st.timer_id);
}

/// The parked namespace pops `queues` may serve (those of their namespaces
/// and tasks) try again, in arrival order; the others stay parked.
void wake(broker_ptr self, const std::vector<std::string>& queues) {
  auto& st = self->state;
  if (st.parked.idle())
    return;
  std::vector<const storage::queue_record*> recs;
  std::vector<std::string> spaces;
  for (auto& name : queues)
    if (auto it = st.records.find(name);
        it != st.records.end() && !it->second.name_space.empty()) {
      recs.push_back(&it->second);
      spaces.push_back(it->second.name_space);
    }
  if (recs.empty())
    return;
  st.parked.wake(spaces, [&](const namespace_pop_request& r) {
    return std::any_of(recs.begin(), recs.end(), [&](auto* rec) {
      return core::serves(rec->name_space, rec->task, r.name_space, r.task);
    });
  });
}

void on_timeout(broker_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.timer_id)
    return;
  st.armed.reset();
  st.parked.expire(self->clock().now());
  arm(self);
}

caf::typed_response_promise<namespace_pop_reply>
on_namespace_pop(broker_ptr self, namespace_pop_request& req) {
  auto rp = promise_for<namespace_pop_reply>(self);
  auto fail = [&rp](api_error err) mutable {
    namespace_pop_reply r;
    r.reply.failure = std::move(err);
    rp.deliver(std::move(r));
    return rp.later();
  };
  if (req.name_space.empty())
    return fail(
        make_error(errc::invalid_argument, "namespace must not be empty"));
  req.pop.partition.reset(); // always a wildcard pop: `partitions` counts
  if (auto ok = check_pop(self->state.cfg.pop, req.pop); !ok)
    return fail(ok.err());
  if (auto ok = core::check_name(core::name_kind::name_space, req.name_space);
      !ok)
    return fail(ok.err());
  if (req.task)
    if (auto ok = core::check_name(core::name_kind::task, *req.task); !ok)
      return fail(ok.err());
  auto deadline = self->clock().now() + req.pop.timeout;
  bool may_park = req.pop.wait && req.pop.timeout.count() > 0;
  self->state.parked.submit(std::move(req), rp, deadline, may_park);
  return rp.later();
}

// -- replay: seek and subscription update -------------------------------------

caf::delegated<seek_reply> on_seek(broker_ptr self, const std::string& queue,
                                   seek_request& req) {
  auto fail = [self](api_error err) {
    auto rp = promise_for<seek_reply>(self);
    seek_reply reply;
    reply.failure = std::move(err);
    rp.deliver(std::move(reply));
    return caf::delegated<seek_reply>{};
  };
  if (auto rule = core::seek_rule_of(req.target); !rule)
    return fail(rule.err());
  if (auto ok = core::check_name(core::name_kind::group, req.group); !ok)
    return fail(ok.err());
  if (req.partition)
    if (auto ok = core::check_name(core::name_kind::partition, *req.partition);
        !ok)
      return fail(ok.err());
  auto it = self->state.queues.find(queue);
  if (it == self->state.queues.end())
    return fail(
        make_error(errc::not_found, "Queue not found or has no partitions"));
  return via_queue<seek_reply>(
      self, queue, it->second,
      [](const seek_reply& r) { return r.partitions_updated > 0; },
      [](caf::error& err) {
        seek_reply reply;
        reply.failure = unreachable(err);
        return reply;
      },
      seek_atom::value, std::move(req));
}

/// Sets mode `timestamp` and `ts` on every subscription record of `group`
/// (semantics.md §6), in one write. Queues keep no copy of their records;
/// clearing the group's empty-scan watermarks comes with the candidate set.
caf::typed_response_promise<sub_update_reply>
on_sub_update(broker_ptr self, const std::string& group, storage::micros ts) {
  auto& st = self->state;
  auto rp = promise_for<sub_update_reply>(self);
  auto fail = [&rp](api_error err) mutable {
    rp.deliver(sub_update_reply{0, std::move(err)});
    return rp.later();
  };
  if (group.empty() || group == queue_mode_group)
    return fail(make_error(
        errc::invalid_argument,
        "Queue mode (__QUEUE_MODE__) has no subscription to update"));
  if (auto ok = core::check_name(core::name_kind::group, group); !ok)
    return fail(ok.err());
  // Partitions the group found empty are considered again by its next pops.
  for (auto& [_, q] : st.queues)
    self->send(q, sub_update_atom::value, group);
  storage::write_batch batch;
  {
    auto t = st.cfg.node.store->db().read();
    if (!t)
      return fail(t.err());
    for (auto& [_, q] : st.records) {
      auto rec = storage::tables::get_subscription(*t, q.id, group);
      if (!rec)
        return fail(rec.err());
      if (!*rec)
        continue;
      (*rec)->mode = storage::subscription_mode::timestamp;
      (*rec)->timestamp = ts;
      batch.mutations.emplace_back(
          storage::mut::update_subscription{q.id, group, **rec});
    }
  }
  auto rows = batch.mutations.size();
  if (rows == 0) {
    rp.deliver(sub_update_reply{});
    return rp.later();
  }
  write_counted(self, std::move(batch), rows, rp);
  return rp.later();
}

// -- transactions -------------------------------------------------------------

std::shared_ptr<txn_host> make_txn_host(broker_ptr self) {
  auto host = std::make_shared<txn_host>();
  host->self = self;
  host->node = self->state.cfg.node;
  host->retention = self->state.cfg.txn_retention;
  host->push = self->state.cfg.push;
  host->find_queue
      = [self](const std::string& name) -> std::optional<queue_actor> {
    auto& qs = self->state.queues;
    if (auto it = qs.find(name); it != qs.end())
      return it->second;
    return std::nullopt;
  };
  host->create_queues = [self](auto names, auto done) {
    ensure_queues(self, std::move(names), std::move(done));
  };
  host->committed
      = [self](const std::vector<std::string>& queues) { wake(self, queues); };
  host->stage_opened
      = [self](const std::string& queue) { ++self->state.open_stages[queue]; };
  host->stage_closed = [self](const std::string& queue) {
    auto& st = self->state;
    auto it = st.open_stages.find(queue);
    if (it == st.open_stages.end() || --it->second > 0)
      return;
    st.open_stages.erase(it);
    if (auto w = st.respawn_waiting.find(queue);
        w != st.respawn_waiting.end()) {
      auto respawn = std::move(w->second);
      st.respawn_waiting.erase(w);
      respawn(); // after the settle was sent: the batch is durable or void
    }
  };
  return host;
}

broker_actor::behavior_type broker(broker_ptr self, broker_config cfg,
                                   storage::catalog cat) {
  self->state.cfg = std::move(cfg);
  self->state.txn = make_txn_host(self);
  supervise(
      self,
      [self](const caf::actor_addr& src, const caf::error& why) {
        for (auto& [name, q] : self->state.queues)
          if (q.address() == src) {
            if (why)
              restart_queue(self, std::string{name}, why);
            return true;
          }
        return false;
      },
      // Stopped (SIGTERM): parked namespace pops are answered empty (each
      // queue answers its own).
      [self] {
        self->state.parked.drop(
            [](const namespace_pop_request&) { return true; });
      });
  self->state.parked.setup(
      self->state.parked_total, self->state.cfg.pop.max_parked,
      {.attempt =
           [self](const namespace_pop_request& req,
                  std::function<void(namespace_pop_reply)> k) {
             try_namespace(self, req, std::move(k));
           },
       .nothing =
           [](const namespace_pop_reply& r) {
             return decltype(self->state.parked)::nothing_claimed(r.reply);
           },
       .key = [](const namespace_pop_request& r) { return r.pop.lease_id; },
       .topic = [](const namespace_pop_request& r)
           -> std::optional<std::string> { return r.name_space; },
       .busy =
           [](namespace_pop_reply r) {
             r.reply.failure = make_error(errc::unavailable,
                                          "Server busy: too many parked pops");
             return r;
           },
       .now = [self] { return self->clock().now(); },
       .rearm = [self] { arm(self); }});
  for (auto& q : cat.queues) {
    std::vector<storage::partition_record> parts;
    for (auto& p : cat.partitions)
      if (p.queue == q.id)
        parts.push_back(p);
    if (auto ok = add_queue(self, q, std::move(parts)); !ok)
      self->quit(caf::make_error(caf::sec::runtime_error, to_string(ok.err())));
  }
  for (auto q : cat.doomed) // deletions a stop interrupted
    self->send(self, reap_atom::value, q.value);
  return {
      [self](push_atom, std::vector<broker_push_item>& items) {
        return on_push(self, items);
      },
      [self](reap_atom, std::uint64_t q) { reap(self, storage::queue_id{q}); },
      [self](pop_atom, const std::string& queue,
             queue_pop_request& req) -> caf::delegated<queue_pop_reply> {
        if (auto ok = check_pop(self->state.cfg.pop, req); !ok) {
          auto rp = promise_for<queue_pop_reply>(self);
          queue_pop_reply bad;
          bad.failure = ok.err();
          rp.deliver(std::move(bad));
          return {};
        }
        auto it = self->state.queues.find(queue);
        if (it != self->state.queues.end())
          return self->delegate(it->second, pop_atom::value, std::move(req));
        // A pop on a queue that does not exist yet registers the group
        // there (semantics.md §5), so the queue is created as a push would.
        auto rp = promise_for<queue_pop_reply>(self);
        if (auto ok = core::check_name(core::name_kind::queue, queue); !ok) {
          queue_pop_reply bad;
          bad.failure = ok.err();
          rp.deliver(std::move(bad));
          return {};
        }
        self->state.creating[req.lease_id] = false;
        ensure_queues(
            self, {queue},
            [self, rp, queue,
             req = std::move(req)](std::optional<api_error> failure) mutable {
              auto& creating = self->state.creating;
              bool cancelled = false;
              if (auto c = creating.find(req.lease_id); c != creating.end()) {
                cancelled = c->second;
                creating.erase(c);
              }
              if (cancelled && !failure) {
                rp.deliver(queue_pop_reply{}); // the client left
                return;
              }
              auto it = self->state.queues.find(queue);
              if (failure || it == self->state.queues.end()) {
                queue_pop_reply bad;
                bad.failure = failure.value_or(make_error(
                    errc::internal, "Queue ", queue, " not created"));
                rp.deliver(std::move(bad));
                return;
              }
              rp.delegate(it->second, pop_atom::value, std::move(req));
            });
        return {};
      },
      [self](ack_atom, const std::string& queue, const std::string& partition,
             const std::string& group, std::vector<ack_request>& reqs)
          -> caf::delegated<std::vector<ack_reply>> {
        // Malformed: every item answers the error, nothing is applied.
        auto malformed = [&]() -> std::optional<api_error> {
          SPOOL_TRY(core::check_name(core::name_kind::queue, queue));
          SPOOL_TRY(core::check_name(core::name_kind::partition, partition));
          SPOOL_TRY(core::check_name(core::name_kind::group, group));
          for (std::size_t i = 0; i < reqs.size(); ++i)
            if (auto ok = core::check_ack(reqs[i]); !ok)
              return make_error(ok.err().code, "acks[", i, "].",
                                ok.err().message);
          return std::nullopt;
        }();
        if (malformed) {
          auto rp = promise_for<std::vector<ack_reply>>(self);
          rp.deliver(std::vector<ack_reply>(
              reqs.size(),
              ack_reply{ack_error::none, false, false, malformed}));
          return {};
        }
        auto it = self->state.queues.find(queue);
        if (it == self->state.queues.end()) {
          auto rp = promise_for<std::vector<ack_reply>>(self);
          rp.deliver(std::vector<ack_reply>(
              reqs.size(), ack_reply{ack_error::not_found, false, false, {}}));
          return {};
        }
        // Parked namespace pops wait: a released lease wakes them.
        auto n = reqs.size();
        return via_queue<std::vector<ack_reply>>(
            self, queue, it->second,
            [](const std::vector<ack_reply>& rs) {
              return std::any_of(rs.begin(), rs.end(),
                                 [](auto& r) { return r.lease_released; });
            },
            [n](caf::error& err) {
              return std::vector<ack_reply>(
                  n,
                  ack_reply{ack_error::none, false, false, unreachable(err)});
            },
            ack_atom::value, partition, group, std::move(reqs));
      },
      [self](configure_atom, configure_request& req) {
        return on_configure(self, req);
      },
      [self](pop_atom, namespace_pop_request& req) {
        return on_namespace_pop(self, req);
      },
      [self](timeout_atom, std::uint64_t id) { on_timeout(self, id); },
      [self](release_atom, const std::string& queue,
             const std::string& partition, const std::string& group,
             const std::string& lease_id) -> caf::delegated<bool> {
        auto it = self->state.queues.find(queue);
        if (it == self->state.queues.end()) {
          auto rp = promise_for<bool>(self);
          rp.deliver(false);
          return {};
        }
        // Parked namespace pops wait: the released lease wakes them.
        return via_queue<bool>(
            self, queue, it->second, [](bool released) { return released; },
            [](caf::error&) { return false; }, release_atom::value, partition,
            group, lease_id);
      },
      [self](cancel_atom, const std::string& lease_id) {
        auto& st = self->state;
        if (auto c = st.creating.find(lease_id); c != st.creating.end())
          c->second = true;
        st.parked.cancel(lease_id);
        for (auto& [_, q] : st.queues)
          self->send(q, cancel_atom::value, lease_id);
      },
      [self](info_atom, const std::optional<std::string>& queue) {
        return describe(self, queue);
      },
      [self](browse_atom, const std::string& queue,
             browse_request& req) -> caf::delegated<browse_reply> {
        auto it = self->state.queues.find(queue);
        if (it == self->state.queues.end()) {
          auto rp = promise_for<browse_reply>(self);
          browse_reply reply;
          reply.failure = queue_not_found();
          rp.deliver(std::move(reply));
          return {};
        }
        // Bounded like a pop: at most pop.maxBytes of payload decoded.
        req.max_bytes = std::min<std::size_t>(req.max_bytes,
                                              self->state.cfg.pop.max_bytes);
        return self->delegate(it->second, browse_atom::value, std::move(req));
      },
      [self](groups_atom, const groups_request& req) {
        return on_groups(self, req);
      },
      [self](delete_atom, const delete_group_request& req) {
        return on_delete_group(self, req);
      },
      [self](delete_atom, const std::string& queue) {
        return on_delete_queue(self, queue);
      },
      [self](purge_atom, const std::string& queue,
             purge_request& req) -> caf::delegated<purge_reply> {
        auto it = self->state.queues.find(queue);
        auto fail = [self](api_error err) {
          auto rp = promise_for<purge_reply>(self);
          rp.deliver(purge_reply{0, std::move(err)});
          return caf::delegated<purge_reply>{};
        };
        if (req.below && req.below->value < 0)
          return fail(
              make_error(errc::invalid_argument, "purge: offset must be >= 0"));
        if (it == self->state.queues.end())
          return fail(queue_not_found());
        return self->delegate(it->second, purge_atom::value, std::move(req));
      },
      [self](list_atom) {
        std::vector<std::string> names;
        for (auto& [name, _] : self->state.queues)
          names.push_back(name);
        return names;
      },
      [self](dlq_list_atom, const core::dlq_query& q) {
        return on_dlq_list(self, q);
      },
      [self](requeue_atom, const core::dlq_filter& f) {
        return on_requeue(self, f);
      },
      [self](dlq_del_atom, const core::dlq_filter& f) {
        return on_dlq_delete(self, f);
      },
      [self](txn_atom, core::txn_request& req) {
        return run_transaction(self->state.txn, std::move(req));
      },
      [self](seek_atom, const std::string& queue, seek_request& req) {
        return on_seek(self, queue, req);
      },
      [self](sub_update_atom, const std::string& group, storage::micros ts) {
        return on_sub_update(self, group, ts);
      },
  };
}

} // namespace

expected<void> check_pop(const config::pop_limits& limits,
                         queue_pop_request& req) {
  auto bytes = core::check_pop(
      limits, {.group = req.group,
               .partition = req.partition ? &*req.partition : nullptr,
               .batch = req.batch,
               .partitions = req.partitions,
               .wait = req.wait,
               .timeout = req.timeout,
               .max_bytes = req.max_bytes});
  if (!bytes)
    return std::move(bytes).err();
  req.max_bytes = *bytes;
  return {};
}

expected<void> broker_config::validate() const {
  return node.validate("broker");
}

expected<broker_actor> spawn_broker(caf::actor_system& sys, broker_config cfg) {
  SPOOL_TRY(cfg.validate());
  auto cat = cfg.node.store->load_catalog();
  if (!cat)
    return std::move(cat).err();
  return sys.spawn(broker, std::move(cfg), std::move(*cat));
}

} // namespace spool::actors
