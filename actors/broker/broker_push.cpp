// The broker's pushes: queues created on first push, a push spanning queues
// prepared by each queue and committed as one batch.

#include "actors/broker/broker_state.hpp"

namespace spool::actors::broker_detail {

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
  /// Called with the reply before it is sent (the partition directory).
  std::function<void(const queue_push_reply&)> learn;
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
  if (run->learn)
    run->learn(reply);
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
        return self->request(queue, caf::infinite, sealed_atom::value,
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

bool serving(broker_ptr self, const std::string& name, const queue_actor& q) {
  auto& st = self->state;
  auto now = st.queues.find(name);
  return now != st.queues.end() && now->second == q
         && !st.restarting.contains(q.address());
}

void commit(broker_ptr self, std::shared_ptr<multi_push> run) {
  // A queue that died after its seal may be respawned already from what is
  // stored: writing its old seal now would put a segment behind its new
  // partitions' backs. Nothing is stored yet, so "failed" is the truth.
  for (std::size_t k = 0; k < run->queues.size() && !run->failure; ++k) {
    if (!run->tokens[k])
      continue;
    if (!serving(self, run->queues[k], run->actors[k]))
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
  if (n == 1) { // one queue commits its own batch and answers itself
    // (it tells the broker of new partitions and of a stored push first)
    run->rp.delegate(self->state.queues.at(run->queues[0]), push_atom::value,
                     std::move(run->parts[0]));
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
  run->learn = [self](const queue_push_reply& r) { learn_partitions(self, r); };
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
  run->parts
      = core::distribute<push_item>(groups, [&](std::size_t i) -> push_item&& {
          return std::move(items[i].item);
        });
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

} // namespace spool::actors::broker_detail
