#include "core/broker/directory.hpp"

namespace spool::core {

void partition_directory::add(const std::string& uuid, const std::string& queue,
                              const std::string& partition,
                              std::uint64_t queue_id) {
  auto [it, fresh]
      = by_uuid_.try_emplace(uuid, partition_place{queue, partition, queue_id});
  if (!fresh) {
    if (it->second.queue == queue) {
      it->second.partition = partition;
      it->second.queue_id = queue_id;
      return;
    }
    // Moved to another queue (never today: uuids are random): unlisted
    // from its old queue first.
    std::erase(of_queue_[it->second.queue], uuid);
    it->second = partition_place{queue, partition, queue_id};
  }
  of_queue_[queue].push_back(uuid);
}

const partition_place* partition_directory::find(std::string_view uuid) const {
  auto it = by_uuid_.find(uuid);
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
