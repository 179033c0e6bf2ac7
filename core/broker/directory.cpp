#include "core/broker/directory.hpp"

namespace spool::core {

void partition_directory::add(const std::string& uuid, const std::string& queue,
                              const std::string& partition) {
  auto [it, fresh]
      = by_uuid_.try_emplace(uuid, partition_place{queue, partition});
  if (!fresh) {
    if (it->second.queue == queue) {
      it->second.partition = partition;
      return;
    }
    // Moved to another queue (never today: uuids are random): unlist it
    // from its old queue first.
    auto& old = of_queue_[it->second.queue];
    std::erase(old, uuid);
    it->second = partition_place{queue, partition};
  }
  of_queue_[queue].push_back(uuid);
}

const partition_place* partition_directory::find(std::string_view uuid) const {
  // std::unordered_map<std::string, …> has no heterogeneous lookup in C++20
  // without a transparent hash; one string per lookup is cheap here.
  auto it = by_uuid_.find(std::string{uuid});
  return it == by_uuid_.end() ? nullptr : &it->second;
}

void partition_directory::drop_queue(const std::string& queue) {
  auto it = of_queue_.find(queue);
  if (it == of_queue_.end())
    return;
  for (auto& uuid : it->second)
    by_uuid_.erase(uuid);
  of_queue_.erase(it);
}

} // namespace spool::core
