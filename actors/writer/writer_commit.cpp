// The writer's group commit: one group at a time on the committer, handed
// to the durability policy, answers released in commit order with every
// part settled first; the stall timer; the stop (writer_actor.cpp has the
// whole flow).

#include "actors/writer/writer_state.hpp"

#include <caf/send.hpp>

#include <algorithm>

#include "storage/group_commit.hpp"

namespace spool::actors::writer_detail {

/// Sends each part's holder the outcome.
void tell(writer_ptr self,
          const std::vector<core::open_parts<caf::actor_addr>::closed>& parts,
          core::part_outcome outcome) {
  for (auto& p : parts)
    if (auto h = caf::actor_cast<part_holder>(p.holder))
      self->send(h, settled_atom::value, p.id.key, outcome);
}

/// Settles the parts of a batch (those still open) with `outcome`.
void settle(writer_ptr self, const std::vector<core::part_id>& parts,
            core::part_outcome outcome) {
  if (!parts.empty())
    tell(self, self->state.parts.close(parts), outcome);
}

/// The answer to a batch that never reached LMDB: its parts fail with it.
write_result refused(writer_ptr self, const std::vector<core::part_id>& parts,
                     api_error err) {
  settle(self, parts, core::part_outcome::failed);
  return write_result{std::move(err)};
}

/// Answers a batch that never reached LMDB: its parts fail with it.
void refuse(writer_ptr self, writer_state::pending_batch& b, api_error err) {
  b.promise.deliver(refused(self, b.parts, std::move(err)));
}

/// Starts the next group if none is being committed.
void kick(writer_ptr self) {
  auto& st = self->state;
  if (st.stopping || !st.in_flight.empty() || st.pending.empty())
    return;
  std::size_t bytes = 0;
  while (!st.pending.empty()) {
    auto size = st.pending.front().batch.byte_size();
    if (!st.in_flight.empty() && bytes + size > st.cfg.max_group_bytes)
      break;
    bytes += size;
    st.in_flight.push_back(std::move(st.pending.front()));
    st.pending.pop_front();
  }
  std::vector<const storage::write_batch*> batches;
  batches.reserve(st.in_flight.size());
  for (auto& g : st.in_flight)
    batches.push_back(&g.batch);
  auto id = ++st.group_id;
  st.started_at = self->clock().now();
  auto handle = caf::actor_cast<writer_actor>(self);
  st.cfg.commits->start(std::move(batches),
                        [slot = st.slot, handle, id](commit_report r) {
                          {
                            std::lock_guard<std::mutex> guard{slot->mtx};
                            slot->report = std::move(r);
                          }
                          caf::anon_send(handle, flush_atom::value, id);
                        });
  arm(self);
}

/// The error of batch `i` of `g`, if any: its own, or the loss of a slot
/// it wrote.
std::optional<api_error> failure_of(const writer_state::committed_group& g,
                                    std::size_t i) {
  if (i >= g.failures.size())
    return make_error(errc::internal, "writer: commit gave no result");
  if (g.failures[i])
    return g.failures[i];
  if (i < g.numbers.size())
    for (auto& n : g.numbers[i])
      for (auto& l : g.lost)
        if (l.slot == n.slot)
          return l.why;
  return std::nullopt;
}

/// Answers the committed groups the policy decided, oldest first, up to
/// the first it has not; raises the marks of the slots not lost and
/// answers the readers they now cover.
void release(writer_ptr self) {
  auto& st = self->state;
  while (!st.committed.empty() && st.committed.front().durable) {
    auto g = std::move(st.committed.front());
    st.committed.pop_front();
    st.committed_batches -= g.batches.size();
    std::erase_if(g.marks, [&](const storage::slot_seq& m) {
      return std::any_of(g.lost.begin(), g.lost.end(),
                         [&](const lost_slot& l) { return l.slot == m.slot; });
    });
    st.cfg.marks->raise(g.marks);
    // A reader of a lost slot waits for a seq whose outcome is unknown:
    // it is answered with the loss.
    for (auto& l : g.lost)
      std::erase_if(st.readers, [&](writer_state::reader& r) {
        if (r.mark.slot != l.slot)
          return false;
        r.promise.deliver(write_result{l.why});
        return true;
      });
    for (std::size_t i = 0; i < g.batches.size(); ++i) {
      write_result r;
      if (auto err = failure_of(g, i))
        r.failure = std::move(*err);
      settle(self, g.batches[i].parts,
             r.ok() ? core::part_outcome::durable
                    : (g.failures.size() > i && g.failures[i]
                           ? core::part_outcome::failed
                           : core::part_outcome::unknown));
      g.batches[i].promise.deliver(std::move(r));
    }
  }
  std::erase_if(st.readers, [&](writer_state::reader& r) {
    if (!st.cfg.marks->covers(r.mark))
      return false;
    r.promise.deliver(write_result{});
    return true;
  });
}

/// The policy decided group `id`.
void on_durable(writer_ptr self, std::uint64_t id) {
  for (auto& g : self->state.committed)
    if (g.id == id && !g.durable) {
      std::lock_guard<std::mutex> guard{g.decided->mtx};
      if (!g.decided->lost)
        return; // a stale wake-up
      g.durable = true;
      g.lost = std::move(*g.decided->lost);
    }
  release(self);
}

/// Hands the ended commit `id` of `group` to the durability policy, which
/// may decide it inline (the local one) or later, from any thread, which
/// then wakes the writer (`durable_atom(id)`).
void hand_to_policy(writer_ptr self, std::uint64_t id,
                    std::vector<writer_state::pending_batch> group,
                    commit_report report) {
  auto& st = self->state;
  for (auto& b : group)
    b.batch = {}; // committed: only the answers and parts wait
  st.committed_batches += group.size();
  auto marks = marks_of(report);
  writer_state::committed_group g;
  g.id = id;
  g.batches = std::move(group);
  g.marks = report.marks();
  g.failures = std::move(report.failures);
  g.numbers = std::move(report.numbers);
  auto decided = g.decided;
  st.committed.push_back(std::move(g));
  auto handle = caf::actor_cast<writer_actor>(self);
  st.cfg.durability->committed(
      std::move(marks), [decided, handle, id](std::vector<lost_slot> lost) {
        std::lock_guard<std::mutex> guard{decided->mtx};
        decided->lost = std::move(lost);
        if (!decided->inline_phase)
          caf::anon_send(handle, durable_atom::value, id);
      });
  {
    std::lock_guard<std::mutex> guard{decided->mtx};
    decided->inline_phase = false;
  }
  on_durable(self, id); // decided inline: answered now
}

/// Answers every batch and reader still waiting with `err`.
void fail_waiting(writer_ptr self, const api_error& err) {
  auto& st = self->state;
  for (auto& p : st.pending) // never started
    refuse(self, p, err);
  st.pending.clear();
  for (auto& g : st.committed) // committed, perhaps stored
    for (std::size_t i = 0; i < g.batches.size(); ++i) {
      auto& b = g.batches[i];
      if (i < g.failures.size() && g.failures[i]) { // refused or failed
        settle(self, b.parts, core::part_outcome::failed);
        b.promise.deliver(write_result{*g.failures[i]});
        continue;
      }
      settle(self, b.parts, core::part_outcome::unknown);
      b.promise.deliver(write_result{err});
    }
  st.committed.clear();
  st.committed_batches = 0;
  for (auto& r : st.readers)
    r.promise.deliver(write_result{err});
  st.readers.clear();
}

api_error unusable() {
  return make_error(errc::internal, "storage unusable: the LMDB map is gone "
                                    "after a failed growth");
}

/// Fails every batch broken storage can no longer take, and stops.
bool stop_if_broken(writer_ptr self) {
  auto& st = self->state;
  if (!st.cfg.env->broken())
    return false;
  fail_waiting(self, unusable());
  self->quit(caf::make_error(caf::sec::runtime_error, "storage unusable"));
  return true;
}

/// The commit of group `id` ended: hands it to the durability policy (the
/// local one answers it inline), then starts the next group, which never
/// waits for this one's durability.
void committed(writer_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.group_id || st.in_flight.empty())
    return;
  commit_report report;
  {
    std::lock_guard<std::mutex> guard{st.slot->mtx};
    if (!st.slot->report)
      return; // not ended yet (a stale wake-up)
    report = std::move(*st.slot->report);
    st.slot->report.reset();
  }
  auto group = std::move(st.in_flight);
  st.in_flight.clear();
  // Handed over first: its answers (its batches' own errors, when the map
  // broke) come before the failure of what waits behind it.
  hand_to_policy(self, id, std::move(group), std::move(report));
  if (stop_if_broken(self))
    return;
  kick(self);
}

/// While a commit runs: the timer at the oldest waiting batch's deadline.
void arm(writer_ptr self) {
  auto& st = self->state;
  if (st.in_flight.empty())
    return;
  auto first = std::find_if(st.pending.begin(), st.pending.end(),
                            [](auto& p) { return !p.batch.mutations.empty(); });
  if (first == st.pending.end())
    return;
  auto due = first->queued_at + st.cfg.stall_timeout;
  if (auto id = st.timer.arm(due))
    self->delayed_send(
        self, std::max(due - self->clock().now(), clock_type::duration::zero()),
        timeout_atom::value, *id);
}

/// Fails the batches that waited `stall_timeout` without being started.
void on_stall_timer(writer_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (!st.timer.fire(id))
    return;
  auto now = self->clock().now();
  for (auto it = st.pending.begin(); it != st.pending.end();) {
    if (it->queued_at + st.cfg.stall_timeout > now)
      break;                           // queued in order: the rest waited less
    if (it->batch.mutations.empty()) { // a barrier waits for its turn
      ++it;
      continue;
    }
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        now - it->queued_at);
    refuse(self, *it,
           busy("storage stalled: the write waited ", waited.count(),
                " ms for the commit in progress and was not started (nothing "
                "of it is stored)"));
    it = st.pending.erase(it);
  }
  arm(self);
}

/// The stop: ends the running commit, commits what waits, answers what is
/// durable and fails the rest as of unknown outcome.
void on_stop(writer_ptr self) {
  auto& st = self->state;
  st.stopping = true; // `committed` below starts no new group
  st.cfg.commits->wait_idle();
  if (!st.in_flight.empty())
    committed(self, st.group_id);
  if (!st.pending.empty() && !st.cfg.env->broken()) {
    std::vector<const storage::write_batch*> batches;
    for (auto& p : st.pending)
      batches.push_back(&p.batch);
    // On the committer like any group: its hook (replication) lives there.
    std::optional<commit_report> report;
    st.cfg.commits->start(std::move(batches), [&report](commit_report r) {
      report = std::move(r);
    });
    st.cfg.commits->wait_idle();
    std::vector<writer_state::pending_batch> rest(
        std::make_move_iterator(st.pending.begin()),
        std::make_move_iterator(st.pending.end()));
    st.pending.clear();
    if (report)
      hand_to_policy(self, ++st.group_id, std::move(rest), std::move(*report));
    else
      for (auto& b : rest)
        refuse(self, b,
               busy("the node stopped before the write was committed "
                    "(nothing of it is stored)"));
  }
  if (st.cfg.env->broken())
    fail_waiting(self, unusable());
  fail_waiting(self, busy("the node stopped before the write was durable: "
                          "its outcome is unknown"));
}

} // namespace spool::actors::writer_detail
