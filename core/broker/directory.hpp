#pragma once

/// The node's directory of partitions by uuid: a wire ack names its frame by
/// `partitionId` (the partition's uuid) and transactionId only, so the
/// broker resolves the uuid to (queue, partition name) here. Filled at
/// recovery and by every reply that names a new partition (push, configure,
/// transaction), pruned when a queue is deleted. Pure: no CAF include.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace spool::core {

/// Where a partition uuid lives.
struct partition_place {
  std::string queue;
  std::string partition;
  /// The queue's internal id: a queue deleted and created again under the
  /// same name has another, so a stale uuid is told apart (`find`'s caller
  /// compares it with the live queue's).
  std::uint64_t queue_id = 0;
};

class partition_directory {
public:
  /// Records (or re-records) `uuid` as partition `partition` of `queue`.
  void add(const std::string& uuid, const std::string& queue,
           const std::string& partition, std::uint64_t queue_id);

  /// The partition of `uuid`, if known (nullptr otherwise).
  const partition_place* find(std::string_view uuid) const;

  /// Forgets every partition of `queue` (it was deleted).
  void drop_queue(const std::string& queue);

  std::size_t size() const noexcept {
    return by_uuid_.size();
  }

private:
  /// Looked up by `string_view` without making a string (one lookup per
  /// ack item).
  struct text_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unordered_map<std::string, partition_place, text_hash, std::equal_to<>>
      by_uuid_;
  /// The uuids of each queue, for `drop_queue`.
  std::unordered_map<std::string, std::vector<std::string>> of_queue_;
};

} // namespace spool::core
