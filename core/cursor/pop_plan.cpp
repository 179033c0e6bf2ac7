#include "core/cursor/pop_plan.hpp"

#include <algorithm>
#include <iterator>
#include <span>

namespace spool::core {

namespace {

/// The lease's frames by transaction id, for acks that name them so.
void note_txids(cursor_core& core, const pop_reply& reply) {
  std::vector<std::uint64_t> hashes;
  hashes.reserve(reply.messages.size());
  for (auto& m : reply.messages)
    hashes.push_back(cursor_core::txid_hash(m.frame.data.transaction_id));
  core.note_lease_txids(std::move(hashes));
}

} // namespace

storage::stored_frame* find_frame(frame_list& frames, storage::offset off) {
  // Reads return runs of offsets: try the dense position first.
  if (!frames.empty()) {
    auto guess = off - frames.front().off;
    if (guess >= 0 && static_cast<std::size_t>(guess) < frames.size()
        && frames[static_cast<std::size_t>(guess)].off == off)
      return &frames[static_cast<std::size_t>(guess)];
  }
  auto it = std::lower_bound(frames.begin(), frames.end(), off,
                             [](const storage::stored_frame& f,
                                storage::offset o) { return f.off < o; });
  return it != frames.end() && it->off == off ? &*it : nullptr;
}

pop_outcome plan_pop(cursor_core& core, const pop_request& req,
                     const partition_view& view, pop_inputs in) {
  auto now = in.now;
  core.note_watermark(view.watermark);
  pop_outcome out;
  auto expired = in.expired;
  auto& dead = in.dead;
  // The first contact's seed row is written by this pop, whatever it
  // delivers (a restart must not seed the partition again).
  if (in.needs_seed)
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
  while (auto* p = std::get_if<delivery_plan>(&planned)) {
    if (!p->requeued)
      break;
    auto loaded = in.load_entry(*p->requeued);
    if (!loaded) {
      out.reply.failure = loaded.err();
      return finish(expired);
    }
    requeued = std::move(*loaded);
    if (requeued || !core.drop_requeued(*p->requeued))
      break;
    expired = true; // the record changed
    planned = core.plan(now, view.watermark, view.readable_end - 1, req.batch);
  }
  if (auto* p = std::get_if<delivery_plan>(&planned); p && p->requeued) {
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
        out.changes.done = auto_ack(core, *granted.lease, {&off, 1},
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
  auto& plan = std::get<delivery_plan>(planned);
  // Only the frames to deliver count against the byte cap; the frames of
  // maxDeliveries dead letters are read by the writer of the outcome.
  // Decoded only up to the byte cap: frames past it end the delivered run
  // as missing ones do.
  auto frames = in.load(plan.deliver, req.max_bytes);
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
  auto cut = cut_delivery(stamps, sizes, view.newest_created_at, in.wall,
                          in.visibility, req.max_bytes);
  auto n = cut.count;
  if (n == 0 && plan.dead.empty()) {
    out.reply.reason = cut.held_back.value_or(empty_reason::empty);
    if (cut.next_change)
      out.reply.retry_at = mono_of(*cut.next_change, in.wall, now);
    return finish(expired);
  }
  auto granted = core.grant(plan, n, req.lease_id, now);
  dead.insert(dead.end(), granted.dead.begin(), granted.dead.end());
  auto& reply = out.reply;
  reply.skipped = plan.skipped;
  // Delivered frames move into the reply; dead letters are never among
  // them (a dead frame is done, a delivered one is not), so `frames` still
  // holds every dead letter the write needs.
  reply.messages.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    reply.messages[i].frame = std::move(*at[i]);
    reply.messages[i].delivery_count = granted.delivery_counts[i].second;
  }
  if (req.auto_ack && granted.lease) {
    (void)auto_ack(core, *granted.lease,
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

} // namespace spool::core
