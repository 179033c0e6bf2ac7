// A cursor's acks, lease expiry, requeues and introspection.

#include "actors/cursor/cursor_state.hpp"

namespace spool::actors::cursor_detail {

caf::result<std::vector<ack_reply>> on_ack(cursor_ptr self,
                                           std::vector<ack_request>& reqs,
                                           const partition_view& view) {
  auto& st = self->state;
  auto now = self->clock().now();
  std::vector<ack_reply> replies;
  dlq_changes changes;
  bool changed = false;
  std::uint64_t settled = 0;
  replies.reserve(reqs.size());
  st.core->note_watermark(view.watermark);
  auto before = snapshot(self);
  // The live lease's id, copied once: an ack that ends it names it in its
  // reply (acks only end a lease, never grant one, so it is the same lease
  // all through the list).
  std::string lease_id;
  if (auto& live = st.core->lease())
    lease_id = live->id;
  for (auto& req : reqs) {
    auto out = st.core->ack(req, view.readable_end - 1, now);
    changed = changed || out.changed;
    settled += out.settled;
    if (out.dead)
      changes.dead.push_back(*out.dead);
    if (out.requeue_done)
      changes.done.push_back(*out.requeue_done);
    auto& reply = replies.emplace_back(); // filled in place: a list of
    reply.error = out.error;              // n acks moves no reply
    reply.lease_released = out.lease_released;
    reply.dead_lettered = out.dead.has_value();
    if (out.lease_released)
      reply.released_lease = lease_id;
  }
  // A lease that ended has its overdue frames judged now.
  if (judge_overdue(self, changes.dead))
    changed = true;
  if (!changed)
    return replies;
  auto rp = promise_for<std::vector<ack_reply>>(self);
  // One write for the whole list; every changed item waits for it, and
  // none of them stays if it fails.
  commit(self, std::move(before), std::move(changes), {},
         [rp, replies = std::move(replies), settled,
          metrics = st.cfg.metrics](std::optional<api_error> failure) mutable {
           if (failure) // nothing of the list happened
             for (auto& r : replies) {
               r.failure = failure;
               r.lease_released = false;
               r.dead_lettered = false;
             }
           else if (metrics)
             metrics->messages_acked += settled;
           rp.deliver(std::move(replies));
         });
  return rp.later();
}

void on_expire(cursor_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (!st.timer.fire(id))
    return; // superseded by an earlier deadline
  auto now = self->clock().now();
  if (st.backoff_until && now < *st.backoff_until) {
    arm(self); // a failed write is retried at the backoff
    return;
  }
  auto before = snapshot(self);
  auto [changed, dead] = end_due(self, now);
  // A failed write is undone and retried after `write_retry` (commit).
  if (changed)
    commit(self, std::move(before), dlq_changes{std::move(dead), {}, {}}, {},
           [](std::optional<api_error>) {});
  else
    arm(self);
}

/// Requeues entries of this partition; pending ones count as requeued
/// (idempotent), so a partial failure can be retried.
caf::result<dlq_count_reply>
on_requeue(cursor_ptr self, const std::vector<storage::dlq_entry>& entries) {
  auto& st = self->state;
  dlq_changes changes;
  std::size_t count = 0;
  std::size_t full = 0; // left in the DLQ: max_requeued are pending
  auto before = snapshot(self);
  using result = core::cursor_core::requeue_result;
  for (auto& e : entries) {
    if (e.partition != st.cfg.partition)
      continue;
    switch (st.core->requeue(e.id, e.message.off)) {
    case result::added:
      changes.marked.push_back(e.id);
      ++count;
      break;
    case result::pending:
      ++count;
      break;
    case result::full:
      ++full;
    }
  }
  if (changes.marked.empty())
    return dlq_count_reply{count, std::nullopt, full};
  auto rp = promise_for<dlq_count_reply>(self);
  commit(self, std::move(before), std::move(changes), {},
         [rp, count, full](std::optional<api_error> failure) mutable {
           if (failure)
             rp.deliver(dlq_count_reply{0, std::move(failure), 0});
           else
             rp.deliver(dlq_count_reply{count, std::nullopt, full});
         });
  return rp.later();
}

/// What introspection shows of this cursor.
cursor_info describe(cursor_ptr self, const partition_view& view) {
  auto& st = self->state;
  auto& core = *st.core;
  cursor_info info;
  info.group = st.cfg.group;
  info.committed = core.committed();
  info.last_offset = view.readable_end - 1;
  info.watermark = view.watermark;
  auto [consumed, lag]
      = core::lag_of(info.committed, view.watermark, info.last_offset);
  info.lag = lag;
  if (info.lag > 0) {
    // The oldest frame not committed: its segment's one commit time.
    if (auto t = st.cfg.store.read()) {
      auto r = storage::read_frames(*t, st.cfg.queue, st.cfg.partition,
                                    consumed + 1, 1);
      if (r && !r->frames.empty())
        info.oldest_unconsumed_at = r->frames.front().created_at;
    }
  }
  auto now = self->clock().now();
  if (auto lease = core.live_lease(now)) {
    info.lease_expires_at = wall_of(lease->expires, now, st.cfg.wall());
    info.lease = std::move(lease);
  }
  info.isolated = core.isolated();
  info.redeliveries = core.redeliveries();
  info.done_above = core.done_above(view.watermark);
  info.in_flight = core.in_flight(now, view.watermark);
  info.last_activity = core.last_activity();
  return info;
}

} // namespace spool::actors::cursor_detail
