#include "core/queue/candidates.hpp"

#include <algorithm>

namespace spool::core {

void candidate_set::resize(std::size_t n) {
  for (auto& [_, g] : groups_)
    for (auto p = n_; p < n; ++p)
      g.candidates.insert(p);
  n_ = std::max(n_, n);
}

void candidate_set::found_empty(const std::string& group, std::size_t p,
                                storage::offset at, storage::offset last,
                                std::uint64_t asked_at) {
  if (p >= n_ || last > at || asked_at != generation_)
    return;
  auto [it, fresh] = groups_.try_emplace(group);
  auto& g = it->second;
  if (fresh)
    for (std::size_t i = 0; i < n_; ++i)
      g.candidates.insert(g.candidates.end(), i);
  g.candidates.erase(p);
  g.left_out[p] = at;
}

void candidate_set::pushed(std::size_t p, storage::offset last) {
  for (auto& [_, g] : groups_)
    if (auto it = g.left_out.find(p);
        it != g.left_out.end() && last > it->second) {
      g.left_out.erase(it);
      g.candidates.insert(p);
    }
}

void candidate_set::add(const std::string& group, std::size_t p) {
  ++generation_;
  auto it = groups_.find(group);
  if (it == groups_.end() || p >= n_)
    return; // every partition is a candidate already
  it->second.left_out.erase(p);
  it->second.candidates.insert(p);
}

void candidate_set::forget(const std::string& group) {
  ++generation_;
  groups_.erase(group);
}

std::vector<std::size_t> candidate_set::order(const std::string& group,
                                              std::size_t start) const {
  std::vector<std::size_t> out;
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    out.reserve(n_);
    for (std::size_t i = 0; i < n_; ++i)
      out.push_back((start + i) % std::max<std::size_t>(n_, 1));
    return out;
  }
  auto& c = it->second.candidates;
  out.reserve(c.size());
  auto from = c.lower_bound(start);
  out.insert(out.end(), from, c.end());
  out.insert(out.end(), c.begin(), from);
  return out;
}

bool candidate_set::is_candidate(const std::string& group,
                                 std::size_t p) const {
  auto it = groups_.find(group);
  return p < n_ && (it == groups_.end() || it->second.candidates.contains(p));
}

} // namespace spool::core
