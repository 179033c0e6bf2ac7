#pragma once

/// The dead-letter queue's rules as pure functions (semantics.md §4): which
/// entries a filter selects, the listing order and pagination (newest first,
/// a stable `after` cursor, an exact total) and the retention sweep. No CAF,
/// no storage access: `dlq_reader` feeds them what it scans.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/error.hpp"
#include "storage/records.hpp"
#include "vocab/queries.hpp"

namespace spool::core {

using spool::dlq_filter;
using spool::dlq_query;

constexpr std::size_t dlq_max_limit = 10'000;
/// A listing's deepest `offset` (a deeper page is reached with `after`):
/// a listing keeps at most offset + limit summaries in memory.
constexpr std::size_t dlq_max_offset = 100'000;
/// Entries one requeue or delete acts on (the oldest selected first); the
/// answer says how many remain for the next call. Bounds the write batch.
constexpr std::size_t dlq_max_batch = 10'000;

/// One entry with the names of where it lives.
struct dlq_item {
  std::string queue;
  std::string group;
  std::string partition;
  storage::queue_id queue_id;
  storage::dlq_entry entry;
  std::string partition_uuid = {}; ///< the wire's partitionId
};

struct dlq_page {
  std::vector<dlq_item> items; ///< newest first
  std::size_t total = 0;       ///< of the filtered set (no limit/offset/after)
};

/// Checks a filter ("from is after to", …); names are checked by the reader.
expected<void> check(const dlq_filter& f);
/// Checks a filter's ids (at most dlq_max_batch) and a query: its filter,
/// `limit` in 1..dlq_max_limit, `offset` up to dlq_max_offset.
expected<void> check(const dlq_query& q);

/// Whether the entry of (queue, group, partition) passes the filter.
bool matches(const dlq_filter& f, std::string_view queue,
             std::string_view group, std::string_view partition,
             const storage::dlq_entry& e);

/// Newest first: by dlqId, descending. Ids are never reused and grow with
/// each first failure, so the order is stable and `after` is exact even when
/// entries are deleted meanwhile.
void sort_newest_first(std::vector<dlq_item>& items);

/// The page of `items` (all matching, any order) `q` asks for.
dlq_page paginate(std::vector<dlq_item> items, const dlq_query& q);

/// Whether `e` is past its retention at `now` (a pending requeue never is;
/// `retention_s` <= 0 keeps entries forever).
bool expired(const storage::dlq_entry& e, storage::micros now,
             std::int64_t retention_s);

/// The retention sweep over one queue's entries: which expired
/// (`failed_at + retention <= now`; a pending requeue never does), at most
/// `max_step` per sweep, and when the next sweep is due: never sooner than
/// `min_gap` after this one unless a step was full (so a steady stream of
/// dead letters costs one scan per gap, not one per entry). Listings hide
/// expired entries meanwhile (`expired`), so the gap is invisible.
class dlq_sweeper {
public:
  /// `retention_s` <= 0 keeps entries forever.
  dlq_sweeper(storage::micros now, std::int64_t retention_s,
              std::size_t max_step, storage::micros min_gap);

  void see(std::string_view group, const storage::dlq_entry& e);

  /// Expired entries (group, id) to delete.
  const std::vector<std::pair<std::string, std::uint64_t>>&
  expired() const noexcept {
    return expired_;
  }
  /// When the next sweep is due (wall µs): now when more expired entries
  /// are left than one step takes; none when no entry will ever expire.
  std::optional<storage::micros> next() const noexcept {
    return next_;
  }

private:
  storage::micros now_;
  std::int64_t retention_us_;
  std::size_t max_step_;
  storage::micros min_gap_;
  std::vector<std::pair<std::string, std::uint64_t>> expired_;
  std::optional<storage::micros> next_;
};

} // namespace spool::core
