#pragma once

/// The message types of Spool's actor protocol: plain structs that carry
/// storage and core types and never leave the process (node-to-node traffic
/// uses Spool's msgpack protocol). Part of `interfaces.hpp`, which declares
/// them as local-only CAF message types. Most live beside the cores
/// (`core/messages/`); here are those that name an actor (a part's holder).

#include <caf/actor_addr.hpp>

#include <optional>
#include <vector>

#include "core/cursor/cursor_txn.hpp"
#include "core/messages/admin.hpp"
#include "core/messages/consume.hpp"
#include "core/messages/push.hpp"
#include "core/messages/traces.hpp"
#include "core/writer/open_parts.hpp"

namespace spool::actors {

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

/// A partition's answer to the first phase of a group deletion: its vote,
/// and the part it holds when it stopped the group's cursor (settled by
/// the writer with the deletion's batch: durable, the cursor ends; failed,
/// it serves again).
struct vote_reply {
  core::delete_vote vote;
  std::optional<part_ref> part;
};

/// A queue's part of a subscription update: its record of the group
/// rewritten, held (under the group's gate) as a part the writer settles.
struct sub_update_part {
  /// None: the group has no record on this queue (nothing to settle).
  std::optional<storage::mut::update_subscription> mutation;
  std::optional<part_ref> part;
  std::optional<api_error> failure;
};

} // namespace spool::actors
