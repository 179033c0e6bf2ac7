#pragma once

/// Empty-scan watermarks and the candidate set of one queue (issue "replay",
/// the product document's "empty-scan watermarks"): per group, the
/// partitions (by index in the queue's ring) that may have deliverable
/// frames. A partition a group found empty at last offset X is left out of
/// its wildcard pops until the partition's last offset passes X; a requeue or
/// a seek puts it back at once, a subscription update puts every partition
/// back. A group never seen has every partition as a candidate. Pure: no CAF
/// include.

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "storage/types.hpp"

namespace spool::core {

class candidate_set {
public:
  /// The queue has `n` partitions now (indices 0..n-1); new ones are
  /// candidates for every group.
  void resize(std::size_t n);

  /// `group` found partition `p` empty at last offset `at`; the queue knows
  /// `last` as its last offset now. Left out unless `last` is past `at` (a
  /// push landed while the scan ran), or unless the set changed since the
  /// scan was asked (`asked_at`, its `generation()` then): a report that
  /// crossed a seek or a subscription update is stale and would hide the
  /// partition the seek just brought back.
  void found_empty(const std::string& group, std::size_t p, storage::offset at,
                   storage::offset last, std::uint64_t asked_at);

  /// Bumped by every `add` and `forget` (any group): the guard of
  /// `found_empty`. One counter for the set, not per (group, partition):
  /// a stale-looking report from another group only costs one more scan,
  /// and nothing per group outlives the group.
  std::uint64_t generation() const noexcept {
    return generation_;
  }

  /// Partition `p`'s last offset is `last` now: back for every group that
  /// found it empty below that.
  void pushed(std::size_t p, storage::offset last);

  /// Partition `p` is back for `group` (requeue, seek).
  void add(const std::string& group, std::size_t p);

  /// Every partition is back for `group` (subscription update, deletion).
  void forget(const std::string& group);

  /// The group's candidates in rotation order from `start` (wrapping).
  std::vector<std::size_t> order(const std::string& group,
                                 std::size_t start) const;

  bool is_candidate(const std::string& group, std::size_t p) const;

private:
  struct group_state {
    std::set<std::size_t> candidates;
    std::map<std::size_t, storage::offset> left_out; ///< found empty at
  };
  std::size_t n_ = 0;
  std::uint64_t generation_ = 0;
  std::unordered_map<std::string, group_state> groups_;
};

} // namespace spool::core
