// A cursor's pop: the rule (`core::plan_pop`: plan, read, cut, grant or
// autoAck) with this cursor's reads, then the write, then the answer.

#include "actors/cursor/cursor_state.hpp"

namespace spool::actors::cursor_detail {

namespace {

/// The pop rule (`core::plan_pop`) with this cursor's clock, expiries and
/// reads; counts the offsets a pop skipped below the watermark.
core::pop_outcome
plan_pop(cursor_ptr self, const pop_request& req, const partition_view& view,
         std::function<expected<frame_list>(const std::vector<storage::offset>&,
                                            std::size_t)>
             load) {
  auto& st = self->state;
  core::pop_inputs in;
  in.now = self->clock().now();
  in.wall = st.cfg.wall();
  in.visibility = st.cfg.visibility;
  std::tie(in.expired, in.dead) = end_due(self, in.now);
  in.needs_seed = st.needs_seed();
  in.load = std::move(load);
  in.load_entry = [&st](std::uint64_t id) { return load_entry(st.cfg, id); };
  auto out = core::plan_pop(*st.core, req, view, std::move(in));
  if (auto& s = out.reply.skipped; s && st.cfg.metrics)
    st.cfg.metrics->retention_skipped
        += static_cast<std::uint64_t>(s->last - s->first + 1);
  return out;
}

} // namespace

caf::result<pop_reply> on_pop(cursor_ptr self, pop_request& req,
                              const partition_view& view) {
  auto& st = self->state;
  auto before = snapshot(self);
  auto out = plan_pop(
      self, req, view,
      [&](const std::vector<storage::offset>& offs, std::size_t max_bytes) {
        return load_frames(st.cfg, offs, max_bytes);
      });
  arm(self);
  if (!out.write)
    return std::move(out.reply);
  auto rp = promise_for<pop_reply>(self);
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
  out.parts.push_back(hold_part(self, core::part_key::stage_part));
  st.before.emplace(std::move(before));
  cursor_state::staged_txn staged{std::nullopt, {}};
  staged.claim = true;
  st.staged.emplace(std::move(staged));
  arm(self);
  return out;
}

} // namespace spool::actors::cursor_detail
