// A partition's part of a seek: the timestamp walk, the cursor's stage, or the
// seek it holds for a group without a live cursor.

#include "actors/partition/partition_state.hpp"

namespace spool::actors::partition_detail {

// -- seek
// ---------------------------------------------------------------------

/// Stages a seek for a group without a live cursor here, without spawning
/// one: the new record is computed from the stored row (or first-contact
/// position) as the cursor would compute it, and held, as this partition's
/// part, until the writer settles it (see `held_seek`).
caf::result<seek_stage> hold_seek(partition_ptr self, const std::string& group,
                                  core::seek_rule rule, const cursor_seek& req,
                                  const partition_view& view) {
  auto& st = self->state;
  seek_stage stage;
  auto t = st.cfg.node.store.read();
  if (!t) {
    stage.failure = t.err();
    return stage;
  }
  auto pos = read_position(self, *t, group);
  t->abort();
  if (!pos) {
    stage.failure = pos.err();
    return stage;
  }
  storage::cursor_record initial;
  initial.committed = pos->start;
  core::cursor_core core{pos->row ? *pos->row : initial, policy_of(st)};
  core.note_watermark(view.watermark);
  auto wall = st.cfg.node.wall();
  auto plan = core::plan_seek(core, rule, req.target, view.watermark,
                              view.readable_end - 1, req.walked, wall);
  stage.before = plan.before;
  stage.after = plan.after;
  stage.record = storage::mut::put_cursor{st.cfg.record.queue, st.cfg.record.id,
                                          group, std::move(plan.record)};
  // The seek is this partition's part (no cursor to hold it).
  stage.parts.push_back(
      hold_part(self, st.cfg.node.writer,
                {st.cfg.record.queue.value, st.cfg.record.id.value, group,
                 core::part_key::seek_part}));
  st.holds.emplace(group,
                   partition_state::hold{held_seek{stage.after, wall},
                                         std::move(pos->row), pos->start});
  return stage;
}

/// Stages a group's seek on its cursor (created if the group never met this
/// partition), after the timestamp walk. A dry run for a group without a
/// cursor here creates none: it answers where the seek would land from the
/// position a first contact would seed.
caf::result<seek_stage> on_seek(partition_ptr self, const std::string& group,
                                const core::seek_target& target, bool dry_run,
                                bool no_wait) {
  auto& st = self->state;
  auto rule = core::seek_rule_of(target);
  if (!rule)
    return failed<seek_stage>(rule.err());
  auto view = view_of(*st.log);
  cursor_seek req{target, std::nullopt, dry_run, no_wait};
  if (*rule == core::seek_rule::timestamp) {
    auto t = st.cfg.node.store.read();
    if (!t)
      return failed<seek_stage>(t.err());
    auto walked = storage::resolve_timestamp(
        *t, st.cfg.record.queue, st.cfg.record.id, *target.timestamp);
    if (!walked)
      return failed<seek_stage>(walked.err());
    req.walked = *walked;
  }
  if (dry_run) {
    auto names = groups_here(self, group);
    if (!names) // a dry run creates no cursor, even when it cannot tell
      return failed<seek_stage>(names.err());
    if (names->empty()) {
      auto t = self->state.cfg.node.store.read();
      if (!t)
        return failed<seek_stage>(t.err());
      auto start = first_contact(self, *t, group);
      t->abort();
      if (!start)
        return failed<seek_stage>(start.err());
      seek_stage positions;
      positions.after = core::seek_position(
          *rule, target,
          {view.watermark, view.readable_end - 1, *start, req.walked});
      return positions;
    }
  }
  // Held here only while no maxWait boundary is in force: the exemption a
  // seek gives the frames overdue at that moment lives in the cursor. Not
  // while the group's cursor is being respawned: its row may still change
  // (a stage of the dead cursor settles), so the seek waits (busy).
  if (!dry_run && st.overdue.value < 0 && !st.cursors.contains(group)
      && !st.holds.contains(group) && !st.respawning.contains(group))
    return hold_seek(self, group, *rule, req, view);
  auto c = cursor_for(self, group);
  if (!c)
    return failed<seek_stage>(c.err());
  if (dry_run)
    return self->delegate(*c, seek_atom::value, std::move(req), view);
  return stage_on<seek_stage>(self, *c, group, cursor_restarting<seek_stage>,
                              seek_atom::value, std::move(req), view);
}

} // namespace spool::actors::partition_detail
