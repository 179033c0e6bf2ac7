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

#include "actors/broker/txn_core.hpp"
#include "actors/cursor/cursor_core.hpp"
#include "actors/cursor/cursor_txn.hpp"
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
using stage_atom = caf::atom_constant<caf::atom("stage")>;
using txn_atom = caf::atom_constant<caf::atom("txn")>;

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
  /// Per item, in input order: what the settle answers if the batch is
  /// durable (a transaction stores it in the same batch).
  std::vector<push_item_result> results;
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

/// A cursor's part of a transaction: its acks validated and applied on a
/// staged copy (`core::stage_acks`), held until settled by id. The cursor
/// defers every other message meanwhile (docs/transactions.md).
struct stage_reply {
  std::uint64_t stage_id = 0;     ///< 0: nothing staged, nothing to settle
  std::vector<ack_reply> replies; ///< one per ack when accepted
  /// The cursor record and DLQ entries to write with the transaction.
  storage::write_batch batch;
  std::optional<core::stage_refusal> refused;
  std::optional<storage::error> failure;
};

/// The answer to a transaction; `failure` is a storage or actor failure
/// (nothing was committed; a rollback answer is `result.success == false`).
struct txn_reply {
  core::txn_result result;
  std::optional<storage::error> failure;
};

// -- actors -------------------------------------------------------------------

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
    /// Stages a transaction's acks (validated, applied on a copy); until
    /// settled the cursor defers every other message.
    caf::replies_to<stage_atom, std::vector<core::ack_request>,
                    partition_view>::with<stage_reply>,
    /// Settles a staged transaction by id: commit (true) or abort.
    caf::reacts_to<settle_atom, std::uint64_t, bool>>;

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
    /// Stages a transaction's acks for a group (forwarded to its cursor).
    caf::replies_to<stage_atom, std::string,
                    std::vector<core::ack_request>>::with<stage_reply>,
    /// Settles a group's staged transaction (forwarded to its cursor).
    caf::reacts_to<settle_atom, std::string, std::uint64_t, bool>>;

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
    /// Stages a transaction's acks of (partition, group).
    caf::replies_to<stage_atom, std::string, std::string,
                    std::vector<core::ack_request>>::with<stage_reply>,
    /// Settles a staged transaction of (partition, group); a commit wakes
    /// parked pops.
    caf::reacts_to<settle_atom, std::string, std::string, std::uint64_t, bool>>;

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
    /// Runs a transaction (semantics.md §10): pushes and acks, all or
    /// nothing in one write; a repeated client id returns the stored answer.
    caf::replies_to<txn_atom, core::txn_request>::with<txn_reply>>;

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
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::stage_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::txn_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::txn_request)
