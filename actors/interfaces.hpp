#pragma once

/// The actor protocol of Spool, readable in one place: every typed actor
/// handle with a doc line per handler, the atoms, the message types. Kept
/// lean: it is included widely. Messages carry storage and core types; they
/// never leave the process (node-to-node traffic uses Spool's msgpack
/// protocol), so they are allowed as local-only message types instead of
/// being given CAF inspectors.

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/broker/txn_core.hpp"
#include "core/cursor/cursor_core.hpp"
#include "core/cursor/cursor_txn.hpp"
#include "core/cursor/seek.hpp"
#include "core/dlq/dlq_core.hpp"
#include "core/partition/visibility.hpp"
#include "core/queue/group_deletion.hpp"
#include "core/queue/max_size.hpp"
#include "core/queue/options.hpp"
#include "core/queue/subscription.hpp"
#include "storage/error.hpp"
#include "storage/log.hpp"
#include "storage/mutation.hpp"

namespace spool::actors {

// -- atoms (at most 10 characters) --------------------------------------------

using write_atom = caf::atom_constant<caf::atom("write")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using push_atom = caf::atom_constant<caf::atom("push")>;
using pop_atom = caf::atom_constant<caf::atom("pop")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using extend_atom = caf::atom_constant<caf::atom("extend")>;
using expire_atom = caf::atom_constant<caf::atom("expire")>;
using seal_atom = caf::atom_constant<caf::atom("seal")>;
using settle_atom = caf::atom_constant<caf::atom("settle")>;
using timeout_atom = caf::atom_constant<caf::atom("timeout")>;
using list_atom = caf::atom_constant<caf::atom("list")>;
using requeue_atom = caf::atom_constant<caf::atom("requeue")>;
using dlq_list_atom = caf::atom_constant<caf::atom("dlq_list")>;
using dlq_del_atom = caf::atom_constant<caf::atom("dlq_del")>;
using dead_atom = caf::atom_constant<caf::atom("dead")>;
using dlq_sweep_atom = caf::atom_constant<caf::atom("dlq_sweep")>;
using configure_atom = caf::atom_constant<caf::atom("configure")>;
using options_atom = caf::atom_constant<caf::atom("options")>;
using info_atom = caf::atom_constant<caf::atom("info")>;
using browse_atom = caf::atom_constant<caf::atom("browse")>;
using delete_atom = caf::atom_constant<caf::atom("delete")>;
using groups_atom = caf::atom_constant<caf::atom("groups")>;
using purge_atom = caf::atom_constant<caf::atom("purge")>;
using size_atom = caf::atom_constant<caf::atom("size")>;
using trim_atom = caf::atom_constant<caf::atom("trim")>;
using oldest_atom = caf::atom_constant<caf::atom("oldest")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using stage_atom = caf::atom_constant<caf::atom("stage")>;
using txn_atom = caf::atom_constant<caf::atom("txn")>;
using seed_atom = caf::atom_constant<caf::atom("seed")>;
using retention_atom = caf::atom_constant<caf::atom("retention")>;
using seek_atom = caf::atom_constant<caf::atom("seek")>;
using sub_update_atom = caf::atom_constant<caf::atom("sub_update")>;
using reap_atom = caf::atom_constant<caf::atom("reap")>;

// -- message types ------------------------------------------------------------

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

struct ack_reply {
  ack_error error = ack_error::none;
  bool lease_released = false;
  bool dead_lettered = false;
  std::optional<api_error> failure;
};

struct extend_reply {
  extend_error error = extend_error::none;
  std::optional<mono_time> expires;
  /// The extend's write failed: the lease keeps its old expiry.
  std::optional<api_error> failure;
};

/// Frames sealed by a partition, waiting for the commit of the batch that
/// carries them (see `partition_actor`'s seal/settle).
using sealed_ptr = std::shared_ptr<storage::sealed_append>;

struct seal_reply {
  sealed_ptr sealed;
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

/// A queue's part of a push that spans queues: the batch to commit and a
/// token to settle with the outcome.
using push_token = std::shared_ptr<void>;

struct prepared_push {
  push_token token;
  storage::write_batch batch;
  std::optional<api_error> failure;
  /// What the settle answers if the batch is durable (a transaction stores
  /// it in the same batch): per item, in input order, and their targets.
  std::vector<push_item_result> results;
  std::vector<push_target> targets;
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

/// What a cursor needs to know of its partition with each request.
struct partition_view {
  storage::offset watermark;
  /// The readable end: next offset after the settled prefix of seals.
  storage::offset readable_end;
  storage::micros newest_created_at = 0;
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
};

struct browse_reply {
  std::vector<storage::stored_frame> frames;
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
  /// Wall-clock µs of the group's last pop, ack, extend or seek here.
  storage::micros last_activity = 0;
};

/// Which cursors an introspection lists: a group and/or a queue, or all.
struct groups_request {
  std::optional<std::string> group;
  std::optional<std::string> queue;
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
  std::uint64_t stage_id = 0;     ///< 0: nothing staged, nothing to settle
  std::vector<ack_reply> replies; ///< one per ack when accepted
  /// The cursor record and DLQ entries to write with the transaction.
  storage::write_batch batch;
  std::optional<core::stage_refusal> refused;
  std::optional<api_error> failure;
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
/// like a transaction's acks) until the queue settles it by id; the cursor
/// defers every other message meanwhile.
struct seek_stage {
  std::uint64_t stage_id = 0; ///< 0: nothing staged, nothing to settle
  std::optional<storage::offset> before;
  storage::offset after{-1};
  /// The record to write in the queue's one batch (none for a dry run).
  std::optional<storage::mut::put_cursor> record;
  std::optional<api_error> failure;
  bool busy = false; ///< `no_wait` and the cursor was held: nothing staged
};

/// The answer to a subscription update: the records rewritten.
struct sub_update_reply {
  std::size_t rows_updated = 0;
  std::optional<api_error> failure;
};

// -- actors -------------------------------------------------------------------

/// Who hears of every dead letter written (the queue's retention sweep).
using dlq_watcher = caf::typed_actor<
    /// A DLQ entry was written (or returned) with this failure time.
    caf::reacts_to<dead_atom, storage::micros>>;

/// The store writer (one per node): applies write batches with group commit.
/// Batches that arrive while a commit runs are committed together in the next
/// one; each reply comes after the commit that made its batch durable.
using writer_actor = caf::typed_actor<
    /// Applies the batch all or nothing; replies once it is durable.
    caf::replies_to<write_atom, storage::write_batch>::with<write_result>,
    /// Internal: commit everything pending (the writer sends it to itself).
    caf::reacts_to<flush_atom>,
    /// Internal: the commit of group `id` ended (its committer says so).
    caf::reacts_to<flush_atom, std::uint64_t>,
    /// Internal: the stall timer (batches waiting too long fail), by id.
    caf::reacts_to<timeout_atom, std::uint64_t>>;

/// One consumer group's cursor on one partition (a child of the partition,
/// spawned on first contact). Owns a `core::cursor_core`; persists its record
/// through the writer before answering.
using cursor_actor = caf::typed_actor<
    /// Delivers up to `batch` frames under a new lease (or settles them at
    /// once with autoAck); empty answers carry a reason.
    caf::replies_to<pop_atom, pop_request, partition_view>::with<pop_reply>,
    /// Settles frames of the live lease (semantics.md §4), one reply per
    /// request, persisted in one write.
    caf::replies_to<ack_atom, std::vector<ack_request>,
                    partition_view>::with<std::vector<ack_reply>>,
    /// Moves the live lease's expiry to max(current, now + by).
    caf::replies_to<extend_atom, std::string,
                    std::chrono::milliseconds>::with<extend_reply>,
    /// Internal: the actor's one timer (lease expiry, retry delay), by id.
    caf::reacts_to<expire_atom, std::uint64_t>,
    /// The queue's options changed: applies to leases and retries from now.
    caf::reacts_to<options_atom, core::cursor_policy, core::visibility_policy>,
    /// Introspection of the cursor (lag, lease, idle time).
    caf::replies_to<info_atom, partition_view>::with<cursor_info>,
    /// Group deletion, first phase: unless active after the cutoff (or
    /// leased, with a cutoff), stops serving (pops empty, acks refused) and
    /// answers whether the group has a stored record here.
    caf::replies_to<delete_atom, storage::micros>::with<delete_vote>,
    /// Group deletion, second phase: durable (true: the cursor quits) or
    /// failed (false: it serves again).
    caf::reacts_to<delete_atom, bool>,
    /// The response carrying this lease could not be written: the lease
    /// ends at once, no delivery counted; false if it is not the live one.
    caf::replies_to<release_atom, std::string>::with<bool>,
    /// Requeues these DLQ entries of the group (offset and id used): each is
    /// delivered again before new frames; answers after the write.
    caf::replies_to<requeue_atom,
                    std::vector<storage::dlq_entry>>::with<dlq_count_reply>,
    /// Stages a transaction's acks (validated, applied on a copy); until
    /// settled the cursor defers every other message.
    caf::replies_to<stage_atom, std::vector<ack_request>,
                    partition_view>::with<stage_reply>,
    /// Settles a staged transaction or seek by id: commit (true) or abort.
    caf::reacts_to<settle_atom, std::uint64_t, bool>,
    /// Retention (from the partition, or itself to continue): the watermark
    /// moved or frames at or below the offset are overdue (maxWait); the
    /// cursor dead-letters the overdue frames it has not consumed, in
    /// bounded steps.
    caf::reacts_to<retention_atom, partition_view, storage::offset>,
    /// Stages a seek: the new record is computed and held until settled
    /// (`settle_atom`); a dry run only answers the positions.
    caf::replies_to<seek_atom, cursor_seek, partition_view>::with<seek_stage>>;

/// One partition: owns its log (append, seal, dedup) and its cursors.
using partition_actor = caf::typed_actor<
    /// Appends frames (one commit, one or more segments); replies when durable.
    caf::replies_to<push_atom, std::vector<storage::frame>>::with<push_reply>,
    /// Seals frames (offsets, created_at, dedup) for a batch the caller
    /// commits; the caller must settle every successful seal.
    caf::replies_to<seal_atom, std::vector<storage::frame>>::with<seal_reply>,
    /// The batch carrying a seal was durable (true) or failed (false).
    caf::reacts_to<settle_atom, sealed_ptr, bool>,
    /// Pops for a group (forwarded to the group's cursor).
    caf::replies_to<pop_atom, pop_request>::with<pop_reply>,
    /// Acks frames for a group (forwarded to the group's cursor).
    caf::replies_to<ack_atom, std::string,
                    std::vector<ack_request>>::with<std::vector<ack_reply>>,
    /// Extends a group's lease (forwarded to the group's cursor).
    caf::replies_to<extend_atom, std::string, std::string,
                    std::chrono::milliseconds>::with<extend_reply>,
    /// The queue's options changed (passed on to every cursor).
    caf::reacts_to<options_atom, storage::queue_options>,
    /// Reads frames by offset up to the readable end (no lease, no commit).
    caf::replies_to<browse_atom, browse_request>::with<browse_reply>,
    /// The cursors of one group (or every group) on this partition.
    caf::replies_to<groups_atom,
                    std::optional<std::string>>::with<std::vector<cursor_info>>,
    /// A group's registration on the queue: where its cursor starts here
    /// under `record` (none: it has a cursor or a stored row here already).
    caf::replies_to<seed_atom, std::string, storage::subscription_record>::with<
        std::optional<storage::offset>>,
    /// Group deletion, first phase (see the cursor's): whether the group
    /// had a cursor here, or refused as active after the cutoff.
    caf::replies_to<delete_atom, std::string,
                    storage::micros>::with<delete_vote>,
    /// Group deletion, second phase: durable or failed. Reaches only the
    /// cursor the first phase stopped (not one created since).
    caf::reacts_to<delete_atom, std::string, bool>,
    /// Purge: deletes whole segments below the offset (none: all) durably;
    /// answers whether the watermark moved.
    caf::replies_to<purge_atom,
                    std::optional<storage::offset>>::with<purge_reply>,
    /// Frames retained (watermark up to the next offset, seals in flight
    /// included), for `maxSize`.
    caf::replies_to<size_atom>::with<std::int64_t>,
    /// `maxSize`: deletes the oldest segments every interested group has
    /// committed past, until at least `need` frames are freed or none is
    /// left; answers the frames freed (and a failed step's error).
    caf::replies_to<trim_atom, std::int64_t>::with<trim_reply>,
    /// created_at of the oldest frame the group has not committed here
    /// (where it would start, for a group new here); 0: none.
    caf::replies_to<oldest_atom, std::string>::with<storage::micros>,
    /// Releases a group's unwritten lease (forwarded to the cursor).
    caf::replies_to<release_atom, std::string, std::string>::with<bool>,
    /// Requeues DLQ entries of a group (forwarded to the group's cursor).
    caf::replies_to<requeue_atom, std::string,
                    std::vector<storage::dlq_entry>>::with<dlq_count_reply>,
    /// Stages a transaction's acks for a group (forwarded to its cursor).
    caf::replies_to<stage_atom, std::string,
                    std::vector<ack_request>>::with<stage_reply>,
    /// Settles a group's staged transaction or seek (forwarded to its
    /// cursor).
    caf::reacts_to<settle_atom, std::string, std::uint64_t, bool>,
    /// Internal: the partition's one timer (retention runs), by id.
    caf::reacts_to<retention_atom, std::uint64_t>,
    /// Stages a group's seek (the timestamp walk done here, the cursor
    /// created if the group never met the partition, except for a dry run).
    caf::replies_to<seek_atom, std::string, core::seek_target, bool,
                    bool>::with<seek_stage>>;

/// A queue's coordinator: partitions by name, created on first push;
/// queue-wide pushes (all or nothing), pops (named or wildcard, long poll),
/// acks routed by partition name.
using queue_actor = caf::typed_actor<
    /// Pushes items to partitions of this queue in one durable batch.
    caf::replies_to<push_atom, std::vector<push_item>>::with<queue_push_reply>,
    /// Prepares a push (partitions created, frames sealed) for a batch the
    /// caller commits together with other queues' parts.
    caf::replies_to<seal_atom, std::vector<push_item>>::with<prepared_push>,
    /// Settles a prepared push with its batch's outcome; answers the results.
    caf::replies_to<settle_atom, push_token,
                    std::optional<api_error>>::with<queue_push_reply>,
    /// Pops; with `wait`, parks until something is deliverable or timeout.
    caf::replies_to<pop_atom, queue_pop_request>::with<queue_pop_reply>,
    /// Acks frames of a named partition for a group, one reply each.
    caf::replies_to<ack_atom, std::string, std::string,
                    std::vector<ack_request>>::with<std::vector<ack_reply>>,
    /// Internal: the one timer for the earliest parked pop's deadline.
    caf::reacts_to<timeout_atom, std::uint64_t>,
    /// Changes the named options (and namespace/task) durably, creates the
    /// `Default` partition if missing, and applies the options to every
    /// partition and cursor.
    caf::replies_to<configure_atom, configure_request>::with<configure_reply>,
    /// Browses a partition by offset.
    caf::replies_to<browse_atom, browse_request>::with<browse_reply>,
    /// Cursors of the queue (one group or all).
    caf::replies_to<groups_atom, groups_request>::with<groups_reply>,
    /// Deletes a group's cursors (and records) on this queue in one write;
    /// its parked pops are answered empty.
    caf::replies_to<delete_atom,
                    delete_group_request>::with<delete_group_reply>,
    /// Deletes the queue with everything of it in one write, answers its
    /// parked pops empty, and quits after a grace period (requests in
    /// flight are answered meanwhile).
    caf::replies_to<delete_atom>::with<delete_queue_reply>,
    /// Internal: the grace period after a deletion is over.
    caf::reacts_to<delete_atom, std::uint64_t>,
    /// Purges partitions of the queue.
    caf::replies_to<purge_atom, purge_request>::with<purge_reply>,
    /// The oldest frame waiting for the group on any partition; 0: none.
    caf::replies_to<oldest_atom, std::string>::with<storage::micros>,
    /// Releases an unwritten lease on (partition, group); wakes parked pops.
    caf::replies_to<release_atom, std::string, std::string,
                    std::string>::with<bool>,
    /// The client of a parked pop (by its lease id) is gone: it is answered
    /// empty and dropped; nothing it did not take is released.
    caf::reacts_to<cancel_atom, std::string>,
    /// Requeues DLQ entries of a group (routed by the entries' partitions);
    /// wakes parked pops.
    caf::replies_to<requeue_atom, std::string,
                    std::vector<storage::dlq_entry>>::with<dlq_count_reply>,
    /// From the queue's cursors: a dead letter was written at that time.
    caf::reacts_to<dead_atom, storage::micros>,
    /// Internal: the DLQ retention sweep's one timer, by id.
    caf::reacts_to<dlq_sweep_atom, std::uint64_t>,
    /// Stages a transaction's acks of (partition, group).
    caf::replies_to<stage_atom, std::string, std::string,
                    std::vector<ack_request>>::with<stage_reply>,
    /// Settles a staged transaction of (partition, group); a commit wakes
    /// parked pops.
    caf::reacts_to<settle_atom, std::string, std::string, std::uint64_t, bool>,
    /// Seeks a group on every partition (or one) in one durable write;
    /// answers after it is durable and parked pops were woken.
    caf::replies_to<seek_atom, seek_request>::with<seek_reply>,
    /// The group's subscription was updated: its next wildcard pops
    /// consider every partition again (empty-scan watermarks cleared).
    caf::reacts_to<sub_update_atom, std::string>>;

/// The broker (one per node): the directory of queues, recovered at start;
/// queues are created by their first push. A push may span queues and is
/// stored all or nothing.
using broker_actor = caf::typed_actor<
    /// Pushes items to any queues in one durable batch; results in input order.
    caf::replies_to<push_atom,
                    std::vector<broker_push_item>>::with<queue_push_reply>,
    /// Pops from a queue (unknown queue: empty, `no_partition`).
    caf::replies_to<pop_atom, std::string,
                    queue_pop_request>::with<queue_pop_reply>,
    /// Acks frames of (queue, partition) for a group.
    caf::replies_to<ack_atom, std::string, std::string, std::string,
                    std::vector<ack_request>>::with<std::vector<ack_reply>>,
    /// The names of the queues, sorted.
    caf::replies_to<list_atom>::with<std::vector<std::string>>,
    /// Creates the queue (default options plus the named ones, and its
    /// `Default` partition) or changes an existing one's named options.
    caf::replies_to<configure_atom, configure_request>::with<configure_reply>,
    /// Queues with options and partitions (one queue when named; unknown:
    /// `unknown_queue`).
    caf::replies_to<info_atom, std::optional<std::string>>::with<queues_reply>,
    /// Browses a partition of a queue by offset.
    caf::replies_to<browse_atom, std::string,
                    browse_request>::with<browse_reply>,
    /// Introspection of groups: cursors, lag, leases, idle time.
    caf::replies_to<groups_atom, groups_request>::with<groups_reply>,
    /// Deletes a group on one queue or all; unknown group: success with 0.
    caf::replies_to<delete_atom,
                    delete_group_request>::with<delete_group_reply>,
    /// Deletes a queue; a later push creates a new one with default options.
    caf::replies_to<delete_atom, std::string>::with<delete_queue_reply>,
    /// Purges a queue (one partition or all) below an offset or entirely.
    caf::replies_to<purge_atom, std::string, purge_request>::with<purge_reply>,
    /// Pops from the queues of a namespace/task: higher priority first,
    /// starved queues before all; `wait` parks until one delivers.
    caf::replies_to<pop_atom, namespace_pop_request>::with<namespace_pop_reply>,
    /// Internal: the broker's one timer (parked namespace pops), by id.
    caf::reacts_to<timeout_atom, std::uint64_t>,
    /// Internal: the next bounded step of removing a deleted queue's rows
    /// (by queue id).
    caf::reacts_to<reap_atom, std::uint64_t>,
    /// The gateway could not write a pop's response: releases the lease of
    /// (queue, partition, group) at once, counting no delivery.
    caf::replies_to<release_atom, std::string, std::string, std::string,
                    std::string>::with<bool>,
    /// The client of a parked pop (by its lease id) disconnected.
    caf::reacts_to<cancel_atom, std::string>,
    /// Lists DLQ entries: newest first, filtered, paginated, exact total.
    caf::replies_to<dlq_list_atom, core::dlq_query>::with<dlq_list_reply>,
    /// Requeues the selected DLQ entries, each to its own group only.
    caf::replies_to<requeue_atom, core::dlq_filter>::with<dlq_count_reply>,
    /// Deletes the selected DLQ entries (by ids or by filter).
    caf::replies_to<dlq_del_atom, core::dlq_filter>::with<dlq_count_reply>,
    /// Runs a transaction (semantics.md §10): pushes and acks, all or
    /// nothing in one write; a repeated client id returns the stored answer.
    caf::replies_to<txn_atom, core::txn_request>::with<txn_reply>,
    /// Seeks a group on a queue (every partition, or one); unknown queue or
    /// none of its partitions: `Queue not found or has no partitions`.
    caf::replies_to<seek_atom, std::string, seek_request>::with<seek_reply>,
    /// Sets mode `timestamp` with this timestamp (µs) on every subscription
    /// record of the group, in one write; moves no cursor.
    caf::replies_to<sub_update_atom, std::string,
                    storage::micros>::with<sub_update_reply>>;

} // namespace spool::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::storage::write_batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::sealed_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::seal_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::actors::push_item>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::queue_push_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::queue_pop_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::actors::broker_push_item>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::push_token)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::prepared_push)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::optional<spool::api_error>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::queue_pop_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::write_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::storage::frame>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::push_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::pop_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::pop_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::ack_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::extend_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::partition_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::ack_request>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::actors::ack_reply>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::chrono::milliseconds)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::storage::dlq_entry>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::dlq_query)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::dlq_filter)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::dlq_list_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::dlq_count_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::configure_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::configure_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::storage::queue_options)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::cursor_policy)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::visibility_policy)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::queues_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::browse_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::browse_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::delete_queue_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::delete_group_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::delete_group_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::delete_vote)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::storage::subscription_record)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::optional<spool::storage::offset>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::cursor_info)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::actors::cursor_info>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::groups_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::groups_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::purge_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::purge_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::trim_share)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::optional<std::string>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::storage::offset)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::namespace_pop_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::namespace_pop_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::stage_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::txn_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::txn_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::seek_target)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::seek_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::seek_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::cursor_seek)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::seek_stage)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::sub_update_reply)
