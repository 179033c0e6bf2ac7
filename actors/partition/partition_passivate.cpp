// Passivation (docs/architecture.md, "Passivation"): the queue asks an idle
// partition to stop; it answers from its state, asking its cursors the same,
// and stays until the queue tells it to quit (or does not: a contact in
// between voids the answer there). Cursors go only all together, with the
// partition: one that answered idle quits only if no message reached any
// cursor while they were asked (`contacts` did not move).

#include "actors/partition/partition_state.hpp"

namespace spool::actors::partition_detail {

namespace {

/// Whether this partition holds anything beyond its stored rows: a seal
/// or stage the writer has not settled, a held seek, a deletion, group
/// deletion or retention run, an armed timer, a cursor respawn pending.
bool holds_more_than_rows(const partition_state& st) {
  return !st.seals.empty() || st.log->in_flight() > 0 || !st.holds.empty()
         || !st.live_seeks.empty() || !st.live_txns.empty()
         || !st.stopping.empty() || st.deleting.busy() || st.retaining
         || st.timer.armed() || !st.respawning.empty()
         || !st.barrier_pending.empty() || st.passivating;
}

} // namespace

caf::result<bool> on_passivate(partition_ptr self) {
  auto& st = self->state;
  if (holds_more_than_rows(st))
    return false;
  if (st.cursors.empty())
    return true;
  std::vector<std::string> groups;
  std::vector<cursor_actor> cursors;
  for (auto& [g, c] : st.cursors) {
    groups.push_back(g);
    cursors.push_back(c);
  }
  st.passivating = true;
  auto asked_at = st.contacts;
  auto rp = promise_for<bool>(self);
  fan_out<bool>(
      self, cursors,
      [self, rp, asked_at, groups,
       cursors](std::vector<fanned<bool>> idle) mutable {
        auto& st = self->state;
        st.passivating = false;
        bool all = st.contacts == asked_at && !holds_more_than_rows(st);
        for (std::size_t i = 0; all && i < idle.size(); ++i) {
          auto it = st.cursors.find(groups[i]);
          all = idle[i].reply && *idle[i].reply && it != st.cursors.end()
                && it->second == cursors[i];
        }
        if (all) {
          // Unlinked first: their normal exits are nobody's business.
          for (auto& c : cursors) {
            self->unlink_from(c);
            self->send(c, quit_atom::value);
          }
          for (auto& g : groups)
            st.cursors.erase(g);
        }
        rp.deliver(all && st.cursors.empty());
      },
      passivate_atom::value);
  return rp.later();
}

} // namespace spool::actors::partition_detail
