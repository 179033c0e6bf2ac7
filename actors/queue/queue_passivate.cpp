// Passivation (docs/architecture.md, "Passivation"): the queue keeps its
// live partitions in least-recently-contacted order; its sweep asks the
// ones idle longer than the node's idle time (or, over the node's cap of
// live partition actors, the oldest) to stop. A partition answers from its
// state; the queue tells it to quit only if nothing reached it between the
// question and the answer (`touched`), so it quits with nothing in hand and
// never two actors serve one partition.

#include "actors/queue/queue_state.hpp"

namespace spool::actors::queue_detail {

namespace {

/// At most this many questions in flight per queue (CAF 0.17 looks up a
/// response handler linearly: 100,000 at once hung the queue); each answer
/// re-plans the sweep, so the next ones go as these come back.
constexpr std::size_t passivation_step = 64;

/// Over the cap, a partition is asked only once untouched this long (one
/// that answers busy is not asked again at once).
constexpr std::chrono::seconds cap_min_age{1};

/// Live partition actors on the node beyond the cap, less this queue's
/// questions in flight (0: none to ask for the cap).
std::int64_t excess(const queue_state& st) {
  auto& n = st.cfg.node;
  if (n.max_partition_actors == 0 || !n.metrics)
    return 0;
  return n.metrics->partition_actors.load()
         - static_cast<std::int64_t>(n.max_partition_actors)
         - static_cast<std::int64_t>(st.asking);
}

void answered(queue_ptr self, const std::string& name,
              const caf::actor_addr& asked, bool idle) {
  auto& st = self->state;
  --st.asking;
  auto it = st.partitions.find(name);
  if (it == st.partitions.end())
    return;
  auto& entry = it->second;
  if (!entry.actor || entry.actor.address() != asked || !entry.stopping)
    return; // died and respawned meanwhile: that path owns it
  entry.stopping = false;
  if (idle && !entry.touched && !entry.dead && !st.deleted) {
    // Everything this queue sent it came before the question; nothing
    // since. Unlinked first: its normal exit is nobody's business.
    st.names_by_actor.erase(asked);
    self->unlink_from(entry.actor);
    self->send(entry.actor, quit_atom::value);
    entry.actor = partition_actor{};
  } else {
    entry.touched = false;
    contacted(self, entry); // asked again after another idle time
  }
  plan_passivation(self);
}

void ask(queue_ptr self, partition_entry& entry) {
  auto& st = self->state;
  st.lru.erase(entry.lru_at);
  entry.in_lru = false;
  entry.stopping = true;
  entry.touched = false;
  ++st.asking;
  auto name = entry.rec.name;
  auto asked = entry.actor.address();
  self->request(entry.actor, caf::infinite, passivate_atom::value)
      .then(
          [self, name, asked](bool idle) { answered(self, name, asked, idle); },
          [self, name, asked](caf::error&) {
            answered(self, name, asked, false);
          });
}

} // namespace

void contacted(queue_ptr self, partition_entry& entry) {
  auto& st = self->state;
  entry.last_contact = self->clock().now();
  if (entry.stopping) {
    entry.touched = true;
    return;
  }
  if (entry.in_lru) {
    st.lru.splice(st.lru.end(), st.lru, entry.lru_at);
  } else {
    st.lru.push_back(entry.rec.name);
    entry.lru_at = std::prev(st.lru.end());
    entry.in_lru = true;
  }
}

void plan_passivation(queue_ptr self) {
  auto& st = self->state;
  if (st.lru.empty() || st.deleted)
    return;
  auto now = self->clock().now();
  auto oldest = st.partitions.at(st.lru.front()).last_contact;
  std::optional<mono_time> due;
  if (st.cfg.node.partition_idle.count() > 0)
    due = oldest + st.cfg.node.partition_idle;
  if (excess(st) > 0 && (!due || oldest + cap_min_age < *due))
    due = oldest + cap_min_age;
  if (!due)
    return;
  if (auto id = st.passivation_timer.arm(*due))
    self->delayed_send(self, std::max(*due - now, mono_clock::duration::zero()),
                       passivate_atom::value, *id);
}

void on_passivation_tick(queue_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (!st.passivation_timer.fire(id) || st.deleted)
    return;
  auto now = self->clock().now();
  auto idle = st.cfg.node.partition_idle;
  auto over = excess(st);
  while (!st.lru.empty() && st.asking < passivation_step) {
    auto& entry = st.partitions.at(st.lru.front());
    bool expired = idle.count() > 0 && entry.last_contact + idle <= now;
    bool for_cap = over > 0 && entry.last_contact + cap_min_age <= now;
    if (!expired && !for_cap)
      break;
    ask(self, entry);
    --over;
  }
  if (st.asking < passivation_step)
    plan_passivation(self); // else each answer does
}

} // namespace spool::actors::queue_detail
