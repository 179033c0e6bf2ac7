// The broker's dead-letter queue: list (read directly, released once what
// it read is durable), delete and requeue (selected here, done by each
// queue, the one writer of its DLQ rows).

#include "actors/broker/broker_state.hpp"
#include "actors/durable.hpp"
#include "actors/promise.hpp"

namespace spool::actors::broker_detail {

namespace {

/// The oldest `dlq_max_batch` entries `f` selects (and the count of all),
/// from one short read transaction.
expected<core::dlq_selection>
select_dlq(broker_ptr self, const core::dlq_filter& f,
           std::optional<std::size_t> per_cursor = std::nullopt) {
  auto& node = self->state.cfg.node;
  auto t = node.store.read();
  if (!t)
    return std::move(t).err();
  return core::select_dlq(*t, f, node.wall(), core::dlq_max_batch, per_cursor);
}

} // namespace

caf::result<dlq_list_reply> on_dlq_list(broker_ptr self,
                                        const core::dlq_query& asked) {
  auto& node = self->state.cfg.node;
  auto q = asked;
  if (auto why = scope_dlq(self, q.filter))
    return failed<dlq_list_reply>(*why);
  auto t = node.store.read();
  if (!t)
    return failed<dlq_list_reply>(t.err());
  auto page = core::list_dlq(*t, q, node.wall());
  t->abort();
  if (!page)
    return failed<dlq_list_reply>(page.err());
  auto rp = promise_for<dlq_list_reply>(self);
  // Released once what it read is durable: its queue's slot, or every slot.
  std::vector<storage::slot_t> slots;
  if (q.filter.queue)
    slots.push_back(node.store.slot_of(*q.filter.queue));
  else
    slots = served_slots(self);
  after_durable(
      self, node, std::move(slots),
      [rp, page = std::move(*page)](std::optional<api_error> failure) mutable {
        rp.deliver(failure ? dlq_list_reply{{}, std::move(failure)}
                           : dlq_list_reply{std::move(page), std::nullopt});
      });
  return rp.later();
}

/// Sends each queue its part of a DLQ selection (`send` makes one request)
/// and answers the sum. A failure in one queue leaves the others' done (a
/// retry acts on the rest); `left`, what the selection did not take, is
/// added to `remaining` unless something failed.
template <class Part, class Send>
void ask_queues(broker_ptr self, std::vector<std::pair<queue_actor, Part>> asks,
                std::size_t left, promise<dlq_count_reply> rp, Send send) {
  if (asks.empty()) {
    rp.deliver(dlq_count_reply{0, std::nullopt, left});
    return;
  }
  auto n = asks.size();
  gather<dlq_count_reply>(
      n,
      [self, asks = std::move(asks), send](std::size_t i) mutable {
        return send(self, asks[i].first, std::move(asks[i].second));
      },
      [rp, left](std::vector<fanned<dlq_count_reply>> slots) mutable {
        auto total = total_of(slots);
        if (total.failure)
          total.remaining = 0;
        else
          total.remaining += left;
        rp.deliver(std::move(total));
      });
}

caf::result<dlq_count_reply> on_dlq_delete(broker_ptr self,
                                           const core::dlq_filter& asked) {
  auto f = asked;
  if (auto why = scope_dlq(self, f))
    return failed<dlq_count_reply>(*why);
  auto selected = select_dlq(self, f);
  if (!selected)
    return failed<dlq_count_reply>(selected.err());
  auto& items = selected->items;
  // Each queue deletes its own rows (the one writer of its DLQ), in one
  // write per queue: a failure in one queue leaves the others' deletions
  // done (retry deletes the rest). Rows of a queue no longer live (deleted,
  // being reaped) are left to the reaping.
  std::map<std::string, dlq_delete_request> per_queue;
  for (auto& x : items) {
    auto& req = per_queue[x.queue];
    req.queue_id = x.queue_id;
    req.entries.emplace_back(x.group, x.entry.id);
  }
  std::vector<std::pair<queue_actor, dlq_delete_request>> asks;
  for (auto& [name, req] : per_queue)
    if (auto it = self->state.queues.find(name); it != self->state.queues.end())
      asks.emplace_back(it->second, std::move(req));
  auto rp = promise_for<dlq_count_reply>(self);
  ask_queues(self, std::move(asks), selected->total - items.size(), rp,
             [](broker_ptr self, const queue_actor& q, dlq_delete_request r) {
               return self->request(q, caf::infinite, delete_atom::value,
                                    std::move(r));
             });
  return rp.later();
}

caf::result<dlq_count_reply> on_requeue(broker_ptr self,
                                        const core::dlq_filter& asked) {
  auto f = asked;
  if (auto why = scope_dlq(self, f))
    return failed<dlq_count_reply>(*why);
  // Entries pending already are left out, and each cursor gets at most its
  // free places: one full cursor does not hold the others back.
  auto selected = select_dlq(self, f, core::cursor_core::max_requeued);
  if (!selected)
    return failed<dlq_count_reply>(selected.err());
  auto& items = selected->items;
  auto remaining = selected->total - items.size();
  // By (queue, group), oldest first: requeue order is delivery order.
  std::map<std::pair<std::string, std::string>, std::vector<storage::dlq_entry>>
      parts;
  for (auto it = items.rbegin(); it != items.rend(); ++it)
    parts[{it->queue, it->group}].push_back(std::move(it->entry));
  for (auto& [key, _] : parts)
    if (!self->state.queues.contains(key.first))
      return failed<dlq_count_reply>(
          make_error(errc::not_found, "Queue not found: ", key.first));
  // A selection left empty by full cursors answers what it left.
  using part = std::pair<std::string, std::vector<storage::dlq_entry>>;
  std::vector<std::pair<queue_actor, part>> asks;
  for (auto& [key, entries] : parts)
    asks.push_back(
        {self->state.queues.at(key.first), {key.second, std::move(entries)}});
  auto rp = promise_for<dlq_count_reply>(self);
  ask_queues(self, std::move(asks), remaining, rp,
             [](broker_ptr self, const queue_actor& q, part p) {
               return self->request(q, caf::infinite, requeue_atom::value,
                                    std::move(p.first), std::move(p.second));
             });
  return rp.later();
}

} // namespace spool::actors::broker_detail
