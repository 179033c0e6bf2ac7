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
#include <vector>

#include "actors/cursor/cursor_core.hpp"
#include "actors/dlq/dlq_core.hpp"
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

// -- message types ------------------------------------------------------------

/// The outcome of a write batch: durable, or the error that kept it out.
struct write_result {
  std::optional<storage::error> failure;
  bool ok() const noexcept {
    return !failure;
  }
};

/// The answer to a push: one result per frame, in input order.
struct push_reply {
  std::vector<storage::frame_result> results;
  storage::micros created_at = 0;
  std::optional<storage::error> failure;
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
  std::optional<core::lease_info> lease;
  /// Offsets below the watermark the cursor jumped over.
  std::optional<core::offset_range> skipped;
  /// Why `messages` is empty.
  core::empty_reason reason = core::empty_reason::empty;
  std::optional<storage::error> failure;
};

struct ack_reply {
  core::ack_error error = core::ack_error::none;
  bool lease_released = false;
  bool dead_lettered = false;
  std::optional<storage::error> failure;
};

struct extend_reply {
  core::extend_error error = core::extend_error::none;
  std::optional<core::mono_time> expires;
};

/// Frames sealed by a partition, waiting for the commit of the batch that
/// carries them (see `partition_actor`'s seal/settle).
using sealed_ptr = std::shared_ptr<storage::sealed_append>;

struct seal_reply {
  sealed_ptr sealed;
  std::optional<storage::error> failure;
};

/// One item of a queue push.
struct push_item {
  std::string partition; ///< name; "Default" when the client named none
  storage::frame frame;
};

/// The outcome of one push item.
struct push_item_result {
  std::string queue;
  std::string partition;
  std::string partition_uuid;
  storage::frame_result result;
};

struct queue_push_reply {
  std::vector<push_item_result> results; ///< in input order
  storage::micros created_at = 0;
  std::optional<storage::error> failure;
};

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
  std::optional<storage::error> failure;
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
};

/// What one claimed partition delivered.
struct partition_delivery {
  std::string partition;
  std::string partition_uuid;
  pop_reply reply;
};

struct queue_pop_reply {
  std::vector<partition_delivery> claimed;
  core::empty_reason reason = core::empty_reason::empty;
  std::optional<storage::error> failure;
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
  std::optional<storage::error> failure;
};

/// The answer to a DLQ requeue or delete: how many entries it applied to.
struct dlq_count_reply {
  std::size_t count = 0;
  std::optional<storage::error> failure;
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
    caf::reacts_to<flush_atom>>;

/// One consumer group's cursor on one partition (a child of the partition,
/// spawned on first contact). Owns a `core::cursor_core`; persists its record
/// through the writer before answering.
using cursor_actor = caf::typed_actor<
    /// Delivers up to `batch` frames under a new lease (or settles them at
    /// once with autoAck); empty answers carry a reason.
    caf::replies_to<pop_atom, pop_request, partition_view>::with<pop_reply>,
    /// Settles frames of the live lease (semantics.md §4), one reply per
    /// request, persisted in one write.
    caf::replies_to<ack_atom, std::vector<core::ack_request>,
                    partition_view>::with<std::vector<ack_reply>>,
    /// Moves the live lease's expiry to max(current, now + by).
    caf::replies_to<extend_atom, std::string,
                    std::chrono::milliseconds>::with<extend_reply>,
    /// Internal: the actor's one timer (lease expiry, retry delay), by id.
    caf::reacts_to<expire_atom, std::uint64_t>,
    /// Requeues these DLQ entries of the group (offset and id used): each is
    /// delivered again before new frames; answers after the write.
    caf::replies_to<requeue_atom,
                    std::vector<storage::dlq_entry>>::with<dlq_count_reply>>;

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
    caf::replies_to<ack_atom, std::string, std::vector<core::ack_request>>::
        with<std::vector<ack_reply>>,
    /// Extends a group's lease (forwarded to the group's cursor).
    caf::replies_to<extend_atom, std::string, std::string,
                    std::chrono::milliseconds>::with<extend_reply>,
    /// Requeues DLQ entries of a group (forwarded to the group's cursor).
    caf::replies_to<requeue_atom, std::string,
                    std::vector<storage::dlq_entry>>::with<dlq_count_reply>>;

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
                    std::optional<storage::error>>::with<queue_push_reply>,
    /// Pops; with `wait`, parks until something is deliverable or timeout.
    caf::replies_to<pop_atom, queue_pop_request>::with<queue_pop_reply>,
    /// Acks frames of a named partition for a group, one reply each.
    caf::replies_to<
        ack_atom, std::string, std::string,
        std::vector<core::ack_request>>::with<std::vector<ack_reply>>,
    /// Internal: the one timer for the earliest parked pop's deadline.
    caf::reacts_to<timeout_atom, std::uint64_t>,
    /// Requeues DLQ entries of a group (routed by the entries' partitions);
    /// wakes parked pops.
    caf::replies_to<requeue_atom, std::string,
                    std::vector<storage::dlq_entry>>::with<dlq_count_reply>,
    /// From the queue's cursors: a dead letter was written at that time.
    caf::reacts_to<dead_atom, storage::micros>,
    /// Internal: the DLQ retention sweep's one timer, by id.
    caf::reacts_to<dlq_sweep_atom, std::uint64_t>>;

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
    caf::replies_to<
        ack_atom, std::string, std::string, std::string,
        std::vector<core::ack_request>>::with<std::vector<ack_reply>>,
    /// The names of the queues, sorted.
    caf::replies_to<list_atom>::with<std::vector<std::string>>,
    /// Lists DLQ entries: newest first, filtered, paginated, exact total.
    caf::replies_to<dlq_list_atom, core::dlq_query>::with<dlq_list_reply>,
    /// Requeues the selected DLQ entries, each to its own group only.
    caf::replies_to<requeue_atom, core::dlq_filter>::with<dlq_count_reply>,
    /// Deletes the selected DLQ entries (by ids or by filter).
    caf::replies_to<dlq_del_atom, core::dlq_filter>::with<dlq_count_reply>>;

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
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::optional<spool::storage::error>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::queue_pop_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::write_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::storage::frame>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::push_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::pop_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::pop_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::ack_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::extend_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::partition_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::core::ack_request>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::actors::ack_reply>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::chrono::milliseconds)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::storage::dlq_entry>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::dlq_query)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::dlq_filter)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::dlq_list_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::dlq_count_reply)
