// A partition's retention (semantics.md §7) on its one timer, in bounded
// deletion steps.

#include "actors/partition/partition_state.hpp"

namespace spool::actors::partition_detail {

// -- retention (semantics.md §7)
// ----------------------------------------------

/// Keeps the one retention timer at `due` (wall µs) or earlier.
void arm_retention(partition_ptr self, std::optional<storage::micros> due) {
  auto& st = self->state;
  if (!due)
    return;
  if (auto id = st.timer.arm(*due))
    self->delayed_send(self,
                       std::chrono::microseconds{std::max<storage::micros>(
                           *due - st.cfg.node.wall(), 0)},
                       retention_atom::value, *id);
}

/// New frames are durable: retention looks at them one interval from now
/// (cheap: no read; the run computes the exact next time).
void retention_after_push(partition_ptr self) {
  auto& st = self->state;
  if (st.timer.armed() || st.retaining || !st.retention.active())
    return;
  arm_retention(self,
                st.cfg.node.wall()
                    + std::chrono::duration_cast<std::chrono::microseconds>(
                          st.cfg.node.retention_interval)
                          .count());
}

/// created_at of the frame at `off` (or the next retained one); none past
/// the readable end.
std::optional<storage::micros> created_at_of(partition_ptr self,
                                             storage::offset off) {
  auto& st = self->state;
  auto& rec = st.log->record();
  off = std::max(off, rec.watermark);
  if (off >= rec.next_offset)
    return std::nullopt;
  auto t = st.cfg.node.store.read();
  if (!t)
    return std::nullopt;
  auto r = storage::read_frames(*t, rec.queue, rec.id, off, 1);
  if (!r || r->frames.empty() || r->frames.front().off >= rec.next_offset)
    return std::nullopt;
  return r->frames.front().created_at;
}

/// maxWaitTimeSeconds: moves the overdue boundary to the last frame created
/// before `before` and tells every group with a cursor here.
void tell_overdue(partition_ptr self, storage::micros before) {
  auto& st = self->state;
  auto& rec = st.log->record();
  auto t = st.cfg.node.store.read();
  if (!t)
    return;
  auto boundary = storage::resolve_timestamp(*t, rec.queue, rec.id, before);
  t->abort();
  if (!boundary)
    return;
  auto through = std::min(*boundary, rec.next_offset - 1);
  if (through <= st.overdue)
    return;
  st.overdue = through;
  ++st.contacts;
  // Every live cursor hears it whatever the read below does: a boundary
  // once moved is not told again.
  for (auto& [g, c] : st.cursors)
    self->send(c, retention_atom::value, view_of(*st.log), st.overdue);
  // A group stored here without a live cursor is told at its spawn.
  if (auto names = groups_here(self, std::nullopt))
    for (auto& g : *names)
      if (!st.cursors.contains(g))
        (void)cursor_for(self, g);
}

/// One retention run: maxWait, then deletion steps, then the next timer.
void run_retention(partition_ptr self) {
  auto& st = self->state;
  if (!st.retention.active())
    return;
  st.retaining = true;
  if (auto before = core::overdue_before(st.retention, st.cfg.node.wall()))
    tell_overdue(self, *before);
  delete_steps(
      self,
      [self](std::int64_t) -> expected<std::vector<storage::retention_rule>> {
        auto& st = self->state;
        std::optional<storage::offset> low;
        if (st.retention.completed > 0) {
          // A failed read blocks completedRetentionSeconds only: age alone
          // is what retentionSeconds deletes by.
          if (auto c = consumed_by_all(self))
            low = *c;
          else
            spdlog::warn("partition {}: completedRetentionSeconds skipped "
                         "this run: {}",
                         st.cfg.record.name, to_string(c.err()));
        }
        return core::deletion_bounds(st.retention, st.cfg.node.wall(),
                                     st.log->record().next_offset - 1, low);
      },
      [self](std::int64_t freed, std::size_t writes,
             std::optional<api_error> err) {
        auto& st = self->state;
        st.retaining = false;
        if (auto& m = st.cfg.node.metrics) {
          m->retention_frames_deleted += static_cast<std::uint64_t>(freed);
          m->retention_writes += writes;
        }
        if (err)
          spdlog::warn("partition {}: retention stopped: {}",
                       st.cfg.record.name, to_string(*err));
        auto now = st.cfg.node.wall();
        auto interval = std::chrono::duration_cast<std::chrono::microseconds>(
                            st.cfg.node.retention_interval)
                            .count();
        std::optional<storage::micros> unjudged;
        if (st.retention.max_wait > 0)
          unjudged = created_at_of(self, st.overdue + 1);
        arm_retention(self,
                      core::next_run(st.retention, now, interval,
                                     created_at_of(self, storage::offset{0}),
                                     unjudged));
      });
}

void on_retention_timer(partition_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (!st.timer.fire(id))
    return;          // superseded by an earlier deadline
  if (!st.retaining) // a run going on arms the next one when it ends
    run_retention(self);
}

caf::result<storage::micros> on_oldest(partition_ptr self,
                                       const std::string& group) {
  auto& st = self->state;
  auto names = groups_here(self, group);
  if (names && names->empty()) {
    // New here: it would start where its first contact seeds it.
    std::optional<storage::offset> start;
    if (auto t = st.cfg.node.store.read())
      if (auto at = first_contact(self, *t, group))
        start = *at;
    return start ? created_at_of(self, *start + 1).value_or(0)
                 : storage::micros{0};
  }
  auto c = cursor_for(self, group);
  if (!c)
    return storage::micros{0};
  auto rp = promise_for<storage::micros>(self);
  self->request(*c, caf::infinite, info_atom::value, view_of(*st.log))
      .then(
          [rp](cursor_info& info) mutable {
            rp.deliver(info.oldest_unconsumed_at);
          },
          [rp](caf::error&) mutable { rp.deliver(storage::micros{0}); });
  return rp.later();
}

} // namespace spool::actors::partition_detail
