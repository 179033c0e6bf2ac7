// Message flow: the partition forwards pop / ack / extend with a view of
// itself (watermark, readable end, newest stamp). A pop plans with the core,
// reads the planned frames, cuts them by visibility and bytes, grants the
// lease, writes the cursor record (+ dead letters) and answers when that
// write is durable. Acks that change state answer after their write too.
// The one timer (`expire_atom` with an id; stale ids are ignored) ends
// expired leases.
// A failed write changes nothing: every change is made on the core after a
// snapshot of it (`begin_change`), written, and kept only once durable; a
// failed write restores the snapshot, so memory equals the stored record.
// While a change is being written every other message waits in the mailbox
// (as for a staged transaction). No write failure ends the cursor: a timer
// change that failed is retried after `write_retry`.
// A transaction stages its acks (`stage_atom`): validated and applied on a
// copy of the core, answered with the record and DLQ entries to write; until
// the broker settles it (`settle_atom`: commit swaps the copy in, abort
// drops it) every other message, the timer included, is skipped and stays in
// the mailbox in order (docs/transactions.md).
// A seek (`seek_atom`) stages the same way: the queue collects every
// cursor's new record into one batch and settles each with the outcome.

#include "actors/cursor/cursor_actor.hpp"
#include "actors/promise.hpp"
#include "core/cursor/delivery.hpp"

#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>
#include <caf/result.hpp>
#include <caf/skip.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <atomic>

#include "actors/write.hpp"
#include "storage/tables.hpp"

namespace spool::actors {

namespace {

struct cursor_state {
  static inline const char* name = "spool.cursor";
  cursor_config cfg;
  std::optional<core::cursor_core> core;
  /// The deadline the pending timer fires at, and its id.
  std::optional<mono_time> armed;
  std::uint64_t timer_id = 0;
  /// The group is being deleted: serve nothing until it settles.
  bool deleting = false;
  /// A transaction's staged acks, or a seek's new position, until settled.
  struct staged_txn {
    std::uint64_t id;
    /// The transaction's cursor once committed (none for a seek).
    std::optional<core::staged_acks> acks;
    /// Failure times of the DLQ entries its batch writes.
    std::vector<storage::micros> written;
    /// The seek's committed and wall time (for a transaction: unused).
    storage::offset seek_to{-1};
    storage::micros seek_wall = 0;
    /// A seek held from spawn over a lease lost to a restart: if it aborts,
    /// the lost lease ends as an expiry then.
    bool lost = false;
  };
  std::optional<staged_txn> staged;
  /// What a change being written is undone to if the write fails.
  struct undo_point {
    core::cursor_core core;
    bool lost_pending;
  };
  std::optional<undo_point> before;
  /// A change the timer made failed to write: the timer waits until then.
  std::optional<mono_time> backoff_until;
  /// A lease recorded before a restart is not ended durably yet.
  bool lost_pending = false;
  /// Spawned without a stored row, and none written since: the group's
  /// first pop writes the seed (semantics.md §5: durable at first contact,
  /// even when the pop finds nothing).
  bool fresh = false;
  bool row_written = false;
  bool needs_seed() const noexcept {
    return fresh && !row_written;
  }

  /// Another message is in progress: everything but settles waits.
  bool busy() const noexcept {
    return staged.has_value() || before.has_value();
  }
};

using cursor_ptr = cursor_actor::stateful_pointer<cursor_state>;

/// Stage ids are unique in the process, not per cursor: a settle meant for
/// a cursor that died cannot settle a stage of the one respawned in its
/// place (they would both number from 1).
std::uint64_t next_stage_id() {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

/// Frames by offset, sorted ascending (what `load_frames` returns).
using frame_list = std::vector<storage::stored_frame>;

/// The frame at `off` in `frames`, or null.
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

/// Reads the frames at `offsets` (sorted) in one short read transaction,
/// decoding no more than `max_bytes` of payload (at least one frame; the
/// offsets past the cap are not read: a pop's byte cap bounds its memory).
expected<frame_list> load_frames(const cursor_config& cfg,
                                 const std::vector<storage::offset>& offs,
                                 std::size_t max_bytes = SIZE_MAX) {
  frame_list out;
  if (offs.empty())
    return out;
  auto lo = offs.front();
  auto hi = offs.back();
  auto t = cfg.store->db().read();
  if (!t)
    return std::move(t).err();
  auto r
      = storage::read_frames(*t, cfg.queue, cfg.partition, lo,
                             static_cast<std::size_t>(hi - lo + 1), max_bytes);
  if (!r)
    return std::move(r).err();
  // The usual plan is one contiguous run: keep the read as it is.
  if (static_cast<std::int64_t>(offs.size()) == hi - lo + 1)
    return std::move(r->frames);
  out.reserve(offs.size());
  for (auto& f : r->frames)
    if (std::binary_search(offs.begin(), offs.end(), f.off))
      out.push_back(std::move(f));
  return out;
}

/// What a change does to the DLQ besides the cursor record.
struct dlq_changes {
  /// New entries, or requeued entries returning (`dlq_id` set).
  std::vector<core::dead_letter> dead;
  /// Requeued entries acked: removed from the DLQ.
  std::vector<std::uint64_t> done;
  /// Entries now pending requeue (stored with `requeued` set).
  std::vector<std::uint64_t> marked;
};

/// The stored DLQ entry `id` of this cursor's group, or none (gone).
std::optional<storage::dlq_entry> load_entry(const cursor_config& cfg,
                                             std::uint64_t id) {
  auto t = cfg.store->db().read();
  if (!t)
    return std::nullopt;
  auto e = storage::tables::get_dlq(*t, cfg.queue, cfg.group, id);
  if (!e || !*e)
    return std::nullopt;
  return std::move(**e);
}

/// The cursor record plus the DLQ changes, as one batch; `written` gets the
/// failure time of every entry written (for the retention sweep).
storage::write_batch state_batch(const cursor_config& cfg,
                                 const core::cursor_core& core,
                                 const dlq_changes& changes, frame_list& frames,
                                 std::vector<storage::micros>& written) {
  storage::write_batch b;
  b.mutations.emplace_back(storage::mut::put_cursor{cfg.queue, cfg.partition,
                                                    cfg.group, core.record()});
  auto drop = [&] {
    if (cfg.metrics)
      cfg.metrics->dead_letters_dropped += 1;
  };
  for (auto& d : changes.dead) {
    if (d.dlq_id) { // a requeued entry returns (keeping its id)
      auto e = load_entry(cfg, *d.dlq_id);
      if (!e)
        continue; // deleted meanwhile
      if (cfg.policy.drop_dead_letters) {
        drop();
        b.mutations.emplace_back(
            storage::mut::delete_dlq{cfg.queue, cfg.group, e->id});
        continue;
      }
      e->error = d.error;
      e->deliveries += d.deliveries;
      e->failed_at = cfg.wall();
      e->requeued = false;
      written.push_back(e->failed_at);
      // Read, changed and written back: a deletion committed in between
      // must win, so the rewrite applies only while the entry is stored.
      b.mutations.emplace_back(
          storage::mut::update_dlq{cfg.queue, cfg.group, *e});
      continue;
    }
    if (cfg.policy.drop_dead_letters) {
      drop();
      continue;
    }
    storage::dlq_entry e;
    e.id = cfg.store->next_dlq_id();
    e.partition = cfg.partition;
    if (auto* f = find_frame(frames, d.off))
      e.message = *f;
    else
      e.message.off = d.off; // deleted by retention meanwhile
    e.error = d.error;
    e.deliveries = d.deliveries;
    e.failed_at = cfg.wall();
    written.push_back(e.failed_at);
    b.mutations.emplace_back(storage::mut::put_dlq{cfg.queue, cfg.group, e});
  }
  for (auto id : changes.done)
    b.mutations.emplace_back(
        storage::mut::delete_dlq{cfg.queue, cfg.group, id});
  for (auto id : changes.marked)
    if (auto e = load_entry(cfg, id)) {
      e->requeued = true;
      b.mutations.emplace_back(
          storage::mut::update_dlq{cfg.queue, cfg.group, *e});
    }
  return b;
}

/// Builds the batch for `changes` (reading the frames of new dead letters)
/// and writes it; `then` gets the write's error, if any.
template <class F>
void persist(cursor_ptr self, dlq_changes changes, frame_list known, F then) {
  auto& st = self->state;
  std::vector<storage::offset> missing;
  for (auto& d : changes.dead)
    if (!d.dlq_id && !find_frame(known, d.off))
      missing.push_back(d.off);
  if (!missing.empty()) {
    std::sort(missing.begin(), missing.end());
    if (auto more = load_frames(st.cfg, missing)) {
      for (auto& f : *more)
        known.push_back(std::move(f));
      std::sort(known.begin(), known.end(),
                [](auto& a, auto& b) { return a.off < b.off; });
    }
  }
  std::vector<storage::micros> written;
  auto batch = state_batch(st.cfg, *st.core, changes, known, written);
  write_then(self, st.cfg.writer, std::move(batch),
             [self, then = std::move(then), written = std::move(written)](
                 std::optional<api_error> failure) mutable {
               auto watcher
                   = caf::actor_cast<dlq_watcher>(self->state.cfg.watcher);
               if (!failure && watcher)
                 for (auto t : written)
                   self->send(watcher, dead_atom::value, t);
               then(std::move(failure));
             });
}

void arm(cursor_ptr self);

/// Takes the snapshot a change is undone to if its write fails.
cursor_state::undo_point snapshot(cursor_ptr self) {
  return {*self->state.core, self->state.lost_pending};
}

/// Writes the change made to the core since `before` (with `changes`):
/// kept when durable, undone (the core restored to `before`) when the write
/// fails; `then` gets the write's error. Every other message waits.
template <class F>
void commit(cursor_ptr self, cursor_state::undo_point before,
            dlq_changes changes, frame_list known, F then) {
  auto& st = self->state;
  st.before.emplace(std::move(before));
  persist(
      self, std::move(changes), std::move(known),
      [self, then = std::move(then)](std::optional<api_error> failure) mutable {
        auto& st = self->state;
        if (failure) {
          *st.core = std::move(st.before->core);
          st.lost_pending = st.before->lost_pending;
          st.backoff_until = self->clock().now() + st.cfg.write_retry;
          if (st.cfg.metrics)
            st.cfg.metrics->failed_writes += 1;
        } else {
          st.backoff_until.reset();
          st.row_written = true;
        }
        st.before.reset();
        then(failure);
        arm(self);
      });
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
  if (!deadline || (st.armed && *st.armed <= *deadline))
    return;
  st.armed = deadline;
  auto delay
      = std::max(*deadline - self->clock().now(), mono_clock::duration::zero());
  self->delayed_send(self, delay, expire_atom::value, ++st.timer_id);
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

caf::typed_response_promise<pop_reply> on_pop(cursor_ptr self, pop_request& req,
                                              const partition_view& view) {
  auto& st = self->state;
  auto& core = *st.core;
  auto rp = promise_for<pop_reply>(self);
  auto now = self->clock().now();
  auto wall = st.cfg.wall();
  core.note_watermark(view.watermark);
  auto before = snapshot(self);
  auto [expired, dead] = end_due(self, now);
  // The first contact's seed row is written by this pop, whatever it
  // delivers (a restart must not seed the partition again).
  if (st.needs_seed())
    expired = true;
  auto answer = [self, rp, before = std::move(before)](
                    pop_reply reply, bool write,
                    std::vector<core::dead_letter> dead, frame_list frames,
                    std::vector<std::uint64_t> done = {}) mutable {
    if (!write) {
      rp.deliver(std::move(reply));
      return;
    }
    // Nothing of the pop (its lease, its autoAck commit, the expiry
    // it made) stays if its write fails.
    commit(self, std::move(before),
           dlq_changes{std::move(dead), std::move(done), {}}, std::move(frames),
           [rp, reply
                = std::move(reply)](std::optional<api_error> failure) mutable {
             if (failure) {
               reply = pop_reply{};
               reply.failure = std::move(failure);
             }
             rp.deliver(std::move(reply));
           });
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
    auto id = *p->requeued;
    auto granted = core.grant(*p, requeued ? 1 : 0, req.lease_id, now);
    dead.insert(dead.end(), granted.dead.begin(), granted.dead.end());
    pop_reply reply;
    std::vector<std::uint64_t> done;
    if (granted.lease && requeued) {
      delivered_frame m;
      m.frame = std::move(requeued->message);
      m.delivery_count = granted.delivery_counts.front().second;
      m.requeued = id;
      reply.messages.push_back(std::move(m));
      if (req.auto_ack) {
        storage::offset off = granted.lease->range.first;
        done = core::auto_ack(core, *granted.lease, {&off, 1},
                              view.readable_end - 1, now);
      } else {
        reply.lease = granted.lease;
      }
    }
    answer(std::move(reply), true, std::move(dead), {}, std::move(done));
    arm(self);
    return rp.later();
  }
  if (auto* reason = std::get_if<empty_reason>(&planned)) {
    pop_reply reply;
    reply.reason = *reason;
    if (*reason != empty_reason::empty)
      reply.retry_at = core.next_deadline(); // lease expiry or retry delay
    else
      reply.empty_at = view.readable_end - 1;
    answer(std::move(reply), expired, std::move(dead), {});
    arm(self);
    return rp.later();
  }
  auto& plan = std::get<core::delivery_plan>(planned);
  // Only the frames to deliver count against the byte cap; the frames of
  // maxDeliveries dead letters are read by `persist` when it writes them.
  const std::vector<storage::offset>& wanted = plan.deliver;
  // Decoded only up to the byte cap: frames past it end the delivered run
  // as missing ones do (a dead letter past it is read by `persist`).
  auto frames = load_frames(st.cfg, wanted, req.max_bytes);
  if (!frames) {
    pop_reply reply;
    reply.failure = frames.err();
    answer(std::move(reply), expired, std::move(dead), {});
    return rp.later();
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
    pop_reply reply;
    reply.reason = cut.held_back.value_or(empty_reason::empty);
    if (cut.next_change)
      reply.retry_at = mono_of(*cut.next_change, wall, now);
    answer(std::move(reply), expired, std::move(dead), {});
    arm(self);
    return rp.later();
  }
  auto granted = core.grant(plan, n, req.lease_id, now);
  dead.insert(dead.end(), granted.dead.begin(), granted.dead.end());
  pop_reply reply;
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
  }
  if (reply.messages.empty())
    reply.reason = empty_reason::empty;
  answer(std::move(reply), true, std::move(dead), std::move(*frames));
  arm(self);
  return rp.later();
}

caf::typed_response_promise<std::vector<ack_reply>>
on_ack(cursor_ptr self, std::vector<ack_request>& reqs,
       const partition_view& view) {
  auto& st = self->state;
  auto rp = promise_for<std::vector<ack_reply>>(self);
  auto now = self->clock().now();
  std::vector<ack_reply> replies;
  dlq_changes changes;
  bool changed = false;
  replies.reserve(reqs.size());
  st.core->note_watermark(view.watermark);
  auto before = snapshot(self);
  for (auto& req : reqs) {
    auto out = st.core->ack(req, view.readable_end - 1, now);
    changed = changed || out.changed;
    if (out.dead)
      changes.dead.push_back(*out.dead);
    if (out.requeue_done)
      changes.done.push_back(*out.requeue_done);
    replies.push_back(ack_reply{out.error, out.lease_released,
                                out.dead.has_value(), std::nullopt});
  }
  // A lease that ended has its overdue frames judged now.
  if (judge_overdue(self, changes.dead))
    changed = true;
  if (!changed) {
    rp.deliver(std::move(replies));
    return rp.later();
  }
  // One write for the whole list; every changed item waits for it, and
  // none of them stays if it fails.
  commit(self, std::move(before), std::move(changes), {},
         [rp, replies
              = std::move(replies)](std::optional<api_error> failure) mutable {
           if (failure) // nothing of the list happened
             for (auto& r : replies) {
               r.failure = failure;
               r.lease_released = false;
               r.dead_lettered = false;
             }
           rp.deliver(std::move(replies));
         });
  return rp.later();
}

void on_expire(cursor_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.timer_id)
    return; // superseded by an earlier deadline
  st.armed.reset();
  auto now = self->clock().now();
  if (st.backoff_until && now < *st.backoff_until) {
    arm(self); // a failed write is retried at the backoff
    return;
  }
  auto before = snapshot(self);
  auto [changed, dead] = end_due(self, now);
  // A failed write is undone and retried after `write_retry` (commit).
  if (changed)
    commit(self, std::move(before), dlq_changes{std::move(dead), {}, {}}, {},
           [](std::optional<api_error>) {});
  else
    arm(self);
}

/// Requeues entries of this partition; pending ones count as requeued
/// (idempotent), so a partial failure can be retried.
caf::typed_response_promise<dlq_count_reply>
on_requeue(cursor_ptr self, const std::vector<storage::dlq_entry>& entries) {
  auto& st = self->state;
  auto rp = promise_for<dlq_count_reply>(self);
  dlq_changes changes;
  std::size_t count = 0;
  std::size_t full = 0; // left in the DLQ: max_requeued are pending
  auto before = snapshot(self);
  using result = core::cursor_core::requeue_result;
  for (auto& e : entries) {
    if (e.partition != st.cfg.partition)
      continue;
    switch (st.core->requeue(e.id, e.message.off)) {
    case result::added:
      changes.marked.push_back(e.id);
      ++count;
      break;
    case result::pending:
      ++count;
      break;
    case result::full:
      ++full;
    }
  }
  if (changes.marked.empty()) {
    rp.deliver(dlq_count_reply{count, std::nullopt, full});
    return rp.later();
  }
  commit(self, std::move(before), std::move(changes), {},
         [rp, count, full](std::optional<api_error> failure) mutable {
           if (failure)
             rp.deliver(dlq_count_reply{0, std::move(failure), 0});
           else
             rp.deliver(dlq_count_reply{count, std::nullopt, full});
         });
  return rp.later();
}

/// What introspection shows of this cursor.
cursor_info describe(cursor_ptr self, const partition_view& view) {
  auto& st = self->state;
  auto& core = *st.core;
  cursor_info info;
  info.group = st.cfg.group;
  info.committed = core.committed();
  info.last_offset = view.readable_end - 1;
  info.watermark = view.watermark;
  auto [consumed, lag]
      = core::lag_of(info.committed, view.watermark, info.last_offset);
  info.lag = lag;
  if (info.lag > 0) {
    // The oldest frame not committed: its segment's one commit time.
    if (auto t = st.cfg.store->db().read()) {
      auto r = storage::read_frames(*t, st.cfg.queue, st.cfg.partition,
                                    consumed + 1, 1);
      if (r && !r->frames.empty())
        info.oldest_unconsumed_at = r->frames.front().created_at;
    }
  }
  auto now = self->clock().now();
  if (auto lease = core.live_lease(now)) {
    info.lease_expires_at = wall_of(lease->expires, now, st.cfg.wall());
    info.lease = std::move(lease);
  }
  info.isolated = core.isolated();
  info.redeliveries = core.redeliveries();
  info.last_activity = core.last_activity();
  return info;
}

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
    reply.replies.push_back(ack_reply{out.error, out.lease_released,
                                      out.dead.has_value(), std::nullopt});
  if (!acks.changed)
    return reply; // idempotent acks only: nothing to hold or write
  dlq_changes changes;
  changes.dead = acks.dead;
  for (auto& out : acks.outcomes)
    if (out.requeue_done)
      changes.done.push_back(*out.requeue_done);
  std::vector<storage::offset> dead;
  for (auto& d : acks.dead)
    if (!d.dlq_id) // new dead letters need their frames
      dead.push_back(d.off);
  std::sort(dead.begin(), dead.end());
  auto frames = load_frames(st.cfg, dead);
  if (!frames) {
    reply.failure = frames.err();
    return reply;
  }
  std::vector<storage::micros> written;
  reply.batch = state_batch(st.cfg, acks.after, changes, *frames, written);
  reply.stage_id = next_stage_id();
  st.staged.emplace(cursor_state::staged_txn{reply.stage_id, std::move(acks),
                                             std::move(written)});
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
  reply.stage_id = next_stage_id();
  st.staged.emplace(cursor_state::staged_txn{
      reply.stage_id, std::nullopt, {}, reply.after, wall});
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

void on_settle(cursor_ptr self, std::uint64_t id, bool commit) {
  auto& st = self->state;
  if (!st.staged || st.staged->id != id)
    return;
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
    // Dead letters written by the transaction arm the DLQ retention sweep.
    if (auto watcher = caf::actor_cast<dlq_watcher>(st.cfg.watcher))
      for (auto t : st.staged->written)
        self->send(watcher, dead_atom::value, t);
  }
  st.staged.reset();
  arm(self);
}

cursor_actor::behavior_type cursor(cursor_ptr self, cursor_config cfg,
                                   storage::cursor_record rec, bool lost,
                                   bool fresh, std::optional<held_seek> held) {
  self->state.cfg = std::move(cfg);
  self->state.fresh = fresh;
  self->state.core.emplace(std::move(rec), self->state.cfg.policy);
  self->state.core->note_watermark(self->state.cfg.watermark);
  if (held) // the seek resets the lost lease; only its abort would recover
    self->state.staged.emplace(cursor_state::staged_txn{
        held->id, std::nullopt, {}, held->to, held->wall, lost});
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
              ack_reply{ack_error::invalid_lease, false, false, std::nullopt});
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
                 arm(self);
                 rp.deliver(std::move(done));
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
      [self](delete_atom,
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
        auto t = st.cfg.store->db().read();
        if (!t)
          return delete_vote{true, false}; // cannot tell: count it
        auto rec = storage::tables::get_cursor(*t, st.cfg.queue,
                                               st.cfg.partition, st.cfg.group);
        return delete_vote{!rec || rec->has_value(), false};
      },
      [self](release_atom, const std::string& lease_id) -> caf::result<bool> {
        if (self->state.busy())
          return caf::skip; // the staged core would bring the lease back
        auto rp = promise_for<bool>(self);
        auto before = snapshot(self);
        if (self->state.deleting
            || !self->state.core->release_unwritten(lease_id)) {
          rp.deliver(false);
          return rp.later();
        }
        // Not written: the lease stays and ends as an expiry would.
        commit(self, std::move(before), {}, {},
               [rp](std::optional<api_error> failure) mutable {
                 rp.deliver(!failure);
               });
        return rp.later();
      },
      [self](delete_atom, bool durable) {
        if (durable) {
          self->quit();
          return;
        }
        // The deletion failed: serve again, with a fresh timer (expiries
        // that fired meanwhile were ignored).
        auto& st = self->state;
        st.deleting = false;
        st.armed.reset();
        ++st.timer_id;
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
      [self](settle_atom, std::uint64_t id, bool commit) {
        on_settle(self, id, commit);
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
  };
}

} // namespace

expected<void> cursor_config::validate() const {
  if (store == nullptr)
    return make_error(errc::invalid_argument, "cursor: no store");
  if (!writer)
    return make_error(errc::invalid_argument, "cursor: no writer");
  if (!wall)
    return make_error(errc::invalid_argument, "cursor: no wall clock");
  if (group.empty())
    return make_error(errc::invalid_argument, "cursor: empty group name");
  return {};
}

expected<cursor_actor>
spawn_cursor(caf::local_actor* parent, cursor_config cfg,
             std::optional<storage::cursor_record> stored,
             std::optional<held_seek> held) {
  SPOOL_TRY(cfg.validate());
  bool existed = stored.has_value();
  storage::cursor_record initial;
  initial.committed = cfg.initial_committed;
  auto record = existed ? std::move(*stored) : initial;
  bool lost = existed
              && (record.leased.has_value()
                  || std::any_of(record.requeued.begin(), record.requeued.end(),
                                 [](auto& r) { return r.leased; }));
  return parent->spawn<caf::linked>(cursor, std::move(cfg), std::move(record),
                                    lost, !existed, held);
}

} // namespace spool::actors
