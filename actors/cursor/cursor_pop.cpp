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

/// What a pop found and changed in the core, not written yet.
struct pop_outcome {
  pop_reply reply;
  /// The core changed (a lease, an autoAck commit, an expiry, the seed
  /// row): the change must be written before the answer.
  bool write = false;
  dlq_changes changes;
  /// The frames read that the write may need (dead letters).
  frame_list frames;
  /// Delivered from a DLQ entry (a requeue).
  bool requeued = false;
};

/// Reads the frames of `offs` (ascending), decoding up to `max_bytes`.
using frame_source = std::function<expected<frame_list>(
    const std::vector<storage::offset>&, std::size_t)>;

/// A pop's plan, read, cut (byte cap, visibility) and grant or autoAck on
/// the core, up to the view's readable end, reading frames from `load`.
pop_outcome plan_pop(cursor_ptr self, const pop_request& req,
                     const partition_view& view, const frame_source& load) {
  auto& st = self->state;
  auto& core = *st.core;
  auto now = self->clock().now();
  auto wall = st.cfg.wall();
  core.note_watermark(view.watermark);
  pop_outcome out;
  auto [expired, dead] = end_due(self, now);
  // The first contact's seed row is written by this pop, whatever it
  // delivers (a restart must not seed the partition again).
  if (st.needs_seed())
    expired = true;
  auto finish = [&](bool write) -> pop_outcome {
    out.write = write;
    out.changes.dead.insert(out.changes.dead.end(),
                            std::make_move_iterator(dead.begin()),
                            std::make_move_iterator(dead.end()));
    return std::move(out);
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
    out.requeued = true;
    auto id = *p->requeued;
    auto granted = core.grant(*p, requeued ? 1 : 0, req.lease_id, now);
    dead.insert(dead.end(), granted.dead.begin(), granted.dead.end());
    if (granted.lease && requeued) {
      delivered_frame m;
      m.frame = std::move(requeued->message);
      m.delivery_count = granted.delivery_counts.front().second;
      m.requeued = id;
      out.reply.messages.push_back(std::move(m));
      if (req.auto_ack) {
        storage::offset off = granted.lease->range.first;
        out.changes.done = core::auto_ack(core, *granted.lease, {&off, 1},
                                          view.readable_end - 1, now);
      } else {
        out.reply.lease = granted.lease;
        note_txids(core, out.reply);
      }
    }
    return finish(true);
  }
  if (auto* reason = std::get_if<empty_reason>(&planned)) {
    out.reply.reason = *reason;
    if (*reason != empty_reason::empty)
      out.reply.retry_at = core.next_deadline(); // lease expiry or retry delay
    else
      out.reply.empty_at = view.readable_end - 1;
    return finish(expired);
  }
  auto& plan = std::get<core::delivery_plan>(planned);
  // Only the frames to deliver count against the byte cap; the frames of
  // maxDeliveries dead letters are read by `persist` when it writes them.
  // Decoded only up to the byte cap: frames past it end the delivered run
  // as missing ones do (a dead letter past it is read by `persist`).
  auto frames = load(plan.deliver, req.max_bytes);
  if (!frames) {
    out.reply.failure = frames.err();
    return finish(expired);
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
    out.reply.reason = cut.held_back.value_or(empty_reason::empty);
    if (cut.next_change)
      out.reply.retry_at = mono_of(*cut.next_change, wall, now);
    return finish(expired);
  }
  auto granted = core.grant(plan, n, req.lease_id, now);
  dead.insert(dead.end(), granted.dead.begin(), granted.dead.end());
  auto& reply = out.reply;
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
  out.frames = std::move(*frames);
  return finish(true);
}

} // namespace

caf::typed_response_promise<pop_reply> on_pop(cursor_ptr self, pop_request& req,
                                              const partition_view& view) {
  auto& st = self->state;
  auto rp = promise_for<pop_reply>(self);
  auto before = snapshot(self);
  auto out = plan_pop(
      self, req, view,
      [&](const std::vector<storage::offset>& offs, std::size_t max_bytes) {
        return load_frames(st.cfg, offs, max_bytes);
      });
  arm(self);
  if (!out.write) {
    rp.deliver(std::move(out.reply));
    return rp.later();
  }
  // Nothing of the pop (its lease, its autoAck commit, the expiry it made)
  // stays if its write fails.
  commit(self, std::move(before), std::move(out.changes), std::move(out.frames),
         [rp, reply = std::move(out.reply)](
             std::optional<api_error> failure) mutable {
           if (failure) {
             reply = pop_reply{};
             reply.failure = std::move(failure);
           }
           rp.deliver(std::move(reply));
         });
  return rp.later();
}

claim_reply on_claim(cursor_ptr self, const pop_request& req,
                     const partition_view& view,
                     std::vector<storage::stored_frame>& sealed) {
  auto& st = self->state;
  claim_reply out;
  if (st.busy() || st.deleting || sealed.empty())
    return out;
  auto first = sealed.front().off;
  auto before = snapshot(self);
  st.core->touch(st.cfg.wall());
  // Frames below the seal are stored; the seal's are in memory (moved out:
  // a claim reads each once).
  auto pop
      = plan_pop(self, req, view,
                 [&](const std::vector<storage::offset>& offs,
                     std::size_t max_bytes) -> expected<frame_list> {
                   auto split
                       = std::lower_bound(offs.begin(), offs.end(), first);
                   std::vector<storage::offset> stored(offs.begin(), split);
                   auto frames = load_frames(st.cfg, stored, max_bytes);
                   if (!frames)
                     return frames;
                   for (auto it = split; it != offs.end(); ++it)
                     if (auto* f = find_frame(sealed, *it))
                       frames->push_back(std::move(*f));
                   return frames;
                 });
  // Only a lease and delivery counts (or an autoAck commit) ride on the
  // push; anything else (nothing found, a requeue, dead letters, a read
  // failure) is left to the pop's own run after the push.
  if (pop.reply.messages.empty() || pop.requeued || pop.reply.failure
      || !pop.changes.dead.empty() || !pop.changes.done.empty()) {
    restore(self, before);
    return out;
  }
  std::vector<storage::micros> written;
  out.batch = state_batch(st.cfg, *st.core, pop.changes, pop.frames, written);
  out.reply = std::move(pop.reply);
  out.stage_id = next_stage_id();
  st.before.emplace(std::move(before));
  cursor_state::staged_txn staged{out.stage_id, std::nullopt, {}};
  staged.claim = true;
  st.staged.emplace(std::move(staged));
  arm(self);
  return out;
}

} // namespace spool::actors::cursor_detail
