#include "core/queue/leases.hpp"

#include <algorithm>

namespace spool::core {

void lease_directory::unlist(const std::string& id, mono_time expires) {
  auto [lo, hi] = by_expiry_.equal_range(expires);
  for (auto it = lo; it != hi; ++it)
    if (it->second == id) {
      by_expiry_.erase(it);
      return;
    }
}

void lease_directory::granted(const std::string& id, const std::string& group,
                              const std::vector<std::string>& partitions,
                              mono_time expires) {
  auto [it, fresh] = entries_.try_emplace(id);
  auto& e = it->second;
  if (fresh) {
    e.group = group;
    e.expires = expires;
    by_expiry_.emplace(expires, id);
  } else if (expires > e.expires) {
    unlist(id, e.expires);
    e.expires = expires;
    by_expiry_.emplace(expires, id);
  }
  for (auto& p : partitions)
    if (std::find(e.partitions.begin(), e.partitions.end(), p)
        == e.partitions.end())
      e.partitions.push_back(p);
}

const lease_entry* lease_directory::find(const std::string& id, mono_time now) {
  auto it = entries_.find(id);
  if (it == entries_.end())
    return nullptr;
  if (it->second.expires <= now) {
    unlist(id, it->second.expires);
    entries_.erase(it);
    return nullptr;
  }
  return &it->second;
}

bool lease_directory::expired(const std::string& id, mono_time now) const {
  auto it = entries_.find(id);
  return it != entries_.end() && it->second.expires <= now;
}

void lease_directory::extended(const std::string& id, mono_time expires) {
  auto it = entries_.find(id);
  if (it == entries_.end() || expires <= it->second.expires)
    return;
  unlist(id, it->second.expires);
  it->second.expires = expires;
  by_expiry_.emplace(expires, id);
}

bool lease_directory::ended(const std::string& id,
                            const std::string& partition) {
  auto it = entries_.find(id);
  if (it == entries_.end())
    return false;
  std::erase(it->second.partitions, partition);
  if (!it->second.partitions.empty())
    return false;
  unlist(id, it->second.expires);
  entries_.erase(it);
  return true;
}

bool lease_directory::erase(const std::string& id) {
  auto it = entries_.find(id);
  if (it == entries_.end())
    return false;
  unlist(id, it->second.expires);
  entries_.erase(it);
  return true;
}

std::vector<std::string> lease_directory::sweep(mono_time now,
                                                std::size_t max) {
  std::vector<std::string> out;
  while (!by_expiry_.empty() && out.size() < max
         && by_expiry_.begin()->first <= now) {
    auto id = std::move(by_expiry_.begin()->second);
    by_expiry_.erase(by_expiry_.begin());
    entries_.erase(id);
    out.push_back(std::move(id));
  }
  return out;
}

} // namespace spool::core
