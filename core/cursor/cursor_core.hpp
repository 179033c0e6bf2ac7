#pragma once

/// The cursor of one consumer group on one partition, as a pure state
/// machine (semantics.md §3–4): committed position, the one lease in flight,
/// acks, retries, delivery and failure counts, isolation after a multi-frame
/// expiry, dead-lettering, seek. No CAF, no storage access: the cursor actor
/// feeds it `now`, the partition's watermark and visible range, and persists
/// `record()` after every change that returns `changed`.
///
/// Delivery is two steps because the partition reads the frames in between:
/// `plan` says which offsets to deliver (and which to dead-letter because of
/// maxDeliveries); the partition reads them, may cut the tail by bytes, and
/// `grant` takes the lease on what is actually delivered.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "storage/error.hpp"
#include "storage/records.hpp"
#include "vocab/delivery.hpp"

namespace spool::core {

/// The queue options the cursor obeys.
struct cursor_policy {
  milliseconds lease_time{300'000};
  std::int64_t retry_limit = 3;
  milliseconds retry_delay{0};
  std::vector<milliseconds> retry_backoff;
  std::int64_t max_deliveries = 0; ///< 0 = unlimited
  /// `deadLetterQueue=false` and `dlqAfterMaxRetries=false` (both given):
  /// dead letters are dropped (counted) instead of stored.
  bool drop_dead_letters = false;
  /// The most one extend adds (`lease.maxExtendSeconds`, a node setting).
  milliseconds max_extend{3'600'000};

  static cursor_policy from(const storage::queue_options& opts);
};

/// A frame the cursor sends to the group's dead-letter queue.
struct dead_letter {
  offset off;
  std::string error;
  std::uint32_t deliveries = 0;
  std::uint32_t failures = 0;
  /// A requeued entry returning to the DLQ: the entry to update (it keeps
  /// its id) instead of a new one.
  std::optional<std::uint64_t> dlq_id;
};

/// The DLQ side of one cursor write (written by `core/dlq`).
struct dlq_changes {
  /// New entries, or requeued entries returning (`dlq_id` set).
  std::vector<dead_letter> dead;
  /// Requeued entries acked: removed from the DLQ.
  std::vector<std::uint64_t> done;
  /// Entries now pending requeue (stored with `requeued` set).
  std::vector<std::uint64_t> marked;
};

/// What a pop should deliver.
struct delivery_plan {
  /// Offsets to deliver, in order (never empty in a plan).
  std::vector<offset> deliver;
  /// Offsets past maxDeliveries: dead-lettered instead of delivered.
  std::vector<offset> dead;
  /// Offsets below the retention watermark the cursor jumps over.
  std::optional<offset_range> skipped;
  /// A requeued dead letter (its DLQ id): `deliver` (or, past
  /// maxDeliveries, `dead`) holds its offset alone.
  std::optional<std::uint64_t> requeued;
};

/// A granted lease with the delivery count of each delivered frame.
struct grant_result {
  std::optional<lease_info> lease; ///< none when everything was dead
  std::vector<std::pair<offset, std::uint32_t>> delivery_counts;
  std::vector<dead_letter> dead;
};

/// An ack's request fields in range: `delayMs` 0..max_ack_delay
/// (`invalid_argument` naming the field otherwise).
expected<void> check_ack(const ack_request& req);

struct ack_outcome {
  ack_error error = ack_error::none;
  bool changed = false;        ///< the record must be persisted
  bool lease_released = false; ///< the ack ended the lease
  /// Frames this ack made done, completed or dead-lettered (a repeat: 0;
  /// an upTo: every frame it completed).
  std::uint32_t settled = 0;
  std::optional<dead_letter> dead;
  /// A requeued entry completed: its DLQ entry is removed.
  std::optional<std::uint64_t> requeue_done;
};

/// How far a group is behind on a partition (api.md `offsetLag`): the frames
/// after what it consumed — its committed, or what retention deleted past
/// it (`watermark - 1`) — up to the partition's last offset; never negative.
struct lag_info {
  offset consumed;
  std::int64_t lag = 0;
};
lag_info lag_of(offset committed, offset watermark, offset last_offset);

class cursor_core {
public:
  cursor_core(storage::cursor_record rec, cursor_policy policy);

  // -- inspection -------------------------------------------------------------

  /// The durable state (what a restart recovers).
  storage::cursor_record record() const;
  offset committed() const noexcept {
    return committed_;
  }
  std::uint64_t lease_epoch() const noexcept {
    return epoch_;
  }
  const std::optional<lease_info>& lease() const noexcept {
    return lease_;
  }
  const std::optional<offset_range>& isolated() const noexcept {
    return isolated_;
  }
  /// The lease if it is live at `now` (not yet expired).
  std::optional<lease_info> live_lease(mono_time now) const {
    if (lease_ && lease_->expires > now)
      return lease_;
    return std::nullopt;
  }
  /// Frames above committed delivered more than once.
  std::size_t redeliveries() const;
  /// Frames above committed already done (acked or dead-lettered while an
  /// earlier frame is not), from offset `from` on (the watermark).
  std::size_t done_above(offset from) const;
  /// Frames at or above `from` (the watermark) the lease live at `now`
  /// delivered and not settled yet (a requeued dead letter's lease: none,
  /// it is not one of the partition's pending frames).
  std::size_t in_flight(mono_time now, offset from) const;
  /// Failures of the head frame (the product document's "retry budget").
  std::uint32_t head_failures() const;
  std::uint32_t deliveries_of(offset off) const;
  /// Dead letters requeued to this group and not acked yet, in requeue
  /// order (the first is delivered next).
  const std::vector<storage::requeued_frame>& requeued() const noexcept {
    return requeued_;
  }
  /// The next time something changes by itself (lease expiry, retry delay).
  std::optional<mono_time> next_deadline() const;
  void set_policy(cursor_policy policy) {
    policy_ = std::move(policy);
  }
  /// Wall-clock µs of the group's last pop, ack, extend or seek here.
  storage::micros last_activity() const noexcept {
    return last_activity_;
  }
  /// Records activity at `wall` (kept in the durable record).
  void touch(storage::micros wall) noexcept {
    last_activity_ = std::max(last_activity_, wall);
  }

  // -- delivery ---------------------------------------------------------------

  /// Which offsets a pop may deliver: from the first offset above committed
  /// that is not done (and not below `watermark`) to `last_visible`, at most
  /// `max_frames` (one while isolated).
  std::variant<delivery_plan, empty_reason> plan(mono_time now,
                                                 offset watermark,
                                                 offset last_visible,
                                                 std::size_t max_frames) const;

  /// Takes the lease on `delivered` (a prefix of plan.deliver, possibly
  /// shorter after a byte cap) and dead-letters plan.dead. Always changes the
  /// record.
  grant_result grant(const delivery_plan& plan, std::size_t delivered,
                     std::string lease_id, mono_time now);

  /// The transaction ids of the frames the last grant delivered, in its
  /// order (hashed with `txid_hash`): what an ack naming a frame by
  /// transactionId resolves against until the next grant.
  void note_lease_txids(std::vector<std::uint64_t> hashes);
  /// The frame of the last lease with this transaction id, if any.
  std::optional<offset> frame_of(std::string_view transaction_id) const;
  static std::uint64_t txid_hash(std::string_view transaction_id) noexcept;

  /// The response carrying the lease could not be written: the lease ends at
  /// once, its deliveries are not counted, nothing is charged.
  bool release_unwritten(const std::string& lease_id);

  // -- settlement -------------------------------------------------------------

  /// Settles one frame (semantics.md §4). `last_offset` tells unknown frames
  /// apart. Errors change nothing.
  ack_outcome ack(const ack_request& req, offset last_offset, mono_time now);

  /// Ends the lease if it expired at `now`: one unsettled frame is charged,
  /// several are isolated. Returns whether the record changed and any frame
  /// dead-lettered by the charge.
  std::pair<bool, std::vector<dead_letter>> expire(mono_time now);

  /// After a restart: a lease recorded in the record was lost; ends it as an
  /// expiry would.
  std::pair<bool, std::vector<dead_letter>> recover_lost_lease();

  /// New expiry = max(current, now + by); `by` is 1 s..policy.max_extend.
  std::variant<mono_time, extend_error> extend(const std::string& lease_id,
                                               milliseconds by, mono_time now);

  /// Sets committed (backwards too), ends the lease, bumps the epoch, resets
  /// failures, delivery counts, isolation and retry delays. Pending
  /// requeued entries stay pending (they belong to the DLQ, not to a
  /// position).
  void seek(offset new_committed);

  /// The durable state after `seek(new_committed)` and `touch(wall)`,
  /// without changing (or copying) this core: what a staged seek writes.
  storage::cursor_record record_after_seek(offset new_committed,
                                           storage::micros wall) const;

  // -- requeued dead letters --------------------------------------------------

  /// Requeues DLQ entry `dlq_id` (the frame at `off`): delivered again, alone
  /// in its lease, before any new frame once the current lease ends.
  /// `pending`: it was already (nothing changes); `full`: `max_requeued`
  /// are pending (nothing changes; a later requeue takes it).
  enum class requeue_result : std::uint8_t { added, pending, full };
  requeue_result requeue(std::uint64_t dlq_id, offset off);
  /// Requeued entries pending per cursor at most: each is in the cursor's
  /// record, which every change rewrites, so the cap bounds that write.
  static constexpr std::size_t max_requeued = 1'000;

  /// Forgets a pending requeue whose DLQ entry is gone (deleted or expired
  /// meanwhile); not while it is leased. Returns whether it changed.
  bool drop_requeued(std::uint64_t dlq_id);

  // -- retention (semantics.md §7) --------------------------------------------

  /// The partition's retention watermark as last seen: frames below it are
  /// deleted. Unsettled frames of a lease that were deleted under it count
  /// as completed when the lease ends (expiry, `failed`, `retry`).
  void note_watermark(offset watermark) noexcept {
    watermark_ = std::max(watermark_, watermark);
  }
  /// maxWaitTimeSeconds: every frame at or below `through` is overdue.
  void set_overdue(offset through) noexcept {
    overdue_ = std::max(overdue_, through);
  }
  /// Dead-letters ("maxWaitTimeSeconds exceeded") up to `max` overdue frames
  /// the group has not consumed: above committed and the watermark, not
  /// done, not exempted by a seek. Frames of the live lease wait: they are
  /// judged when it ends (the next call after it).
  std::vector<dead_letter> judge_overdue(std::size_t max);

private:
  storage::frame_counters& counters(offset off);
  bool is_done(offset off) const;
  /// Moves committed over the contiguous prefix of done frames.
  void advance();
  /// Ends the lease; the unsettled frames wait `delay` before redelivery.
  void end_lease(mono_time now, milliseconds delay);
  /// failures + 1 on `off`; dead-letters it past the retry limit.
  std::optional<dead_letter> charge(offset off, const std::string& error);
  /// Marks `off` dead-lettered (done).
  dead_letter bury(offset off, std::string error);
  std::vector<offset> unsettled_in_lease() const;
  /// The counters of `off`, or null.
  const storage::frame_counters* find_counters(offset off) const;
  /// `off`'s index in lease_offsets_, if the live lease delivered it.
  std::optional<std::size_t> lease_index(offset off) const;
  milliseconds retry_delay_for(std::uint32_t failures) const;
  storage::requeued_frame* find_requeued(std::uint64_t dlq_id);
  /// Settles an ack of the live requeue lease's frame.
  ack_outcome ack_requeued(const ack_request& req, mono_time now);
  /// A cumulative ack (`ack_request::up_to`): the live lease's frames at or
  /// below `up_to`, completed. No frame of the lease there: not_in_lease.
  ack_outcome ack_through(offset up_to, offset last_offset, mono_time now);
  /// The live lease's frame at `idx` completed.
  void complete(std::size_t idx);
  /// After an ack settled frames: the lease ends when none is left, and
  /// committed advances.
  void end_if_settled(ack_outcome& out, mono_time now);
  /// failures + 1 on a requeued entry; past the retry limit it returns.
  std::optional<dead_letter> charge_requeued(std::uint64_t dlq_id,
                                             const std::string& error);
  /// Removes a pending entry, returning it to the DLQ.
  dead_letter return_requeued(std::uint64_t dlq_id, std::string error);
  /// Marks the live lease's unsettled frames below the watermark done (they
  /// were deleted under it: they count as completed).
  void settle_deleted();

  cursor_policy policy_;
  offset committed_;
  std::uint64_t epoch_ = 0;
  std::optional<offset_range> isolated_;
  std::optional<offset_range> leased_; ///< durable copy of the lease range
  /// Counters of frames above committed, ascending by offset (mostly
  /// appended at the back and dropped at the front, as committed advances).
  std::deque<storage::frame_counters> counters_;
  storage::micros last_activity_ = 0;
  std::optional<lease_info> lease_;
  /// The frames the live lease delivered, in order.
  std::vector<offset> lease_offsets_;
  /// The txid hashes of the frames the last grant delivered. Shared
  /// and never changed once made (a grant makes a new list), so the undo
  /// snapshot every pop and ack list takes copies a pointer, not the list.
  struct lease_txid_list {
    std::vector<std::uint64_t> hashes; ///< txid hashes, in delivery order
    std::vector<offset> offsets;       ///< the frame of each
    /// (hash, position) sorted: made at the first lookup (frame_of).
    mutable std::vector<std::pair<std::uint64_t, std::size_t>> index = {};
  };
  std::shared_ptr<const lease_txid_list> lease_txids_;
  /// Per frame of the live lease (by index in lease_offsets_): settled.
  std::vector<bool> settled_;
  /// Frames of the live lease not settled yet (the lease ends at zero).
  std::size_t unsettled_ = 0;
  /// Redelivery waits until then (retry delay).
  std::optional<mono_time> not_before_;
  /// Requeued dead letters pending redelivery (durable).
  std::vector<storage::requeued_frame> requeued_;
  /// Retention, in memory (the partition tells it again after a restart):
  /// the watermark last seen, the maxWait boundary, and the boundary at the
  /// last seek (frames at or below it were asked for again: not judged).
  offset watermark_{0};
  offset overdue_{-1};
  offset exempt_{-1};
};

} // namespace spool::core
