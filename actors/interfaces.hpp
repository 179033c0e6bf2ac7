#pragma once

/// The actor protocol of Spool, readable in one place: every typed actor
/// handle with a doc line per handler; the atoms (`atoms.hpp`) and the
/// message types (`messages.hpp`, plain structs) it uses. Messages never
/// leave the process (node-to-node traffic uses Spool's msgpack protocol),
/// so they are allowed as local-only message types instead of being given
/// CAF inspectors.

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "actors/atoms.hpp"
#include "actors/messages.hpp"

namespace spool::actors {

// -- actors -------------------------------------------------------------------

/// Who hears of every dead letter written (the queue's retention sweep).
using dlq_watcher = caf::typed_actor<
    /// A DLQ entry was written (or returned) with this failure time.
    caf::reacts_to<dead_atom, storage::micros>>;

/// An actor that holds parts of batches others submit (a partition's
/// seals, a queue's part of a push across queues).
using part_holder = caf::typed_actor<
    /// The batch carrying one of its parts was durable, failed, or of
    /// unknown outcome.
    caf::reacts_to<settled_atom, core::part_key, core::part_outcome>>;

/// The store writer (one per node): applies write batches with group commit.
/// Batches that arrive while a commit runs are committed together in the next
/// one; each reply comes after the commit that made its batch durable.
using writer_actor = caf::typed_actor<
    /// Applies the batch all or nothing; replies once it is durable.
    caf::replies_to<write_atom, storage::write_batch>::with<write_result>,
    /// A holder staged `part` for a batch another actor submits: open
    /// until settled.
    caf::reacts_to<hold_atom, part_ref>,
    /// Applies the batch as `write` does, and settles every part with its
    /// outcome before it replies. A batch naming a part that is not open
    /// (abandoned, or submitted before) is refused whole.
    caf::replies_to<propose_atom, submission>::with<write_result>,
    /// The coordinator gave these parts up and settled them itself.
    caf::reacts_to<abort_atom, std::vector<part_ref>>,
    /// Replies once seq `seq` of slot `slot` is durable (an answer that read
    /// it may then go out), or with the error that it never will be.
    caf::replies_to<durable_atom, std::uint16_t,
                    std::uint64_t>::with<write_result>,
    /// Starts a commit of what waits if none runs (the writer does so on
    /// its own; tests' write gates release what they hold on it).
    caf::reacts_to<flush_atom>,
    /// Internal: the commit of group `id` ended (its committer says so).
    caf::reacts_to<flush_atom, std::uint64_t>,
    /// Internal: group `id` is durable (its durability policy says so).
    caf::reacts_to<durable_atom, std::uint64_t>,
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
    caf::replies_to<vote_atom, storage::micros>::with<delete_vote>,
    /// Group deletion, second phase: durable (true: the cursor quits) or
    /// failed (false: it serves again).
    caf::reacts_to<verdict_atom, bool>,
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
    /// Stages a parked pop on frames sealed, not durable yet (in memory,
    /// up to the view's readable end): declined (no part) when busy or
    /// when it would need more than a lease and delivery counts; settled
    /// like a transaction's stage.
    caf::replies_to<claim_atom, pop_request, partition_view,
                    std::vector<storage::stored_frame>>::with<claim_reply>,
    /// The batch carrying its staged transaction, seek or claim (a part)
    /// was durable, failed, or of unknown outcome (undone as failed).
    caf::reacts_to<settled_atom, core::part_key, core::part_outcome>,
    /// Retention (from the partition, or itself to continue): the watermark
    /// moved or frames at or below the offset are overdue (maxWait); the
    /// cursor dead-letters the overdue frames it has not consumed, in
    /// bounded steps.
    caf::reacts_to<retention_atom, partition_view, storage::offset>,
    /// Stages a seek: the new record is computed and held until settled
    /// (`settled_atom`); a dry run only answers the positions.
    caf::replies_to<seek_atom, cursor_seek, partition_view>::with<seek_stage>,
    /// Passivation (docs/architecture.md): whether it holds nothing but its
    /// stored row (no lease, stage, timer, write); it stays until told to
    /// quit.
    caf::replies_to<passivate_atom>::with<bool>,
    /// Ends it (a normal exit) after it answered idle.
    caf::reacts_to<quit_atom>>;

/// One partition: owns its log (append, seal, dedup) and its cursors.
using partition_actor = caf::typed_actor<
    /// Seals frames (offsets, created_at, dedup) for a batch the caller
    /// submits; the seal is a part the writer holds (`hold_atom`), settled
    /// with the batch's outcome.
    caf::replies_to<seal_atom, std::vector<storage::frame>>::with<seal_reply>,
    /// The batch carrying a part of this actor was durable, failed, or of
    /// unknown outcome (from the writer, or from a coordinator that gave
    /// the part up).
    caf::reacts_to<settled_atom, core::part_key, core::part_outcome>,
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
    /// had a cursor here, or refused as active after the cutoff; a cursor
    /// it stopped is a part the writer settles with the deletion's batch
    /// (its second phase reaches only that cursor, not one created since).
    caf::replies_to<vote_atom, std::string, storage::micros>::with<vote_reply>,
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
    /// Stages a parked pop of a group on the frames of a seal in flight
    /// (forwarded to its cursor with them): declined unless every earlier
    /// seal is settled. Its parts are settled by the writer.
    caf::replies_to<claim_atom, std::int64_t, pop_request,
                    std::vector<storage::stored_frame>>::with<claim_reply>,
    /// Internal: the partition's one timer (retention runs), by id.
    caf::reacts_to<retention_atom, std::uint64_t>,
    /// Stages a group's seek (the timestamp walk done here, the cursor
    /// created if the group never met the partition, except for a dry run).
    caf::replies_to<seek_atom, std::string, core::seek_target, bool,
                    bool>::with<seek_stage>,
    /// Passivation (docs/architecture.md): true when it and every cursor
    /// hold nothing but their stored rows and nothing reached a cursor
    /// while they were asked; the cursors are gone then. It stays until
    /// told to quit.
    caf::replies_to<passivate_atom>::with<bool>,
    /// Ends it (a normal exit) after it answered idle.
    caf::reacts_to<quit_atom>>;

/// A queue's coordinator: partitions by name, created on first push;
/// queue-wide pushes (all or nothing), pops (named or wildcard, long poll),
/// acks of its partitions by uuid.
using queue_actor = caf::typed_actor<
    /// Pushes items to partitions of this queue in one durable batch.
    caf::replies_to<push_atom, std::vector<push_item>>::with<queue_push_reply>,
    /// Prepares a push (partitions created, frames sealed) for a batch the
    /// caller submits together with other queues' parts.
    caf::replies_to<seal_atom, std::vector<push_item>>::with<prepared_push>,
    /// The batch carrying a prepared push was durable, failed, or of
    /// unknown outcome.
    caf::reacts_to<settled_atom, core::part_key, core::part_outcome>,
    /// Pops; with `wait`, parks until something is deliverable or timeout.
    caf::replies_to<pop_atom, queue_pop_request>::with<queue_pop_reply>,
    /// Acks frames of partitions named by uuid, one reply each.
    caf::replies_to<ack_atom, std::vector<located_ack>>::with<
        std::vector<located_ack_reply>>,
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
    /// Deletes DLQ entries of the queue in one write (the queue is the one
    /// writer of its DLQ rows); counts those deleted.
    caf::replies_to<delete_atom, dlq_delete_request>::with<dlq_count_reply>,
    /// Internal: the grace period after a deletion is over.
    caf::reacts_to<grace_atom, std::uint64_t>,
    /// Purges partitions of the queue.
    caf::replies_to<purge_atom, purge_request>::with<purge_reply>,
    /// The oldest frame waiting for the group on any partition; 0: none.
    caf::replies_to<oldest_atom, std::string>::with<storage::micros>,
    /// The client of a parked pop (by its lease id) is gone: it is answered
    /// empty and dropped; nothing it did not take is released.
    caf::reacts_to<cancel_atom, std::string>,
    /// Extends the lease with this id on every partition it holds (the
    /// queue's lease directory, `core::lease_directory`).
    caf::replies_to<extend_atom, std::string,
                    std::chrono::milliseconds>::with<lease_extend_reply>,
    /// The response carrying this lease could not be written: released on
    /// every partition it holds; wakes parked pops. False if none held it.
    caf::replies_to<release_atom, std::string>::with<bool>,

    /// Requeues DLQ entries of a group (routed by the entries' partitions);
    /// wakes parked pops.
    caf::replies_to<requeue_atom, std::string,
                    std::vector<storage::dlq_entry>>::with<dlq_count_reply>,
    /// From the queue's cursors: a dead letter was written at that time.
    caf::reacts_to<dead_atom, storage::micros>,
    /// Internal: the DLQ retention sweep's one timer, by id.
    caf::reacts_to<dlq_sweep_atom, std::uint64_t>,
    /// Internal: the passivation sweep's one timer, by id.
    caf::reacts_to<passivate_atom, std::uint64_t>,
    /// Stages a transaction's acks of (partition, group); its parts (and
    /// the queue's mark among them: a durable one wakes parked pops) are
    /// settled by the writer.
    caf::replies_to<stage_atom, partition_ref, std::string,
                    std::vector<ack_request>>::with<stage_reply>,
    /// Seeks a group on every partition (or one) in one durable write;
    /// answers after it is durable and parked pops were woken.
    caf::replies_to<seek_atom, seek_request>::with<seek_reply>,
    /// A subscription update's part here (the queue owns its records):
    /// the group's record rewritten to mode timestamp at `ts`, a part the
    /// writer settles (durable: the group's next wildcard pops consider
    /// every partition again); none when the group has no record here.
    caf::replies_to<sub_update_atom, std::string,
                    storage::micros>::with<sub_update_part>>;

/// Who hears of a queue's durable pushes (the broker: they wake parked
/// namespace pops). A queue answers a single-queue push itself, so it tells
/// this before it answers.
using queue_watcher = caf::typed_actor<
    /// A push to queue `queue` stored frames (durable).
    caf::reacts_to<push_atom, std::string>>;

/// The node API: what the gateway (and only it) asks the broker, in the
/// wire's identities where the wire has them (partition uuid, lease id,
/// request token; api.md). The broker's internal messages (timers, queue
/// removal, the queues' notes) are not part of it.
using node_api = caf::typed_actor<
    /// Pushes items to any queues in one durable batch; results in input order.
    caf::replies_to<push_atom,
                    std::vector<broker_push_item>>::with<queue_push_reply>,
    /// Pops from a queue (unknown queue: empty, `no_partition`).
    caf::replies_to<pop_atom, std::string,
                    queue_pop_request>::with<queue_pop_reply>,
    /// Acks frames named as the wire names them (partition uuid, and
    /// transactionId or offset), across partitions and queues; one reply
    /// per item in order. Unknown uuid: `not_found`.
    caf::replies_to<ack_atom, std::vector<located_ack>>::with<
        std::vector<located_ack_reply>>,
    /// Extends a lease by id on every partition it holds.
    caf::replies_to<extend_atom, std::string,
                    std::chrono::milliseconds>::with<lease_extend_reply>,
    /// The gateway could not write the response carrying this lease: it is
    /// released on every partition, counting no delivery.
    caf::replies_to<release_atom, std::string>::with<bool>,
    /// The client of a parked pop is gone (by its request token, the pop's
    /// lease id): routed to its queue (none: a namespace pop, parked here).
    caf::reacts_to<cancel_atom, std::string, std::optional<std::string>>,
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
    /// A message by its partition's uuid and transactionId.
    caf::replies_to<browse_atom, find_request>::with<find_reply>,
    /// The store's map use.
    caf::replies_to<usage_atom>::with<usage_reply>,
    /// Attaches a trace to a message (unknown message: `not_found`).
    caf::replies_to<trace_atom, trace_put_request>::with<trace_put_reply>,
    /// The traces of a message, oldest first (unknown message: none).
    caf::replies_to<trace_atom, find_request>::with<trace_list_reply>,
    /// The traces with a name across the live queues, newest first.
    caf::replies_to<trace_atom, trace_named_request>::with<trace_named_reply>,
    /// The trace names in use, with counts.
    caf::replies_to<trace_atom, trace_names_request>::with<trace_names_reply>,
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

/// The broker (one per node): the directory of queues, recovered at start;
/// queues are created by their first push. A push may span queues and is
/// stored all or nothing. Serves the node API, plus its internal messages.
using broker_actor = node_api::extend<
    /// Internal: the broker's one timer (parked namespace pops), by id.
    caf::reacts_to<timeout_atom, std::uint64_t>,
    /// Internal: the next bounded step of removing a deleted queue's rows
    /// (by queue id).
    caf::reacts_to<reap_atom, std::uint64_t>,
    /// From the queues (`queue_watcher`): a push was stored.
    caf::reacts_to<push_atom, std::string>,
    /// From the replica host (cluster mode): this node now serves slot N
    /// in epoch E (load its queues, their term E) or no longer does (0:
    /// stop them).
    caf::reacts_to<slot_atom, std::uint16_t, std::uint64_t>>;

} // namespace spool::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::storage::write_batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::seal_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::actors::push_item>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::queue_push_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::queue_pop_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::actors::broker_push_item>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::prepared_push)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::part_ref)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::submission)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::actors::part_ref>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::part_key)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::part_outcome)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::optional<spool::api_error>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::queue_pop_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::write_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::storage::frame>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::storage::stored_frame>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::push_target)
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
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::find_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::find_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::delete_queue_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::delete_group_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::dlq_delete_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::delete_group_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::delete_vote)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::vote_reply)
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
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::claim_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::txn_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::txn_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::seek_target)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::seek_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::seek_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::cursor_seek)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::seek_stage)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::sub_update_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::sub_update_part)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::actors::located_ack>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::partition_ref)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::actors::located_ack_reply>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::lease_extend_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::usage_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::trace_put_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::trace_put_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::trace_list_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::trace_named_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::trace_named_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::trace_names_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::trace_names_reply)
