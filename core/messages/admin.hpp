#pragma once

/// The messages of administration: configure, listings, browse and find,
/// the DLQ, group and queue deletion, introspection, purge and trims.
/// Plain structs of the actor layer's protocol (namespace `spool::actors`,
/// as `core/writer/`).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cursor/cursor_core.hpp"
#include "core/dlq/dlq_core.hpp"
#include "core/queue/group_deletion.hpp"
#include "core/queue/max_size.hpp"
#include "core/queue/options.hpp"
#include "storage/log.hpp"
#include "storage/records.hpp"
#include "vocab/errors.hpp"

namespace spool::actors {

/// The answer to a DLQ listing.
struct dlq_list_reply {
  core::dlq_page page;
  std::optional<api_error> failure;
};

/// The answer to a DLQ requeue or delete: how many entries it applied to.
struct dlq_count_reply {
  std::size_t count = 0;
  std::optional<api_error> failure;
  /// Selected but not acted on by this call: past `core::dlq_max_batch`, or
  /// (requeue) past a cursor's pending requeues; a later call takes them.
  std::size_t remaining = 0;
};

/// Creates a queue or changes the options of one (semantics.md §8, §9).
struct configure_request {
  std::string queue;
  /// Set only when named (an auto-created queue derives them from its name).
  std::optional<std::string> name_space;
  std::optional<std::string> task;
  /// Only the options named change; the rest keep their values.
  core::options_patch options;
};

struct configure_reply {
  /// The queue as stored after the change (every option).
  storage::queue_record queue;
  /// The `Default` partition's id (configure creates it if missing).
  std::string default_partition_uuid;
  bool created = false; ///< the queue did not exist before
  std::optional<api_error> failure;
};

/// A queue as listed: its record (every option) and its partitions with
/// lastOffset (`next_offset - 1`) and watermark, in creation order.
struct queue_info {
  storage::queue_record record;
  std::vector<storage::partition_record> partitions;
};

struct queues_reply {
  std::vector<queue_info> queues; ///< sorted by name
  std::optional<api_error> failure;
};

/// Read-only browsing by offset: no lease, no commit (semantics.md §8).
struct browse_request {
  std::string partition;
  /// Set: the partition with this uuid (`partition` unused).
  std::string partition_uuid = {};
  storage::offset from{0};
  std::size_t max_frames = 100;
  std::size_t max_bytes = SIZE_MAX;
  /// Set: the one frame with this transactionId (`storage::find_frame`),
  /// `from` and the bounds unused; none there: no frames.
  std::optional<std::string> transaction_id = {};
};

/// A message by its partition's uuid and transactionId.
struct find_request {
  std::string partition_uuid;
  std::string transaction_id;
};

/// The store's LMDB map use (metrics).
struct usage_reply {
  storage::env_usage usage;
  std::optional<api_error> failure;
};

struct find_reply {
  std::optional<storage::stored_frame> frame; ///< none: not found
  std::string queue;
  std::string partition;
  std::string partition_uuid;
  storage::queue_id queue_id = {};
  storage::partition_id partition_id = {};
  std::optional<api_error> failure;
};

struct browse_reply {
  std::vector<storage::stored_frame> frames;
  std::string partition; ///< the partition read, by name
  std::string partition_uuid;
  storage::partition_id partition_id = {};
  /// Where the next browse continues.
  storage::offset next{0};
  /// Offsets below the watermark the read jumped over.
  std::optional<offset_range> skipped;
  std::optional<api_error> failure;
};

struct delete_queue_reply {
  bool existed = false;
  std::optional<api_error> failure;
};

/// DLQ entries of one queue to delete, by (group, id): the broker asks the
/// queue, the one writer of its DLQ rows. `queue_id` is the queue the
/// entries were selected under; a queue created again under the name
/// since deletes none of them (the old queue's rows go with its reaping).
struct dlq_delete_request {
  storage::queue_id queue_id;
  std::vector<std::pair<std::string, std::uint64_t>> entries;
};

/// Deletes a group's cursors on one queue or all (semantics.md §8).
struct delete_group_request {
  std::string group;
  std::optional<std::string> queue; ///< none: every queue
  bool delete_metadata = true;      ///< also its subscription records
  /// The idle sweep's guard: a cursor active after this wall time, or
  /// holding a lease, refuses and the deletion is abandoned (`unavailable`).
  /// The default never refuses.
  storage::micros active_after = INT64_MAX;
};

/// A partition's answer to the first phase of a group deletion.
using core::delete_vote;

struct delete_group_reply {
  std::size_t deleted_partitions = 0;
  bool metadata_deleted = false;
  std::optional<api_error> failure;
};

/// One group's cursor on one partition, as introspection shows it.
struct cursor_info {
  std::string queue;
  std::string partition;
  std::string partition_uuid;
  std::string group;
  storage::offset committed{-1};
  storage::offset last_offset{-1};
  storage::offset watermark{0};
  /// lastOffset - max(committed, watermark - 1).
  std::int64_t lag = 0;
  /// created_at of the oldest frame the group has not committed (0: none).
  storage::micros oldest_unconsumed_at = 0;
  /// The live lease, with its expiry in wall-clock µs.
  std::optional<lease_info> lease;
  storage::micros lease_expires_at = 0;
  std::optional<offset_range> isolated;
  /// Frames above committed delivered more than once.
  std::size_t redeliveries = 0;
  /// Retained frames above committed already done (out-of-order acks and
  /// dead letters).
  std::size_t done_above = 0;
  /// Frames of the live lease not settled yet.
  std::size_t in_flight = 0;
  /// Wall-clock µs of the group's last pop, ack, extend or seek here.
  storage::micros last_activity = 0;
};

/// Which cursors an introspection lists: a group and/or a queue, or all.
struct groups_request {
  std::optional<std::string> group;
  std::optional<std::string> queue;
  /// With `queue`: only this partition's cursors (unknown: none).
  std::optional<std::string> partition = {};
};

struct groups_reply {
  std::vector<cursor_info> cursors; ///< by queue, partition, group
  std::optional<api_error> failure;
};

/// Deletes whole segments below `below` (none: all), moving the watermark.
struct purge_request {
  std::optional<std::string> partition; ///< none: every partition
  std::optional<storage::offset> below;
};

struct purge_reply {
  std::size_t partitions = 0; ///< partitions whose watermark moved
  std::optional<api_error> failure;
};

/// A `maxSize` trim of one partition: the frames freed by the steps that
/// were durable, and the error that stopped it, if any.
using trim_reply = core::trim_share;

} // namespace spool::actors
