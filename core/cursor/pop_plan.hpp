#pragma once

/// A cursor's pop as one rule (semantics.md §3–4, §7): end what is due,
/// plan on the core, deliver a requeued dead letter from its DLQ entry,
/// read, cut (byte cap, visibility), then grant a lease or autoAck. The
/// caller supplies the reads and writes what the outcome says before it
/// answers. No CAF, no LMDB: reads come through the two functions given.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cursor/cursor_core.hpp"
#include "core/cursor/delivery.hpp"
#include "core/partition/visibility.hpp"
#include "storage/error.hpp"
#include "storage/log.hpp"
#include "vocab/errors.hpp"
#include "vocab/time.hpp"

namespace spool::core {

/// A pop on one partition for one group.
struct pop_request {
  std::string group;
  std::size_t batch = 1;
  std::size_t max_bytes = SIZE_MAX;
  /// Chosen by the caller: one wildcard pop shares it across partitions.
  std::string lease_id;
  bool auto_ack = false;
};

/// A message as a pop delivers it.
struct delivered_frame {
  storage::stored_frame frame;
  std::uint32_t delivery_count = 0;
  /// A requeued dead letter (`requeued: true`): its DLQ id.
  std::optional<std::uint64_t> requeued;
};

struct pop_reply {
  std::vector<delivered_frame> messages;
  /// The lease taken (none for autoAck or an empty answer).
  std::optional<lease_info> lease;
  /// Offsets below the watermark the cursor jumped over.
  std::optional<offset_range> skipped;
  /// Nothing after the group's committed offset: the partition's last
  /// offset at this scan (the group's empty-scan watermark there).
  std::optional<storage::offset> empty_at;
  /// Why `messages` is empty.
  empty_reason reason = empty_reason::empty;
  /// Empty for a while: when frames may become deliverable without a push
  /// (lease expiry, retry delay, delayedProcessing, windowBuffer).
  std::optional<mono_time> retry_at;
  std::optional<api_error> failure;
  /// With `failure` (busy): the group's cursor here is being respawned, so
  /// nothing was taken and a wildcard pop may go on to another partition.
  bool restarting = false;
};

/// What a cursor needs to know of its partition with each request.
struct partition_view {
  storage::offset watermark;
  /// The readable end: next offset after the settled prefix of seals.
  storage::offset readable_end;
  storage::micros newest_created_at = 0;
};

/// Frames by offset, sorted ascending (what a read returns).
using frame_list = std::vector<storage::stored_frame>;

/// The frame at `off` in `frames`, or none.
storage::stored_frame* find_frame(frame_list& frames, storage::offset off);

/// What a pop found and changed in the core, not written yet.
struct pop_outcome {
  pop_reply reply;
  /// The core changed (a lease, an autoAck commit, an expiry, the seed
  /// row): the change must be written before the answer.
  bool write = false;
  dlq_changes changes;
  /// The frames read that the write may need (dead letters).
  frame_list frames;
  /// Delivered from a DLQ entry (a requeue).
  bool requeued = false;
};

/// What a pop needs besides the core, the request and the view.
struct pop_inputs {
  mono_time now;
  micros wall = 0;
  visibility_policy visibility;
  /// What ending the due leases and retries at `now` did before the plan:
  /// whether the core changed, and the dead letters it made.
  bool expired = false;
  std::vector<dead_letter> dead;
  /// The first contact: the seed row is written whatever the pop delivers.
  bool needs_seed = false;
  /// Reads the frames of `offs` (ascending), decoding up to `max_bytes`.
  std::function<expected<frame_list>(const std::vector<storage::offset>&,
                                     std::size_t)>
      load;
  /// Reads DLQ entry `id` (none: deleted or expired); an error fails the
  /// pop as a failed `load` does (its message cannot be delivered now).
  std::function<expected<std::optional<storage::dlq_entry>>(std::uint64_t)>
      load_entry;
};

/// Runs one pop on `core` up to the view's readable end.
pop_outcome plan_pop(cursor_core& core, const pop_request& req,
                     const partition_view& view, pop_inputs in);

} // namespace spool::core
