#pragma once

/// Reads the dead-letter queue for listings, deletes and requeues, inside
/// one short read transaction the caller owns (no CAF). Names in the filter
/// are resolved here: an unknown queue, partition, group or id is an error
/// naming it, so a wrong request changes nothing.

#include "actors/dlq/dlq_core.hpp"
#include "storage/lmdb.hpp"

namespace spool::core {

/// Every entry `f` selects, newest first, except those past their queue's
/// `dlqRetentionSeconds` at `now` (the sweep removes them later). Payloads
/// and headers are left out unless `with_message` (a selection may be
/// large).
storage::expected<std::vector<dlq_item>> select_dlq(storage::txn& t,
                                                    const dlq_filter& f,
                                                    storage::micros now,
                                                    bool with_message);

/// The page `q` asks for, with the full entries of that page.
storage::expected<dlq_page> list_dlq(storage::txn& t, const dlq_query& q,
                                     storage::micros now);

} // namespace spool::core
