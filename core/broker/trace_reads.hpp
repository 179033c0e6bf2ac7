#pragma once

/// The reads of message traces by name (storage/traces.hpp) across the live
/// queues, with what the wire shows beside each trace: its queue's and
/// partition's names and its message. Run beside the broker (they may scan
/// up to `max_trace_scan` index entries). Pure: no CAF.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/lmdb.hpp"
#include "storage/records.hpp"
#include "storage/traces.hpp"
#include "storage/types.hpp"

namespace spool::core {

/// The most name index entries one read visits: past it the read is
/// refused (`invalid_argument`), its count would not be exact.
inline constexpr std::size_t max_trace_scan = 200'000;
/// The most message payload bytes one page by name carries: the hits past
/// it come without their message.
inline constexpr std::size_t max_trace_page_bytes = 16u << 20;

struct live_queue {
  storage::queue_id id;
  std::string name;
};

struct trace_hit {
  storage::trace_record rec;
  std::string queue;
  std::string partition;
  std::string partition_uuid;
  /// None: deleted since, or past the page's byte budget.
  std::optional<storage::stored_frame> message;
};

struct trace_hits {
  std::vector<trace_hit> hits; ///< newest first
  std::uint64_t total = 0;
};

/// The traces named `name` in `queues` (a queue being deleted is left out),
/// newest first: `skip`, then at most `limit`.
storage::expected<trace_hits>
traces_named(storage::txn& t, const std::vector<live_queue>& queues,
             const std::string& name, std::size_t limit, std::size_t skip);

struct trace_names_page {
  std::vector<storage::traces::name_stats> names; ///< most recent first
  std::uint64_t total = 0;
};

/// The names used in `queues`, the most recently used first: `skip`, then
/// at most `limit`.
storage::expected<trace_names_page>
trace_names(storage::txn& t, const std::vector<live_queue>& queues,
            std::size_t limit, std::size_t skip);

} // namespace spool::core
