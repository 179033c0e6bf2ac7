// A cursor's stages: a transaction's acks and a seek held until settled; a
// lease lost to a restart.

#include "actors/cursor/cursor_state.hpp"

namespace spool::actors::cursor_detail {

// -- transactions -------------------------------------------------------------

stage_reply on_stage(cursor_ptr self, const std::vector<ack_request>& reqs,
                     const partition_view& view) {
  auto& st = self->state;
  stage_reply reply;
  st.core->note_watermark(view.watermark);
  auto staged = core::stage_acks(*st.core, reqs, view.readable_end - 1,
                                 self->clock().now());
  if (auto* refused = std::get_if<core::stage_refusal>(&staged)) {
    reply.refused = std::move(*refused);
    return reply;
  }
  auto& acks = std::get<core::staged_acks>(staged);
  acks.after.touch(st.cfg.wall());
  for (auto& out : acks.outcomes)
    reply.replies.push_back(ack_reply{
        out.error, out.lease_released, out.dead.has_value(), std::nullopt, {}});
  if (!acks.changed)
    return reply; // idempotent acks only: nothing to hold or write
  dlq_changes changes;
  changes.dead = acks.dead;
  for (auto& out : acks.outcomes)
    if (out.requeue_done)
      changes.done.push_back(*out.requeue_done);
  auto frames = with_dead_frames(st.cfg, acks.dead, {});
  if (!frames) {
    reply.failure = frames.err();
    return reply;
  }
  std::vector<storage::micros> written;
  reply.batch = state_batch(st.cfg, acks.after, changes, *frames, written);
  reply.parts.push_back(hold_part(self, core::part_key::stage_part));
  st.staged.emplace(
      cursor_state::staged_txn{std::move(acks), std::move(written)});
  return reply;
}

/// Stages a seek on a copy of the core, held like a transaction's acks
/// until the queue settles it; a dry run only answers the positions.
seek_stage on_seek(cursor_ptr self, const cursor_seek& req,
                   const partition_view& view) {
  auto& st = self->state;
  seek_stage reply;
  auto rule = core::seek_rule_of(req.target);
  if (!rule) {
    reply.failure = rule.err();
    return reply;
  }
  // Staged without copying the core: the settle applies the same seek.
  auto wall = st.cfg.wall();
  auto plan = core::plan_seek(*st.core, *rule, req.target, view.watermark,
                              view.readable_end - 1, req.walked, wall);
  reply.before = plan.before;
  reply.after = plan.after;
  if (req.dry_run)
    return reply;
  reply.record = storage::mut::put_cursor{st.cfg.queue, st.cfg.partition,
                                          st.cfg.group, std::move(plan.record)};
  reply.parts.push_back(hold_part(self, core::part_key::seek_part));
  st.staged.emplace(
      cursor_state::staged_txn{std::nullopt, {}, reply.after, wall});
  return reply;
}

api_error being_deleted() {
  return make_error(errc::invalid_argument, "Consumer group is being deleted");
}

/// A lease recorded before a restart ends as an expiry would.
/// If its write fails, it is retried by the timer (or the next pop).
void recover_lost(cursor_ptr self) {
  self->state.lost_pending = true;
  auto before = snapshot(self);
  auto [changed, dead] = end_due(self, self->clock().now());
  if (changed)
    commit(self, std::move(before), dlq_changes{std::move(dead), {}, {}}, {},
           [](std::optional<api_error>) {});
}

part_ref hold_part(cursor_ptr self, std::int64_t kind) {
  auto& cfg = self->state.cfg;
  return hold_part(self, cfg.writer,
                   {cfg.queue.value, cfg.partition.value, cfg.group, kind});
}

void on_settled(cursor_ptr self, core::part_outcome outcome) {
  auto& st = self->state;
  if (!st.staged)
    return;
  // One of unknown outcome is undone here, as a failed one (its row, if
  // stored, is read by the next incarnation).
  bool commit = outcome == core::part_outcome::durable;
  if (st.staged->claim) { // a pop's lease, written with a push
    if (commit) {
      st.row_written = true;
      st.backoff_until.reset();
    } else {
      restore(self, *st.before);
    }
    st.before.reset();
    st.staged.reset();
    arm(self);
    return;
  }
  if (commit)
    st.row_written = true;          // the seek's or transaction's batch held it
  if (commit && !st.staged->acks) { // a seek
    st.core->seek(st.staged->seek_to);
    st.core->touch(st.staged->seek_wall);
  } else if (!commit && st.staged->lost) {
    st.staged.reset();
    recover_lost(self);
  } else if (commit) {
    *st.core = std::move(st.staged->acks->after);
    tell_dead(self, st.staged->written);
  }
  st.staged.reset();
  arm(self);
}

} // namespace spool::actors::cursor_detail
