#pragma once

// The cursor actor's state and the pieces its files share (internal to
// actors/cursor/): cursor_actor.cpp holds the behaviour, its reads and
// writes (frames, DLQ entries, the record's batch), the timer and
// retention; cursor_pop.cpp pops; cursor_settle.cpp acks, expiry, requeues
// and introspection; cursor_stage.cpp transaction and seek stages.
// `commit` is here: every file writes through it.

#include "actors/cursor/cursor_actor.hpp"
#include "actors/promise.hpp"
#include "actors/write.hpp"
#include "core/cursor/delivery.hpp"
#include "core/dlq/dead_letters.hpp"
#include "core/queue/one_timer.hpp"
#include "storage/tables.hpp"
#include <algorithm>
#include <atomic>
#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>
#include <caf/result.hpp>
#include <caf/skip.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

namespace spool::actors::cursor_detail {

struct cursor_state {
  static inline const char* name = "spool.cursor";
  cursor_config cfg;
  std::optional<core::cursor_core> core;
  /// The deadline the pending timer fires at, and its id.
  core::one_timer<mono_time> timer;
  /// The group is being deleted: serve nothing until it settles.
  bool deleting = false;
  /// A transaction's staged acks, a seek's new position or a claim, until
  /// settled (at most one: everything else waits).
  struct staged_txn {
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
    /// A parked pop's claim on a push (`on_claim`): the core holds its
    /// lease, `before` what an abort restores.
    bool claim = false;
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

/// Passivation: nothing here but what its stored row holds (no lease, no
/// stage or write in flight, no timer, nothing owed to the store), so a
/// cursor spawned from the row later is the same.
inline bool holds_only_its_row(const cursor_state& st) {
  if (st.busy() || st.deleting || st.timer.armed() || st.backoff_until
      || st.lost_pending || st.needs_seed())
    return false;
  return !st.core || (!st.core->lease() && !st.core->next_deadline());
}

using cursor_ptr = cursor_actor::stateful_pointer<cursor_state>;

/// What a change does to the DLQ besides the cursor record (the rule:
/// `core/dlq/dead_letters.hpp`).
using core::dlq_changes;

using core::find_frame;
using core::frame_list;

// -- shared between the files -------------------------------------------------

expected<frame_list> load_frames(const cursor_config& cfg,
                                 const std::vector<storage::offset>& offs,
                                 std::size_t max_bytes = SIZE_MAX);

/// `known` plus the frames of the new dead letters of `dead` it lacks,
/// read in one transaction, sorted by offset (a DLQ entry copies its frame).
expected<frame_list>
with_dead_frames(const cursor_config& cfg,
                 const std::vector<core::dead_letter>& dead, frame_list known);

/// Tells the DLQ watcher of dead letters written at `failed_at` (they arm
/// its retention sweep).
void tell_dead(cursor_ptr self, const std::vector<storage::micros>& failed_at);

storage::write_batch state_batch(const cursor_config& cfg,
                                 const core::cursor_core& core,
                                 const dlq_changes& changes, frame_list& frames,
                                 std::vector<storage::micros>& written);

cursor_state::undo_point snapshot(cursor_ptr self);

void restore(cursor_ptr self, cursor_state::undo_point& before);

bool judge_overdue(cursor_ptr self, std::vector<core::dead_letter>& dead);

void arm(cursor_ptr self);

std::pair<bool, std::vector<core::dead_letter>> end_due(cursor_ptr self,
                                                        mono_time now);

cursor_actor::behavior_type cursor(cursor_ptr self, cursor_config cfg,
                                   storage::cursor_record rec, bool lost,
                                   bool fresh, std::optional<held_seek> held);

caf::result<pop_reply> on_pop(cursor_ptr self, pop_request& req,
                              const partition_view& view);

/// Stages a parked pop on `sealed` (frames of a push in flight, the view's
/// readable end past them): a claim_reply with stage 0 when it declines
/// (busy, nothing to deliver, or more to write than the lease).
claim_reply on_claim(cursor_ptr self, const pop_request& req,
                     const partition_view& view,
                     std::vector<storage::stored_frame>& sealed);

caf::result<std::vector<ack_reply>> on_ack(cursor_ptr self,
                                           std::vector<ack_request>& reqs,
                                           const partition_view& view);

void on_expire(cursor_ptr self, std::uint64_t id);

caf::result<dlq_count_reply>
on_requeue(cursor_ptr self, const std::vector<storage::dlq_entry>& entries);

cursor_info describe(cursor_ptr self, const partition_view& view);

stage_reply on_stage(cursor_ptr self, const std::vector<ack_request>& reqs,
                     const partition_view& view);

seek_stage on_seek(cursor_ptr self, const cursor_seek& req,
                   const partition_view& view);

api_error being_deleted();

void recover_lost(cursor_ptr self);

/// Tells the writer of what this cursor just staged as its part (`kind`:
/// `part_key::stage_part` or `seek_part`), and returns it.
part_ref hold_part(cursor_ptr self, std::int64_t kind);

/// The writer (or, for a seek held by the partition before this cursor
/// existed, the partition) settled what is staged.
void on_settled(cursor_ptr self, core::part_outcome outcome);

/// Writes the change made to the core since `before` (with `changes`, the
/// frames of new dead letters read unless `known` has them): kept when
/// durable, undone (the core restored to `before`) when the read or the
/// write fails; `then` gets the error. Every other message waits.
template <class F>
void commit(cursor_ptr self, cursor_state::undo_point before,
            dlq_changes changes, frame_list known, F then) {
  auto& st = self->state;
  st.before.emplace(std::move(before));
  std::vector<storage::micros> written;
  auto frames = with_dead_frames(st.cfg, changes.dead, std::move(known));
  storage::write_batch batch;
  if (frames)
    batch = state_batch(st.cfg, *st.core, changes, *frames, written);
  auto settle = [self, then = std::move(then), written = std::move(written)](
                    std::optional<api_error> failure) mutable {
    auto& st = self->state;
    if (failure) {
      restore(self, *st.before);
      st.backoff_until = self->clock().now() + st.cfg.write_retry;
      if (st.cfg.metrics)
        st.cfg.metrics->failed_writes += 1;
    } else {
      st.backoff_until.reset();
      st.row_written = true;
      tell_dead(self, written);
    }
    st.before.reset();
    then(failure);
    arm(self);
  };
  if (!frames)
    return settle(frames.err());
  write_then(self, st.cfg.writer, st.cfg.term, std::move(batch),
             std::move(settle));
}

} // namespace spool::actors::cursor_detail
