#pragma once

/// What pops, leases and acks are made of, shared by the cores, the actors
/// and the node API: the lease, an ack and its per-item errors, an extend's
/// errors, and why a pop delivers nothing (semantics.md §3–4, api.md).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vocab/ids.hpp"
#include "vocab/time.hpp"

namespace spool {

/// A live lease on frames of one partition for one group.
struct lease_info {
  std::string id;
  std::uint64_t epoch = 0;
  /// When it ends on the monotonic clock (what the cursor obeys).
  mono_time expires;
  offset_range range;
  /// A lease on a requeued dead letter (one frame): its DLQ id.
  std::optional<std::uint64_t> requeued;
};

enum class ack_status : std::uint8_t { completed, failed, dlq, retry };

/// Per-item ack errors (api.md); `none` is success.
enum class ack_error : std::uint8_t {
  none,
  invalid_lease, ///< "Invalid or expired lease"
  not_in_lease,  ///< "Message not in lease"
  not_found,     ///< "Message not found"
};

/// The item error text of api.md ("" for none).
const char* to_string(ack_error e) noexcept;

/// One frame's settlement (semantics.md §4).
struct ack_request {
  std::optional<std::string> lease_id;
  std::optional<std::uint64_t> lease_epoch;
  offset off;
  /// The frame named by its transactionId instead (the wire's ack): `off`
  /// is then ignored, the cursor resolves the id against the frames its
  /// last lease delivered (`cursor_core::frame_of`).
  std::optional<std::string> transaction_id;
  /// A cumulative ack instead (the wire's `upTo`, as JetStream's AckAll or
  /// Pulsar's cumulative ack): every frame of the live lease at or below
  /// this offset, completed (`cursor_core::ack_through`).
  std::optional<offset> up_to;
  ack_status status = ack_status::completed;
  std::string error;                 ///< failure text (failed, dlq)
  std::optional<milliseconds> delay; ///< delayMs (failed, retry)
  /// A transaction's body-level `requiredLeases`, sorted (Queen's JS client
  /// names its leases there, not per ack): a transaction's ack without a
  /// lease of its own applies to the cursor's live lease when it is one of
  /// these. One list, shared by all the transaction's acks.
  std::shared_ptr<const std::vector<std::string>> lease_in = {};
};

/// The longest retry delay an ack may ask for (`delayMs`): a day, as the
/// `retryDelay` option's range.
inline constexpr milliseconds max_ack_delay{86'400'000};

/// The group of pops that name none (queue mode), as listings show it.
inline constexpr std::string_view queue_mode_group = "__QUEUE_MODE__";

/// Per-item extend errors (api.md); `none` is success.
enum class extend_error : std::uint8_t {
  none,
  not_found,
  expired,
  out_of_range, ///< not 1 s..`lease.maxExtendSeconds` (nothing changes)
};

/// The item error text of api.md ("" for none).
const char* to_string(extend_error e) noexcept;

/// Why a pop delivers nothing (semantics.md §3). The cursor answers the
/// first three; the partition adds `window_buffer` and a delayed
/// `delayedProcessing` frame, the queue `no_partition`.
enum class empty_reason : std::uint8_t {
  empty,         ///< nothing deliverable up to the visible end
  lease_held,    ///< the group's lease on this partition is live
  delayed,       ///< a retry delay or delayedProcessing holds frames back
  window_buffer, ///< the partition is still inside its windowBuffer
  no_partition,  ///< the queue or partition does not exist (yet)
};

/// The `X-Spool-Empty` value ("empty", "lease_held", …).
const char* to_string(empty_reason r) noexcept;

} // namespace spool
