#include "core/queue/group_deletion.hpp"

#include "storage/tables.hpp"

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

storage::expected<std::vector<storage::mutation>> deletion_mutations(
    storage::txn& t, storage::queue_id q, const std::string& group,
    std::span<const storage::partition_id> partitions, bool delete_record) {
  namespace mut = storage::mut;
  std::vector<storage::mutation> out;
  for (auto p : partitions)
    out.emplace_back(mut::delete_cursor{q, p, group});
  if (delete_record)
    out.emplace_back(mut::delete_subscription{q, group});
  if (out.empty())
    return out;
  std::vector<std::uint64_t> pending;
  SPOOL_TRY(storage::tables::scan_dlq_summaries(
      t, q, std::string_view{group},
      [&](std::string_view, const storage::tables::dlq_summary& e) {
        if (e.requeued)
          pending.push_back(e.id);
        return true;
      }));
  for (auto id : pending) {
    auto e = storage::tables::get_dlq(t, q, group, id);
    if (!e)
      return std::move(e).err();
    if (!*e)
      continue;
    (*e)->requeued = false;
    out.emplace_back(mut::update_dlq{q, group, std::move(**e)});
  }
  return out;
}

} // namespace spool::core
