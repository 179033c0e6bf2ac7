#include "core/queue/group_deletion.hpp"

#include <algorithm>

namespace spool::core {

deletion_verdict fold_votes(std::span<const std::optional<delete_vote>> votes,
                            const std::vector<bool>& stage_open) {
  deletion_verdict v;
  bool active = false;
  bool restarting = false;
  for (std::size_t i = 0; i < votes.size(); ++i) {
    if (!votes[i]) {
      if (i < stage_open.size() && stage_open[i])
        active = restarting = true;
      else
        v.rows.push_back(i);
      continue;
    }
    active = active || votes[i]->active;
    restarting = restarting || votes[i]->restarting;
    if (votes[i]->had)
      v.rows.push_back(i);
  }
  if (active) {
    v.result = restarting ? deletion_verdict::outcome::restarting
                          : deletion_verdict::outcome::active;
    v.rows.clear();
  }
  return v;
}

mono_clock::duration idle_sweep_interval(std::int64_t group_idle_s) {
  return std::chrono::seconds{std::clamp<std::int64_t>(group_idle_s, 1, 60)};
}

void idle_sweep::saw(const std::string& group, micros last_activity,
                     bool leased) {
  auto& g = groups_[group];
  g.last = std::max(g.last, last_activity);
  g.busy = g.busy || leased;
}

void idle_sweep::parked(const std::string& group) {
  if (auto it = groups_.find(group); it != groups_.end())
    it->second.busy = true;
}

std::vector<idle_sweep::idle_group> idle_sweep::idle(micros now,
                                                     micros idle) const {
  std::vector<idle_group> out;
  for (auto& [name, g] : groups_)
    if (!g.busy && now - g.last >= idle)
      out.push_back({name, g.last});
  return out;
}

} // namespace spool::core
