#pragma once

/// The message types of Spool's actor protocol: plain structs (CAF only for
/// the actor address a part names its holder by). They
/// carry storage and core types and never leave the process (node-to-node
/// traffic uses Spool's msgpack protocol). Part of `interfaces.hpp`, which
/// declares them as local-only CAF message types.

#include <caf/actor_addr.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/broker/txn_core.hpp"
#include "core/cursor/cursor_core.hpp"
#include "core/cursor/cursor_txn.hpp"
#include "core/cursor/pop_plan.hpp"
#include "core/cursor/seek.hpp"
#include "core/dlq/dlq_core.hpp"
#include "core/partition/visibility.hpp"
#include "core/queue/group_deletion.hpp"
#include "core/queue/max_size.hpp"
#include "core/queue/options.hpp"
#include "core/queue/subscription.hpp"
#include "core/writer/open_parts.hpp"
#include "storage/error.hpp"
#include "storage/log.hpp"
#include "storage/mutation.hpp"

namespace spool::actors {

/// The outcome of a write batch: durable, or the error that kept it out.
struct write_result {
  std::optional<api_error> failure;
  bool ok() const noexcept {
    return !failure;
  }
};

/// The answer to a push: one result per frame, in input order.
struct push_reply {
  std::vector<storage::frame_result> results;
  storage::micros created_at = 0;
  std::optional<api_error> failure;
};

using core::delivered_frame;
using core::partition_view;
using core::pop_reply;
using core::pop_request;

struct ack_reply {
  ack_error error = ack_error::none;
  bool lease_released = false;
  bool dead_lettered = false;
  std::optional<api_error> failure;
  /// With `lease_released`: the id of the lease the ack ended.
  std::string released_lease;
};

/// An ack as the wire names its frame: the partition by uuid (api.md's
/// `partitionId`), the frame by transactionId (or offset), per item group.
struct located_ack {
  std::string partition_uuid;
  std::string group;
  ack_request ack;
};

/// The answer to a `located_ack`: where it went (empty for an unknown
/// partition uuid) and its outcome.
struct located_ack_reply {
  std::string queue;
  std::string partition;
  ack_reply reply;
};

struct extend_reply {
  extend_error error = extend_error::none;
  std::optional<mono_time> expires;
  /// The extend's write failed: the lease keeps its old expiry.
  std::optional<api_error> failure;
};

/// One partition's part of an extend by lease id.
struct lease_extension {
  std::string partition;
  std::string partition_uuid;
  extend_reply reply;
};

/// The answer to an extend by lease id: one item per partition the lease
/// holds (empty with `error` not_found: no such live lease).
struct lease_extend_reply {
  std::vector<lease_extension> partitions;
  extend_error error = extend_error::none;
  std::optional<api_error> failure;
};

/// A part of a batch another actor submits (core/writer/open_parts.hpp):
/// the actor that staged it, which the writer settles, and its key there.
struct part_ref {
  caf::actor_addr holder;
  core::part_key key;
  core::part_id id() const {
    return {holder.id(), key};
  }
};

/// A batch and the parts it carries: the writer settles every part with
/// the batch's outcome (`settled_atom`) before it answers the submitter.
struct submission {
  storage::write_batch batch;
  std::vector<part_ref> parts;
};

/// Frames sealed by a partition for a batch the caller commits: the
/// caller's copy (it moves the mutations into its batch) and the part the
/// partition keeps its own by until the writer settles it. Nothing is
/// shared between the two actors.
struct seal_reply {
  /// None: nothing to settle (nothing sealed, or only duplicates).
  std::optional<core::part_key> part;
  storage::sealed_append sealed;
  std::optional<api_error> failure;
};

/// One item of a queue push.
struct push_item {
  std::string partition; ///< name; "Default" when the client named none
  storage::frame frame;
};

/// A partition a push stored items in, named once per reply.
struct push_target {
  std::string queue;
  std::string partition;
  std::string partition_uuid;
  storage::queue_id queue_id = {};
};

/// The outcome of one push item: where it went (an index into the reply's
/// `targets`) and its offset, or its original's for a duplicate.
struct push_item_result {
  std::uint32_t target = 0;
  storage::frame_result result;
};

struct queue_push_reply {
  std::vector<push_item_result> results; ///< in input order
  storage::micros created_at = 0;
  std::optional<api_error> failure;
  /// One per partition the push touched (items of one partition share it:
  /// a push of 1000 items to one partition names it once).
  std::vector<push_target> targets;

  const push_target& target_of(std::size_t item) const {
    return targets[results[item].target];
  }
};

/// A reply that carries only `failure` (every reply type has one).
template <class Reply>
Reply failed(std::optional<api_error> failure) {
  Reply r;
  r.failure = std::move(failure);
  return r;
}

/// A push that stored nothing.
inline queue_push_reply push_failed(std::optional<api_error> failure) {
  return failed<queue_push_reply>(std::move(failure));
}

/// One item of a broker push: any queue.
struct broker_push_item {
  std::string queue;
  push_item item;
};

/// A queue's part of a push that spans queues: its batch and its parts
/// (its partitions' seals and its own, which the writer settles).
struct prepared_push {
  submission part;
  std::optional<api_error> failure;
  /// What the settle answers if the batch is durable (a transaction stores
  /// it in the same batch): per item, in input order, and their targets.
  std::vector<push_item_result> results;
  std::vector<push_target> targets;
  storage::micros created_at = 0;
};

/// A pop on a queue: one named partition, or any (wildcard).
struct queue_pop_request {
  std::optional<std::string> partition;
  std::string group;
  std::size_t batch = 1;      ///< a global cap across partitions
  std::size_t partitions = 1; ///< wildcard: how many partitions to claim
  std::size_t max_bytes = SIZE_MAX;
  bool auto_ack = false;
  bool wait = false;
  std::chrono::milliseconds timeout{30'000};
  std::string lease_id; ///< one id for every partition claimed
  /// Where the group starts if this is its first pop on the queue
  /// (semantics.md §5); ignored once the group is registered.
  core::subscription_params subscription;
};

/// What one claimed partition delivered.
struct partition_delivery {
  std::string partition;
  std::string partition_uuid;
  pop_reply reply;
};

struct queue_pop_reply {
  std::vector<partition_delivery> claimed;
  empty_reason reason = empty_reason::empty;
  /// The earliest `retry_at` of the partitions asked (a parked pop is
  /// retried then).
  std::optional<mono_time> retry_at;
  std::optional<api_error> failure;
};

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
  std::string partition_uuid; ///< the partition read
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

/// A pop across the queues of a namespace (and task), by priority with
/// starvation aging (semantics.md §9).
struct namespace_pop_request {
  std::string name_space;
  std::optional<std::string> task;
  /// Wildcard over each queue's partitions; `wait` parks across the queues.
  queue_pop_request pop;
};

struct namespace_pop_reply {
  std::string queue; ///< the queue served (empty: none)
  queue_pop_reply reply;
};

/// A cursor's part of a transaction: its acks validated and applied on a
/// staged copy (`core::stage_acks`), held until settled by id. The cursor
/// defers every other message meanwhile (docs/transactions.md).
struct stage_reply {
  /// The parts the batch must carry (the cursor's, its partition's and its
  /// queue's marks), settled by the writer; none: nothing staged.
  std::vector<part_ref> parts;
  std::vector<ack_reply> replies; ///< one per ack when accepted
  /// The cursor record and DLQ entries to write with the transaction.
  storage::write_batch batch;
  std::optional<core::stage_refusal> refused;
  std::optional<api_error> failure;
};

/// A parked pop served from a push not durable yet ("claim in the
/// append", docs/operations.md): the cursor's lease and delivery counts,
/// staged like a transaction's acks, are written in the push's batch, and
/// the pop is answered when that batch is durable (semantics.md §1: the
/// frames and their delivery counts are durable before the answer).
struct claim_reply {
  /// The cursor's part and its partition's mark; none: declined.
  std::vector<part_ref> parts;
  /// The cursor record to write with the push.
  storage::write_batch batch;
  /// What the pop answers once the batch is durable.
  pop_reply reply;
};

/// The answer to a transaction; `failure` is a storage or actor failure
/// (nothing was committed; a rollback answer is `result.success == false`).
struct txn_reply {
  core::txn_result result;
  std::optional<api_error> failure;
};

using core::queue_mode_group; // pops without a consumer group

/// A seek of one group (semantics.md §6): every partition of a queue, or
/// one. A queue applies it in one durable write (all or nothing).
struct seek_request {
  std::string group;
  std::optional<std::string> partition; ///< none: every partition
  core::seek_target target;
  bool dry_run = false; ///< answer the positions, write and change nothing
};

/// One partition's committed before and after a seek.
struct seek_position {
  std::string partition;
  /// None: the group had no cursor here (a dry run does not create one).
  std::optional<storage::offset> before;
  storage::offset after{-1};
};

/// The answer to a seek: `partitions_updated` counts the partitions
/// written (the per-queue route's `partitionsUpdated`; 1 is the
/// per-partition route's `updated: true`; 0 for a dry run).
struct seek_reply {
  std::size_t partitions_updated = 0;
  std::vector<seek_position> positions; ///< by partition name
  std::optional<api_error> failure;
};

/// A seek as a cursor gets it from its partition.
struct cursor_seek {
  core::seek_target target;
  /// The partition's timestamp walk (timestamp rule only).
  std::optional<storage::offset> walked;
  bool dry_run = false;
  /// Answer `unavailable` at once instead of waiting while another transaction
  /// or seek holds the cursor (the queue's parallel first attempt).
  bool no_wait = false;
};

/// A cursor's part of a seek: its new record, computed and held (staged,
/// like a transaction's acks) until the writer settles it; the cursor
/// defers every other message meanwhile.
struct seek_stage {
  /// The parts the batch must carry (the cursor's and its partition's
  /// mark, or the partition's hold); none: nothing staged.
  std::vector<part_ref> parts;
  std::optional<storage::offset> before;
  storage::offset after{-1};
  /// The record to write in the queue's one batch (none for a dry run).
  std::optional<storage::mut::put_cursor> record;
  std::optional<api_error> failure;
  bool busy = false; ///< `no_wait` and the cursor was held: nothing staged
};

/// A queue's part of a subscription update: its record of the group
/// rewritten, held (under the group's gate) until the broker settles it.
struct sub_update_part {
  /// None: the group has no record on this queue (nothing to settle).
  std::optional<storage::mut::update_subscription> mutation;
  std::optional<api_error> failure;
};

/// The answer to a subscription update: the records rewritten.
struct sub_update_reply {
  std::size_t rows_updated = 0;
  std::optional<api_error> failure;
};

} // namespace spool::actors
