#pragma once

/// Typed access to the metadata tables. Every record is stored as one version
/// byte followed by its serialization; a record that does not decode is an
/// `ec::corrupt_record` error naming the table and key, never a crash.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "storage/records.hpp"

namespace spool::storage::tables {

// -- queues -------------------------------------------------------------------
expected<void> put_queue(txn& t, const queue_record& rec);
expected<std::optional<queue_record>> get_queue(txn& t, queue_id q);
expected<std::vector<queue_record>> all_queues(txn& t);

// -- partitions ---------------------------------------------------------------
expected<void> put_partition(txn& t, const partition_record& rec);
expected<std::optional<partition_record>> get_partition(txn& t, queue_id q,
                                                        partition_id p);
/// A partition that must exist, of a queue not deleted
/// (ec::unknown_partition otherwise).
expected<partition_record> require_partition(txn& t, queue_id q,
                                             partition_id p);
expected<std::vector<partition_record>> all_partitions(txn& t);
expected<std::vector<partition_record>> partitions_of(txn& t, queue_id q);

// -- cursors (queue · partition · group)
// ---------------------------------------
expected<void> put_cursor(txn& t, queue_id q, partition_id p,
                          std::string_view group, const cursor_record& rec);
expected<std::optional<cursor_record>>
get_cursor(txn& t, queue_id q, partition_id p, std::string_view group);
expected<bool> delete_cursor(txn& t, queue_id q, partition_id p,
                             std::string_view group);
expected<std::vector<std::pair<std::string, cursor_record>>>
cursors_of(txn& t, queue_id q, partition_id p);

// -- subscriptions (queue · group)
// ---------------------------------------------
expected<void> put_subscription(txn& t, queue_id q, std::string_view group,
                                const subscription_record& rec);
expected<std::optional<subscription_record>>
get_subscription(txn& t, queue_id q, std::string_view group);
expected<bool> delete_subscription(txn& t, queue_id q, std::string_view group);
expected<std::vector<std::pair<std::string, subscription_record>>>
subscriptions_of(txn& t, queue_id q);

// -- dead letters (queue · group · id)
// -----------------------------------------
expected<void> put_dlq(txn& t, queue_id q, std::string_view group,
                       const dlq_entry& e);
expected<std::optional<dlq_entry>>
get_dlq(txn& t, queue_id q, std::string_view group, std::uint64_t id);
expected<bool> delete_dlq(txn& t, queue_id q, std::string_view group,
                          std::uint64_t id);
/// The highest DLQ id stored in any queue (a deleted queue's rows not yet
/// swept included), or none: one pass over the keys, at open.
expected<std::optional<std::uint64_t>> highest_dlq_id(txn& t);
/// The same among the DLQ rows of slot `s`'s queues only (one key range).
expected<std::optional<std::uint64_t>> highest_dlq_id(txn& t, slot_t s);
/// Entries of one (queue, group) in id order; `f` returns false to stop.
expected<void> scan_dlq(txn& t, queue_id q, std::string_view group,
                        const std::function<bool(const dlq_entry&)>& f);
/// Entries of every group of queue `q` (by group, then id); `f` gets the
/// group too and returns false to stop.
expected<void> scan_queue_dlq(
    txn& t, queue_id q,
    const std::function<bool(std::string_view, const dlq_entry&)>& f);

/// What a DLQ scan needs of an entry to filter, sort and count it: decoded
/// in place, without copying its message (payload, headers) or error text,
/// so a listing or a requeue of a large DLQ does not decode the whole DLQ.
struct dlq_summary {
  std::uint64_t id = 0;
  partition_id partition;
  offset off; ///< the message's offset
  std::uint32_t deliveries = 0;
  micros failed_at = 0;
  bool requeued = false;
};
/// The summaries of one group's entries (`group` set) or of every group of
/// queue `q` (by group, then id); `f` returns false to stop.
expected<void> scan_dlq_summaries(
    txn& t, queue_id q, std::optional<std::string_view> group,
    const std::function<bool(std::string_view, const dlq_summary&)>& f);

// -- dedup (queue · partition · transaction id)
// --------------------------------
expected<void> put_dedup(txn& t, queue_id q, partition_id p,
                         std::string_view txid, const dedup_record& rec);
expected<std::optional<dedup_record>>
get_dedup(txn& t, queue_id q, partition_id p, std::string_view txid);
expected<bool> delete_dedup(txn& t, queue_id q, partition_id p,
                            std::string_view txid);

// -- transaction results (home queue · transaction id; txn_time indexes
// created_at per queue)
// ----------------------------------------------------------------------------
/// Stores (or replaces) the result of transaction `id` kept by queue `q`,
/// with its index entry.
expected<void> put_txn(txn& t, queue_id q, std::string_view id,
                       const txn_record& rec);
expected<std::optional<txn_record>> get_txn(txn& t, queue_id q,
                                            std::string_view id);
/// Removes transaction `id` of queue `q` and its index entry; false when
/// absent.
expected<bool> delete_txn(txn& t, queue_id q, std::string_view id);
/// Up to `limit` ids of queue `q` stored before `before`, oldest first.
expected<std::vector<std::string>>
txns_before(txn& t, queue_id q, micros before, std::size_t limit);

// -- deleted queues whose rows are still being removed
// -------------------------
expected<void> put_doomed(txn& t, queue_id q);
expected<bool> delete_doomed(txn& t, queue_id q);
expected<bool> is_doomed(txn& t, queue_id q);
/// Every deleted queue whose rows are not all removed yet, by id.
expected<std::vector<queue_id>> doomed_queues(txn& t);

// -- a slot's id counters -----------------------------------------------------
expected<slot_counters> get_counters(txn& t, slot_t s);
expected<void> put_counters(txn& t, slot_t s, const slot_counters& c);

// -- the store's format and slot count (node-wide, written at creation)
// --------
struct store_format {
  std::uint32_t format = 0;     ///< 0: none stored
  std::uint32_t slot_count = 0; ///< 0: none stored
};
expected<store_format> get_format(txn& t);
expected<void> put_format(txn& t, const store_format& f);

} // namespace spool::storage::tables
