// A cursor's pop: plan, read, cut (byte cap, visibility), grant or autoAck,
// write, answer.

#include "actors/cursor/cursor_state.hpp"

namespace spool::actors::cursor_detail {

namespace {

/// The lease's frames by transaction id, for acks that name them so.
void note_txids(core::cursor_core& core, const pop_reply& reply) {
  std::vector<std::uint64_t> hashes;
  hashes.reserve(reply.messages.size());
  for (auto& m : reply.messages)
    hashes.push_back(core::cursor_core::txid_hash(m.frame.data.transaction_id));
  core.note_lease_txids(std::move(hashes));
}

} // namespace

caf::typed_response_promise<pop_reply> on_pop(cursor_ptr self, pop_request& req,
                                              const partition_view& view) {
  auto& st = self->state;
  auto& core = *st.core;
  auto rp = promise_for<pop_reply>(self);
  auto now = self->clock().now();
  auto wall = st.cfg.wall();
  core.note_watermark(view.watermark);
  auto before = snapshot(self);
  auto [expired, dead] = end_due(self, now);
  // The first contact's seed row is written by this pop, whatever it
  // delivers (a restart must not seed the partition again).
  if (st.needs_seed())
    expired = true;
  auto answer = [self, rp, before = std::move(before)](
                    pop_reply reply, bool write,
                    std::vector<core::dead_letter> dead, frame_list frames,
                    std::vector<std::uint64_t> done = {}) mutable {
    if (!write) {
      rp.deliver(std::move(reply));
      return;
    }
    // Nothing of the pop (its lease, its autoAck commit, the expiry
    // it made) stays if its write fails.
    commit(self, std::move(before),
           dlq_changes{std::move(dead), std::move(done), {}}, std::move(frames),
           [rp, reply
                = std::move(reply)](std::optional<api_error> failure) mutable {
             if (failure) {
               reply = pop_reply{};
               reply.failure = std::move(failure);
             }
             rp.deliver(std::move(reply));
           });
  };
  auto planned
      = core.plan(now, view.watermark, view.readable_end - 1, req.batch);
  // A requeued entry is delivered from its DLQ entry (its segment may be
  // gone); one deleted or expired meanwhile is forgotten.
  std::optional<storage::dlq_entry> requeued;
  while (auto* p = std::get_if<core::delivery_plan>(&planned)) {
    if (!p->requeued)
      break;
    requeued = load_entry(st.cfg, *p->requeued);
    if (requeued || !core.drop_requeued(*p->requeued))
      break;
    expired = true; // the record changed
    planned = core.plan(now, view.watermark, view.readable_end - 1, req.batch);
  }
  if (auto* p = std::get_if<core::delivery_plan>(&planned); p && p->requeued) {
    auto id = *p->requeued;
    auto granted = core.grant(*p, requeued ? 1 : 0, req.lease_id, now);
    dead.insert(dead.end(), granted.dead.begin(), granted.dead.end());
    pop_reply reply;
    std::vector<std::uint64_t> done;
    if (granted.lease && requeued) {
      delivered_frame m;
      m.frame = std::move(requeued->message);
      m.delivery_count = granted.delivery_counts.front().second;
      m.requeued = id;
      reply.messages.push_back(std::move(m));
      if (req.auto_ack) {
        storage::offset off = granted.lease->range.first;
        done = core::auto_ack(core, *granted.lease, {&off, 1},
                              view.readable_end - 1, now);
      } else {
        reply.lease = granted.lease;
        note_txids(core, reply);
      }
    }
    answer(std::move(reply), true, std::move(dead), {}, std::move(done));
    arm(self);
    return rp.later();
  }
  if (auto* reason = std::get_if<empty_reason>(&planned)) {
    pop_reply reply;
    reply.reason = *reason;
    if (*reason != empty_reason::empty)
      reply.retry_at = core.next_deadline(); // lease expiry or retry delay
    else
      reply.empty_at = view.readable_end - 1;
    answer(std::move(reply), expired, std::move(dead), {});
    arm(self);
    return rp.later();
  }
  auto& plan = std::get<core::delivery_plan>(planned);
  // Only the frames to deliver count against the byte cap; the frames of
  // maxDeliveries dead letters are read by `persist` when it writes them.
  const std::vector<storage::offset>& wanted = plan.deliver;
  // Decoded only up to the byte cap: frames past it end the delivered run
  // as missing ones do (a dead letter past it is read by `persist`).
  auto frames = load_frames(st.cfg, wanted, req.max_bytes);
  if (!frames) {
    pop_reply reply;
    reply.failure = frames.err();
    answer(std::move(reply), expired, std::move(dead), {});
    return rp.later();
  }
  // Frames missing from the read (deleted meanwhile) end the deliverable run.
  // `at[i]` is the frame of plan.deliver[i].
  std::vector<storage::stored_frame*> at;
  at.reserve(plan.deliver.size());
  std::vector<storage::micros> stamps;
  std::vector<std::size_t> sizes;
  stamps.reserve(plan.deliver.size());
  sizes.reserve(plan.deliver.size());
  for (auto off : plan.deliver) {
    auto* f = find_frame(*frames, off);
    if (f == nullptr)
      break;
    at.push_back(f);
    stamps.push_back(f->created_at);
    sizes.push_back(f->data.payload.size());
  }
  auto cut = core::cut_delivery(stamps, sizes, view.newest_created_at, wall,
                                st.cfg.visibility, req.max_bytes);
  auto n = cut.count;
  if (n == 0 && plan.dead.empty()) {
    pop_reply reply;
    reply.reason = cut.held_back.value_or(empty_reason::empty);
    if (cut.next_change)
      reply.retry_at = mono_of(*cut.next_change, wall, now);
    answer(std::move(reply), expired, std::move(dead), {});
    arm(self);
    return rp.later();
  }
  auto granted = core.grant(plan, n, req.lease_id, now);
  dead.insert(dead.end(), granted.dead.begin(), granted.dead.end());
  pop_reply reply;
  reply.skipped = plan.skipped;
  if (plan.skipped && st.cfg.metrics)
    st.cfg.metrics->retention_skipped += static_cast<std::uint64_t>(
        plan.skipped->last - plan.skipped->first + 1);
  // Delivered frames move into the reply; dead letters are never among
  // them (a dead frame is done, a delivered one is not), so `frames` still
  // holds every dead letter the write needs.
  reply.messages.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    reply.messages[i].frame = std::move(*at[i]);
    reply.messages[i].delivery_count = granted.delivery_counts[i].second;
  }
  if (req.auto_ack && granted.lease) {
    (void)core::auto_ack(
        core, *granted.lease,
        std::span<const storage::offset>{plan.deliver}.first(n),
        view.readable_end - 1, now);
  } else {
    reply.lease = granted.lease;
    note_txids(core, reply);
  }
  if (reply.messages.empty())
    reply.reason = empty_reason::empty;
  answer(std::move(reply), true, std::move(dead), std::move(*frames));
  arm(self);
  return rp.later();
}

} // namespace spool::actors::cursor_detail
