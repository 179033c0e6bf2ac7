// The broker's pushes: queues created on first push, a push spanning queues
// prepared by each queue and committed as one batch.

#include "actors/broker/broker_state.hpp"

namespace spool::actors::broker_detail {

bool serving(broker_ptr self, const std::string& name, const queue_actor& q) {
  auto& st = self->state;
  auto now = st.queues.find(name);
  return now != st.queues.end() && now->second == q
         && !st.restarting.contains(q.address());
}

void seal_queues(broker_ptr self, std::shared_ptr<queue_seals> s,
                 std::function<std::vector<push_item>(std::size_t)> items_of,
                 std::function<void()> done) {
  auto n = s->queues.size();
  s->by.resize(n);
  s->parts.resize(n);
  s->results.resize(n);
  // Seals at most `gather_window` queues at a time (a push to thousands of
  // queues stays linear). A queue gone since `ensure_queues` (a restart
  // found it deleted) seals nothing.
  auto live = std::make_shared<std::vector<std::size_t>>();
  for (std::size_t k = 0; k < n; ++k)
    if (auto q = find_queue(self, s->queues[k])) {
      s->by[k] = *q;
      live->push_back(k);
    } else {
      s->failure
          = make_error(errc::not_found, "queue ", s->queues[k], " vanished");
    }
  gather<prepared_push>(
      live->size(),
      [self, s, live, items_of = std::move(items_of)](std::size_t i) {
        auto k = (*live)[i];
        return self->request(s->by[k], caf::infinite, seal_atom::value,
                             items_of(k));
      },
      [s, live,
       done = std::move(done)](std::vector<fanned<prepared_push>> slots) {
        for (std::size_t i = 0; i < slots.size(); ++i) {
          auto k = (*live)[i];
          if (!slots[i].reply) {
            if (!s->failure)
              s->failure = unreachable(slots[i].error);
            continue;
          }
          auto& p = *slots[i].reply;
          if (p.failure && p.failure->code == errc::queue_full && !s->full)
            s->full.emplace(k, p.failure->message);
          if (p.failure && !s->failure)
            s->failure = p.failure;
          s->parts[k] = std::move(p.part);
          s->results[k].results = std::move(p.results);
          s->results[k].targets = std::move(p.targets);
          s->results[k].created_at = p.created_at;
        }
        done();
      });
}

std::optional<api_error> take_seals(broker_ptr self, queue_seals& s,
                                    submission& into, const char* what) {
  // A queue that died after its seal may be respawned already from what is
  // stored: writing its old seal now would put a segment behind its new
  // partitions' backs. Nothing is stored yet, so "failed" is the truth.
  for (std::size_t k = 0; k < s.queues.size(); ++k)
    if (!s.parts[k].parts.empty() && !serving(self, s.queues[k], s.by[k]))
      return make_error(errc::unavailable, "queue ", s.queues[k],
                        " restarted or was deleted during the ", what,
                        "; nothing was stored, retry");
  // The writer settles the parts (each queue applies its seal, also one
  // deleted or restarted since) before it answers.
  for (auto& p : s.parts)
    for (auto& m : p.batch.mutations)
      into.batch.mutations.push_back(std::move(m));
  for (auto& p : s.parts)
    for (auto& r : std::exchange(p.parts, {}))
      into.parts.push_back(std::move(r));
  return std::nullopt;
}

void drop_seals(broker_ptr self, queue_seals& s) {
  for (auto& p : s.parts)
    abort_parts(self, self->state.cfg.node.writer, std::exchange(p.parts, {}));
}

namespace {

/// A push spanning queues, gathered by the broker.
struct multi_push {
  queue_seals seals;
  std::vector<std::vector<std::size_t>> items; ///< input indices per queue
  std::vector<std::vector<push_item>> parts;
  std::size_t item_count = 0;
  promise<queue_push_reply> rp;
};

void answer(broker_ptr self, multi_push& run,
            std::optional<api_error> failure) {
  if (failure) {
    drop_seals(self, run.seals);
    run.rp.deliver(push_failed(failure));
    return;
  }
  queue_push_reply reply;
  reply.results.resize(run.item_count);
  for (std::size_t k = 0; k < run.items.size(); ++k) {
    auto& part = run.seals.results[k];
    reply.created_at = std::max(reply.created_at, part.created_at);
    auto base = static_cast<std::uint32_t>(reply.targets.size());
    for (auto& t : part.targets)
      reply.targets.push_back(std::move(t));
    for (std::size_t j = 0; j < run.items[k].size(); ++j) {
      auto r = part.results[j];
      r.target += base;
      reply.results[run.items[k][j]] = r;
    }
  }
  run.rp.deliver(std::move(reply));
  wake(self, run.seals.queues); // parked namespace pops it may serve
}

/// Every queue seals its part, then ONE batch with every seal is written
/// (only duplicates: an empty batch, answered once what they read is
/// durable).
void push_all(broker_ptr self, std::shared_ptr<multi_push> run) {
  auto& queues = run->seals.queues;
  if (queues.size() == 1) { // one queue commits its own batch and answers
    // itself (it tells the broker of new partitions and of a stored push
    // first); it exists now, after `ensure_queues`
    run->rp.delegate(self->state.queues.at(queues[0]), push_atom::value,
                     std::move(run->parts[0]));
    return;
  }
  seal_queues(
      self, {run, &run->seals},
      [run](std::size_t k) { return std::move(run->parts[k]); },
      [self, run] {
        if (run->seals.failure)
          return answer(self, *run, run->seals.failure);
        submission all;
        if (auto stale = take_seals(self, run->seals, all, "push"))
          return answer(self, *run, stale);
        // The queues' seals were checked current (`take_seals`): the term
        // of their slot now is theirs.
        auto term = slot_term(
            self, self->state.cfg.node.store.slot_of(run->seals.queues[0]));
        propose_then(self, self->state.cfg.node.writer, term, std::move(all),
                     [self, run](std::optional<api_error> failure) {
                       answer(self, *run, std::move(failure));
                     });
      });
}

} // namespace

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
  if (st.cfg.slots) { // a cluster commits one slot at a time
    std::vector<std::string> names;
    for (auto& item : items)
      if (names.empty() || names.back() != item.queue)
        names.push_back(item.queue);
    if (auto why = one_slot(self, names))
      return push_failed(*why);
  }
  auto run = std::make_shared<multi_push>();
  run->rp = promise_for<queue_push_reply>(self);
  run->item_count = items.size();
  auto groups = core::group_by_name(
      items.size(),
      [&](std::size_t i) -> const std::string& { return items[i].queue; });
  run->parts
      = core::distribute<push_item>(groups, [&](std::size_t i) -> push_item&& {
          return std::move(items[i].item);
        });
  run->seals.queues = std::move(groups.names);
  run->items = std::move(groups.items);
  ensure_queues(self, run->seals.queues,
                [self, run](std::optional<api_error> failure) {
                  if (failure)
                    run->rp.deliver(push_failed(failure));
                  else
                    push_all(self, run);
                });
  return run->rp.later();
}

} // namespace spool::actors::broker_detail
