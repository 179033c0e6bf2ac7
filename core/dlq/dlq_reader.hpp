#pragma once

/// Reads the dead-letter queue for listings, deletes and requeues, inside
/// one short read transaction the caller owns (no CAF). Names in the filter
/// are resolved here: an unknown queue, partition, group or id is an error
/// naming it, so a wrong request changes nothing.

#include "core/dlq/dlq_core.hpp"
#include "storage/lmdb.hpp"

namespace spool::core {

/// What a scan selected: at most the entries asked for, and how many match
/// in all.
struct dlq_selection {
  std::vector<dlq_item> items; ///< newest first
  std::size_t total = 0;       ///< every entry the filter matches
};

/// The `max` oldest entries `f` selects (newest first in `items`), except
/// those past their queue's `dlqRetentionSeconds` at `now` (the sweep
/// removes them later), and how many match in all. Entries carry no
/// message (payload, headers) nor error text: the scan decodes summaries
/// only and keeps at most `max` of them, so its memory is bounded by `max`
/// and its time is one pass over the rows, whatever the DLQ holds.
///
/// For a requeue, `per_cursor` is a cursor's cap on pending requeues: entries
/// already pending are left out (neither selected nor counted), and per
/// (queue, group, partition) at most the cursor's free places are selected,
/// the oldest first; the rest counts in `total` for a later call.
expected<dlq_selection> select_dlq(storage::txn& t, const dlq_filter& f,
                                   storage::micros now, std::size_t max,
                                   std::optional<std::size_t> per_cursor
                                   = std::nullopt);

/// The page `q` asks for, with the full entries of that page; one pass
/// that keeps at most `offset + limit` summaries.
expected<dlq_page> list_dlq(storage::txn& t, const dlq_query& q,
                            storage::micros now);

} // namespace spool::core
