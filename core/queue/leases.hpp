#pragma once

/// A queue's directory of live leases by id: one wildcard pop leases
/// several partitions under one id, and the wire names a lease by its id
/// alone (`POST /lease/:leaseId/extend`), so the queue keeps which
/// partitions (and group) each id holds. An entry ends when every partition
/// of it ended (acked, released, found gone) or when its expiry passed;
/// `sweep` removes the expired ones in bounded steps, so the directory holds
/// at most the live leases. Pure: no CAF include.

#include <cstddef>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "vocab/time.hpp"

namespace spool::core {

struct lease_entry {
  std::string group;
  std::vector<std::string> partitions; ///< the partitions still leased
  mono_time expires;                   ///< the latest expiry among them
};

class lease_directory {
public:
  /// A pop granted lease `id` on `partitions` for `group` until `expires`.
  /// Adds to an entry of the same id (a pop's claims may arrive in steps).
  void granted(const std::string& id, const std::string& group,
               const std::vector<std::string>& partitions, mono_time expires);

  /// The entry of `id` if it has not expired at `now` (nullptr otherwise;
  /// an expired one is removed).
  const lease_entry* find(const std::string& id, mono_time now);

  /// Whether `id` is known and expired at `now` (an extend answers
  /// `Lease already expired` then, not `Lease not found`).
  bool expired(const std::string& id, mono_time now) const;

  /// An extend moved the expiry of `id` to `expires` (the latest wins).
  void extended(const std::string& id, mono_time expires);

  /// The lease ended on `partition` (its last frame settled, released, or
  /// the partition answered that it is gone); true if the whole entry ended.
  bool ended(const std::string& id, const std::string& partition);

  /// Removes the whole entry of `id` (released); true if it existed.
  bool erase(const std::string& id);

  /// Removes up to `max` entries expired at `now`; returns their ids.
  std::vector<std::string> sweep(mono_time now, std::size_t max);

  std::size_t size() const noexcept {
    return entries_.size();
  }

private:
  std::unordered_map<std::string, lease_entry> entries_;
  /// (expiry, id) of every entry, in expiry order; an entry is listed at
  /// its current expiry only.
  std::multimap<mono_time, std::string> by_expiry_;

  void unlist(const std::string& id, mono_time expires);
};

} // namespace spool::core
