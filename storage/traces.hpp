#pragma once

/// The traces of messages (Queen's message traces): notes consumers attach
/// to a message, stored beside it and gone with it. `traces` holds them by
/// message (queue · partition · offset · created_at · id); `trace_names`
/// indexes them by name within each queue (queue · name · created_at ·
/// partition · offset · id), so a queue's deletion sweeps both by its
/// prefix and a read by name visits only that name's entries.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "storage/records.hpp"

namespace spool::storage::traces {

/// The most traces one message holds: a retention step deletes a bounded
/// number of rows per message it removes.
inline constexpr std::size_t max_per_message = 100;

/// The number of traces of the message at `off`, counting at most `cap`.
expected<std::size_t> count_of_message(txn& t, queue_id q, partition_id p,
                                       offset off, std::size_t cap);

/// Where (q, p)'s traces pass `max_traces`, oldest offset first: the
/// offset of the message holding the first trace past it, or none when all
/// fit. Bounds a retention step (`plan_retention`): each trace deletes at
/// most 33 rows (itself and its names). Visits keys only, at most
/// `max_traces + 1`.
expected<std::optional<offset>> traces_end(txn& t, queue_id q, partition_id p,
                                           std::size_t max_traces);

/// Stores `rec` as a trace of the message at `off`, with its name entries.
/// No check that the message exists (`mut::put_trace` makes it).
expected<void> put(txn& t, queue_id q, partition_id p, offset off,
                   const trace_record& rec);

/// Removes the traces of the messages of (q, p) below `below`, with their
/// name entries (their segments were deleted).
expected<void> delete_below(txn& t, queue_id q, partition_id p, offset below);

/// The traces of the message at `off`, oldest first, at most `limit`
/// (a message holds at most `max_per_message`, each at most 64 KiB).
expected<std::vector<trace_record>>
of_message(txn& t, queue_id q, partition_id p, offset off, std::size_t limit);

struct trace_hit {
  queue_id queue;
  partition_id partition;
  offset off;
  trace_record rec;
};

struct named_page {
  std::vector<trace_hit> hits; ///< newest first
  std::uint64_t total = 0;     ///< every trace with the name
};

/// The traces named `name` in the queues `qs`, newest first: `skip` of
/// them, then at most `limit`. Refused (`ec::invalid_argument`) when more
/// than `max_scan` carry the name: the count is exact or not given.
expected<named_page> named(txn& t, std::span<const queue_id> qs,
                           std::string_view name, std::size_t limit,
                           std::size_t skip, std::size_t max_scan);

struct name_stats {
  std::string name;
  std::uint64_t traces = 0;
  std::uint64_t messages = 0; ///< distinct messages carrying it
  micros last_seen = 0;
};

/// Every trace name used in the queues `qs`, the most recently used first
/// (then by name). Refused (`ec::invalid_argument`) past `max_scan` name
/// entries in all.
expected<std::vector<name_stats>> names(txn& t, std::span<const queue_id> qs,
                                        std::size_t max_scan);

} // namespace spool::storage::traces
