// The broker's pushes: queues created on first push, a push spanning queues
// prepared by each queue and committed as one batch.

#include "actors/broker/broker_state.hpp"

namespace spool::actors::broker_detail {

/// A push spanning queues, gathered by the broker.
struct multi_push {
  std::vector<std::string> queues;
  std::vector<std::vector<std::size_t>> items; ///< input indices per queue
  std::vector<std::vector<push_item>> parts;
  /// Per queue: its coordinator when it prepared, its batch and parts, and
  /// what it answers once the batch is durable.
  std::vector<queue_actor> actors;
  std::vector<submission> prepared;
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

/// Gives every prepared part up and answers the failure.
void fail(broker_ptr self, std::shared_ptr<multi_push> run) {
  for (auto& p : run->prepared)
    abort_parts(self, self->state.cfg.node.writer, std::move(p.parts));
  answer(run);
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
  for (std::size_t k = 0; k < run->queues.size(); ++k)
    if (!run->prepared[k].parts.empty()
        && !serving(self, run->queues[k], run->actors[k])) {
      run->failure = make_error(
          errc::unavailable, "queue ", run->queues[k],
          " restarted or was deleted during the push; nothing was stored, "
          "retry");
      return fail(self, run);
    }
  // One batch, with every queue's parts: the writer settles them (each
  // queue applies its part, also one deleted or restarted since) before
  // it answers. Only duplicates: an empty batch, answered once what they
  // read is durable.
  submission all;
  for (auto& p : run->prepared) {
    for (auto& m : p.batch.mutations)
      all.batch.mutations.push_back(std::move(m));
    for (auto& r : p.parts)
      all.parts.push_back(std::move(r));
  }
  propose_then(self, self->state.cfg.node.writer, std::move(all),
               [run](std::optional<api_error> failure) {
                 run->failure = std::move(failure);
                 answer(run);
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
        run->prepared.resize(slots.size());
        run->replies.resize(slots.size());
        for (std::size_t k = 0; k < slots.size(); ++k) {
          if (!slots[k].reply) {
            if (!run->failure)
              run->failure = unreachable(slots[k].error);
            continue;
          }
          auto& p = *slots[k].reply;
          if (p.failure && !run->failure)
            run->failure = p.failure;
          run->prepared[k] = std::move(p.part);
          run->replies[k].results = std::move(p.results);
          run->replies[k].targets = std::move(p.targets);
          run->replies[k].created_at = p.created_at;
        }
        if (run->failure)
          return fail(self, run);
        commit(self, run);
      });
}

caf::result<queue_push_reply> on_push(broker_ptr self,
                                      std::vector<broker_push_item>& items) {
  auto& st = self->state;
  if (items.empty())
    return queue_push_reply{};
  if (auto ok = core::check_push_size(
          st.cfg.push, items.size(),
          [&](std::size_t i) { return items[i].item.frame.payload.size(); });
      !ok)
    return push_failed(ok.err());
  // Everything is validated before a queue is created: a bad item leaves
  // no trace.
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& item = items[i];
    if (auto ok = core::check_push_item(i, &item.queue, item.item.partition,
                                        item.item.frame, st.cfg.node.frames);
        !ok)
      return push_failed(ok.err());
  }
  auto run = std::make_shared<multi_push>();
  run->rp = promise_for<queue_push_reply>(self);
  run->item_count = items.size();
  std::vector<std::string> names;
  for (auto& i : items)
    if (names.empty() || names.back() != i.queue)
      names.push_back(i.queue); // repeats left: wake dedupes namespaces
  run->stored = [self, names = std::move(names)] { wake(self, names); };
  run->learn = [self](const queue_push_reply& r) { learn_partitions(self, r); };
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
  return run->rp.later();
}

} // namespace spool::actors::broker_detail
