#pragma once

/// The partition log: the append side (`partition_log`, owned by exactly one
/// thread or actor per partition) and the read side (free functions over a
/// read transaction: reads across segments, the timestamp walk, retention
/// planning). Reads see only committed, i.e. durable, segments.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "storage/mutation.hpp"
#include "storage/records.hpp"
#include "storage/segment.hpp"

namespace spool::storage {

/// How frames are cut into segments (semantics.md §1).
struct segment_limits {
  std::size_t max_frames = 1000;
  std::size_t max_bytes = std::size_t{1} << 20;
};

/// The outcome of appending one frame.
struct frame_result {
  enum status_t : std::uint8_t { queued, duplicate } status = queued;
  /// The frame's offset, or the original's for a duplicate.
  offset off;
};

/// Frames sealed into segments, waiting for their commit.
struct sealed_append {
  /// One append_segment per segment, plus an expect_dedup guard for each
  /// duplicate of an id still in flight (its answer holds only if the
  /// original commits: commit the batches in seal order).
  std::vector<mutation> mutations;
  std::vector<frame_result> results;
  offset first; ///< first offset assigned (== next when all duplicates)
  offset next;  ///< next offset after this append
  micros created_at = 0;
  std::vector<std::string> pending_ids;
};

/// Append state of one partition. Not thread-safe: one owner serializes
/// seal/durable/failed (the partition actor later).
class partition_log {
public:
  partition_log(partition_record rec, segment_limits seg = {},
                frame_limits frames = {});

  /// The durable state readers may use: the record advanced over the
  /// contiguous prefix of settled seals. `record().next_offset` is the
  /// readable end: a seal committed before an earlier one still in flight
  /// stays invisible until that one settles (see `durable`).
  const partition_record& record() const noexcept {
    return durable_;
  }
  /// The next offset to assign (durable plus sealed in flight).
  offset next_offset() const noexcept {
    return next_;
  }

  /// Validates `frames`, answers duplicates of client-given ids (stored ones
  /// within `dedup_window_s` of `now`, 0 = while retained, and ones in
  /// flight), assigns dense offsets and one `created_at = max(now, last)`,
  /// and encodes the rest into segments. Nothing changes on error.
  expected<sealed_append> seal(txn& read, std::span<const frame> frames,
                               micros now, segment_encoder& enc,
                               std::int64_t dedup_window_s = 0);
  /// The sealed append is durable. Seals may become durable out of order
  /// (a multi-partition batch can wait for another partition); the record
  /// advances only over the settled prefix, in seal order.
  void durable(const sealed_append& s);
  /// The sealed append's commit failed (or its push was refused after
  /// sealing): its ids are forgotten. Its offsets are given back when no
  /// seal after it is durable and every seal after it failed too (the next
  /// seal reuses them, offsets stay dense); otherwise they stay a gap, never
  /// reused while this log lives.
  void failed(const sealed_append& s);
  /// The sealed append's outcome is unknown (the writer could not answer):
  /// as `failed`, but its offsets are never given back (it may be stored).
  void lost(const sealed_append& s);
  /// Seals neither durable nor failed yet.
  std::size_t in_flight() const noexcept {
    return static_cast<std::size_t>(
        std::count_if(order_.begin(), order_.end(), [](const auto& ps) {
          return ps.state == pending_seal::in_flight;
        }));
  }
  /// Retention or purge committed: moves the durable watermark.
  void watermark_moved(offset watermark);

private:
  partition_record durable_;
  segment_limits seg_;
  frame_limits frames_;
  offset next_;
  micros last_stamp_ = 0;
  /// Client ids sealed but not yet durable.
  std::unordered_map<std::string, offset> in_flight_;
  /// Seals with stored frames, in seal order, until their prefix settles.
  struct pending_seal {
    offset first;
    enum state_t : std::uint8_t { in_flight, durable, failed } state;
    std::vector<mut::append_segment> segments; ///< without their bytes
    bool keep_gap = false; ///< failed, outcome unknown: never given back
  };
  std::deque<pending_seal> order_;
  void settle(const sealed_append& s, pending_seal::state_t outcome,
              bool give_back = true);
};

/// Frames read from a partition.
struct read_result {
  std::vector<stored_frame> frames;
  /// Where the next read continues.
  offset next;
  /// Offsets below the watermark the read jumped over (retention gap).
  std::optional<std::pair<offset, offset>> skipped;
};

/// Reads frames with offset >= `from`, at most `max_frames`, stopping before
/// `max_bytes` of payload (at least one frame), across segment boundaries.
/// Below the watermark the read resumes at the oldest retained offset.
/// Errors: unknown partition, offset negative or beyond the next offset,
/// corrupt segment (naming partition and offset).
expected<read_result> read_frames(txn& t, queue_id q, partition_id p,
                                  offset from, std::size_t max_frames,
                                  std::size_t max_bytes = SIZE_MAX);

/// The frame whose transactionId is `txid` in the readable range
/// [watermark, end) of partition `rec`, found without a scan: a generated id
/// is its message id and names its offset (vocab/message_id.hpp), a
/// client-given one is in the dedup index. None: no such frame retained
/// (also when the index points at a frame that has another id now).
expected<std::optional<stored_frame>> find_frame(txn& t,
                                                 const partition_record& rec,
                                                 offset end,
                                                 std::string_view txid);

/// The timestamp walk via the time index, O(log segments): `base - 1` of the
/// first retained segment with `created_at >= ts` (lowest base on ties), or
/// the last offset when none is that recent.
expected<offset> resolve_timestamp(txn& t, queue_id q, partition_id p,
                                   micros ts);

/// Where a group's cursor starts on a partition it meets for the first time
/// (semantics.md §5): `all` just below the watermark; `new` and `timestamp`
/// by the walk from the record's timestamp (`resolve_timestamp`).
expected<offset> first_contact(txn& t, queue_id q, partition_id p,
                               const subscription_record& rec);

/// The same rule as a plain forward walk over the segments from the
/// watermark (the reference the index is tested against).
expected<offset> resolve_timestamp_by_walk(txn& t, queue_id q, partition_id p,
                                           micros ts);

/// Which segments a retention step may delete: oldest first, each only if
/// created before `created_before` and ending at or below `through`.
struct retention_rule {
  micros created_before = INT64_MAX;
  offset through{INT64_MAX};
  std::size_t max_segments = 64; ///< bound of one step
  /// Bytes of segments one step deletes at most, but its first segment's
  /// (each deleted segment is kept in the slot log until trimmed).
  std::size_t max_bytes = std::size_t{64} << 20;
  /// Traces one step deletes at most (each with up to 32 name entries),
  /// but for its first segment's (`traces::traces_end`).
  std::size_t max_traces = 10'000;
};

/// Plans one bounded retention step: the delete_segments mutation, or
/// nothing when no segment qualifies.
expected<std::optional<mut::delete_segments>>
plan_retention(txn& t, queue_id q, partition_id p, const retention_rule& rule);

} // namespace spool::storage
