// Message flow: the partition forwards pop / ack / extend with a view of
// itself (watermark, readable end, newest stamp). A pop plans with the core,
// reads the planned frames, cuts them by visibility and bytes, grants the
// lease, writes the cursor record (+ dead letters) and answers when that
// write is durable. Acks that change state answer after their write too.
// The one timer (`expire_atom` with an id; stale ids are ignored) ends
// expired leases.
// A failed write changes nothing: every change is made on the core after a
// snapshot of it (`snapshot`), written, and kept only once durable; a
// failed write restores the snapshot, so memory equals the stored record.
// While a change is being written every other message waits in the mailbox
// (as for a staged transaction). No write failure ends the cursor: a timer
// change that failed is retried after `write_retry`.
// A transaction stages its acks (`stage_atom`): validated and applied on a
// copy of the core, answered with the record and DLQ entries to write and
// the cursor's part (told to the writer); until the writer settles it
// (`settled_atom`: durable swaps the copy in, failed drops it) every other
// message, the timer included, is skipped and stays in the mailbox in order
// (docs/transactions.md). A seek (`seek_atom`) and a claim stage the same
// way: the queue collects every cursor's record and part into one batch.

#include "actors/cursor/cursor_state.hpp"

namespace spool::actors {

namespace cursor_detail {

/// Takes the snapshot a change is undone to if its write fails.
cursor_state::undo_point snapshot(cursor_ptr self) {
  return {*self->state.core, self->state.lost_pending};
}

/// Undoes a change: the core and the lost-lease flag as `snapshot` took
/// them (`before` is moved from).
void restore(cursor_ptr self, cursor_state::undo_point& before) {
  *self->state.core = std::move(before.core);
  self->state.lost_pending = before.lost_pending;
}

/// maxWaitTimeSeconds: adds one bounded step of overdue frames to `dead`;
/// true when there were any (the record changed).
bool judge_overdue(cursor_ptr self, std::vector<core::dead_letter>& dead) {
  auto& st = self->state;
  auto overdue = st.core->judge_overdue(st.cfg.overdue_step);
  if (overdue.empty())
    return false;
  if (st.cfg.metrics)
    st.cfg.metrics->max_wait_dead_letters += overdue.size();
  dead.insert(dead.end(), std::make_move_iterator(overdue.begin()),
              std::make_move_iterator(overdue.end()));
  return true;
}

/// Retention news from the partition: the watermark (frames deleted under
/// a lease count as completed when it ends) and the overdue boundary. A
/// full step of dead letters continues after its write.
void on_retention(cursor_ptr self, const partition_view& view,
                  storage::offset overdue) {
  auto& st = self->state;
  st.core->note_watermark(view.watermark);
  st.core->set_overdue(overdue);
  // A failed write is retried after `write_retry` (the boundary stays: it
  // is in memory only, set before the snapshot).
  auto before = snapshot(self);
  std::vector<core::dead_letter> dead;
  if (!judge_overdue(self, dead))
    return;
  bool more = dead.size() >= st.cfg.overdue_step;
  commit(self, std::move(before), dlq_changes{std::move(dead), {}, {}}, {},
         [self, view, overdue, more](std::optional<api_error> failure) {
           if (!failure && more)
             self->send(self, retention_atom::value, view, overdue);
           else if (failure) // the partition tells a boundary only once
             self->delayed_send(self, self->state.cfg.write_retry,
                                retention_atom::value, view, overdue);
         });
}

/// Keeps one timer at the core's next deadline.
void arm(cursor_ptr self) {
  auto& st = self->state;
  auto deadline = st.core->next_deadline();
  if (st.lost_pending && !deadline)
    deadline = self->clock().now();
  if (deadline && st.backoff_until && *deadline < *st.backoff_until)
    deadline = st.backoff_until;
  if (!deadline)
    return;
  if (auto id = st.timer.arm(*deadline))
    self->delayed_send(
        self,
        std::max(*deadline - self->clock().now(), mono_clock::duration::zero()),
        expire_atom::value, *id);
}

/// Ends what is due at `now`: a lease lost to a restart, an expired lease,
/// overdue frames (maxWait: never delivered, also just after a lease on them
/// ended). Returns whether the record changed, and the dead letters.
std::pair<bool, std::vector<core::dead_letter>> end_due(cursor_ptr self,
                                                        mono_time now) {
  auto& st = self->state;
  bool changed = false;
  std::vector<core::dead_letter> dead;
  if (st.lost_pending) {
    st.lost_pending = false;
    auto [lost, buried] = st.core->recover_lost_lease();
    changed = lost;
    dead = std::move(buried);
  }
  auto [expired, buried] = st.core->expire(now);
  changed = changed || expired;
  dead.insert(dead.end(), std::make_move_iterator(buried.begin()),
              std::make_move_iterator(buried.end()));
  if (judge_overdue(self, dead))
    changed = true;
  return {changed, std::move(dead)};
}

cursor_actor::behavior_type cursor(cursor_ptr self, cursor_config cfg,
                                   storage::cursor_record rec, bool lost,
                                   bool fresh, std::optional<held_seek> held) {
  self->state.cfg = std::move(cfg);
  self->state.fresh = fresh;
  self->state.core.emplace(std::move(rec), self->state.cfg.policy);
  self->state.core->note_watermark(self->state.cfg.watermark);
  if (held) // the seek resets the lost lease; only its abort would recover
    self->state.staged.emplace(
        cursor_state::staged_txn{std::nullopt, {}, held->to, held->wall, lost});
  else if (lost)
    recover_lost(self);
  arm(self);
  // While a transaction is staged, everything but its settle waits.
  return {
      [self](pop_atom, pop_request& req,
             const partition_view& view) -> caf::result<pop_reply> {
        if (self->state.busy()) {
          // A live lease answers at once, also while its own write is in
          // flight (a pop retried by a push must not queue behind it): the
          // answer changes nothing, and were the write to fail, a pop
          // answered `lease_held` only polls again.
          auto& lease = self->state.core->lease();
          if (!self->state.staged && lease
              && lease->expires > self->clock().now()) {
            // Soon, not at the expiry: were the write granting this lease
            // to fail, the lease would be gone and a parked pop would wait.
            pop_reply held;
            held.reason = empty_reason::lease_held;
            held.retry_at
                = std::min(lease->expires,
                           self->clock().now() + self->state.cfg.write_retry);
            return held;
          }
          return caf::skip;
        }
        if (self->state.deleting)
          return pop_reply{};
        self->state.core->touch(self->state.cfg.wall());
        return on_pop(self, req, view);
      },
      [self](
          ack_atom, std::vector<ack_request>& reqs,
          const partition_view& view) -> caf::result<std::vector<ack_reply>> {
        if (self->state.busy())
          return caf::skip;
        if (self->state.deleting)
          return std::vector<ack_reply>(
              reqs.size(),
              ack_reply{
                  ack_error::invalid_lease, false, false, std::nullopt, {}});
        self->state.core->touch(self->state.cfg.wall());
        return on_ack(self, reqs, view);
      },
      [self](extend_atom, const std::string& lease_id,
             std::chrono::milliseconds by) -> caf::result<extend_reply> {
        if (self->state.busy())
          return caf::skip;
        extend_reply reply;
        if (self->state.deleting) {
          reply.error = extend_error::not_found;
          return reply;
        }
        auto before = snapshot(self);
        auto r = self->state.core->extend(lease_id, by, self->clock().now());
        if (auto* e = std::get_if<extend_error>(&r)) {
          reply.error = *e;
          return reply; // nothing changed
        }
        // The group is active: its activity is written, so neither a
        // restart nor the idle sweep takes a group that only extends for
        // an inactive one (the lease itself lives in memory).
        self->state.core->touch(self->state.cfg.wall());
        auto rp = promise_for<extend_reply>(self);
        commit(self, std::move(before), {}, {},
               [self, rp, expires = std::get<mono_time>(r)](
                   std::optional<api_error> failure) mutable {
                 extend_reply done;
                 if (failure)
                   done.failure = std::move(failure);
                 else
                   done.expires = expires;
                 rp.deliver(std::move(done)); // commit arms the timer
               });
        return rp.later();
      },
      [self](expire_atom, std::uint64_t id) -> caf::result<void> {
        if (self->state.busy())
          return caf::skip;
        if (!self->state.deleting)
          on_expire(self, id);
        return {};
      },
      [self](info_atom, const partition_view& view) {
        return describe(self, view); // read-only: answered while staged too
      },
      [self](vote_atom,
             storage::micros active_after) -> caf::result<delete_vote> {
        auto& st = self->state;
        if (st.busy())
          return caf::skip; // the transaction's record would outlive it
        if (active_after != INT64_MAX
            && (st.core->lease() || st.core->last_activity() > active_after))
          return delete_vote{false, true};
        st.deleting = true;
        if (st.core->lease() || st.core->last_activity() > 0)
          return delete_vote{true, false};
        auto t = st.cfg.store.read();
        if (!t)
          return delete_vote{true, false}; // cannot tell: count it
        auto rec = storage::tables::get_cursor(*t, st.cfg.queue,
                                               st.cfg.partition, st.cfg.group);
        return delete_vote{!rec || rec->has_value(), false};
      },
      [self](release_atom, const std::string& lease_id) -> caf::result<bool> {
        if (self->state.busy())
          return caf::skip; // the staged core would bring the lease back
        auto before = snapshot(self);
        if (self->state.deleting
            || !self->state.core->release_unwritten(lease_id))
          return false;
        auto rp = promise_for<bool>(self);
        // Not written: the lease stays and ends as an expiry would.
        commit(self, std::move(before), {}, {},
               [rp](std::optional<api_error> failure) mutable {
                 rp.deliver(!failure);
               });
        return rp.later();
      },
      [self](verdict_atom, bool durable) {
        if (durable) {
          self->quit();
          return;
        }
        // The deletion failed: serve again, with a fresh timer (expiries
        // that fired meanwhile were ignored).
        auto& st = self->state;
        st.deleting = false;
        st.timer.cancel();
        arm(self);
      },
      [self](options_atom, core::cursor_policy& policy,
             core::visibility_policy& visibility) -> caf::result<void> {
        auto& st = self->state;
        if (st.busy())
          return caf::skip; // the staged core would lose them at commit
        st.cfg.policy = policy;
        st.cfg.visibility = visibility;
        st.core->set_policy(std::move(policy));
        return {};
      },
      [self](stage_atom, std::vector<ack_request>& reqs,
             const partition_view& view) -> caf::result<stage_reply> {
        if (self->state.busy())
          return caf::skip; // another transaction's stage: after its settle
        if (self->state.deleting) {
          stage_reply refused;
          refused.refused
              = core::stage_refusal{0, to_string(ack_error::invalid_lease)};
          return refused;
        }
        return on_stage(self, reqs, view);
      },
      [self](settled_atom, const core::part_key&, core::part_outcome o) {
        on_settled(self, o);
      },
      [self](claim_atom, const pop_request& req, const partition_view& view,
             std::vector<storage::stored_frame>& sealed) {
        // Never deferred: a busy cursor declines (the push must not wait).
        return on_claim(self, req, view, sealed);
      },
      [self](retention_atom, const partition_view& view,
             storage::offset overdue) -> caf::result<void> {
        if (self->state.busy())
          return caf::skip; // the staged core would lose the dead letters
        if (!self->state.deleting)
          on_retention(self, view, overdue);
        return {};
      },
      [self](requeue_atom, std::vector<storage::dlq_entry>& entries)
          -> caf::result<dlq_count_reply> {
        if (self->state.busy())
          return caf::skip; // the staged core would lose them at commit
        if (self->state.deleting)
          return dlq_count_reply{0, being_deleted()};
        return on_requeue(self, entries);
      },
      [self](seek_atom, const cursor_seek& req,
             const partition_view& view) -> caf::result<seek_stage> {
        if (self->state.staged && req.no_wait) {
          seek_stage held;
          held.busy = true;
          return held;
        }
        if (self->state.busy())
          return caf::skip; // after the staged transaction or seek settles
        if (self->state.deleting) {
          seek_stage refused;
          refused.failure = being_deleted();
          return refused;
        }
        return on_seek(self, req, view);
      },
      [self](passivate_atom) { return holds_only_its_row(self->state); },
      [self](quit_atom) { self->quit(); },
  };
}

} // namespace cursor_detail

expected<cursor_actor>
spawn_cursor(caf::local_actor* parent, cursor_config cfg,
             std::optional<storage::cursor_record> stored,
             std::optional<held_seek> held) {
  bool existed = stored.has_value();
  storage::cursor_record initial;
  initial.committed = cfg.initial_committed;
  auto record = existed ? std::move(*stored) : initial;
  bool lost = existed
              && (record.leased.has_value()
                  || std::any_of(record.requeued.begin(), record.requeued.end(),
                                 [](auto& r) { return r.leased; }));
  return parent->spawn<caf::linked>(cursor_detail::cursor, std::move(cfg),
                                    std::move(record), lost, !existed, held);
}

} // namespace spool::actors
