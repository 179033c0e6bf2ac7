#include "core/dlq/dlq_reader.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_set>

#include "storage/tables.hpp"
#include "vocab/slot.hpp"

namespace spool::core {

namespace {

using storage::ec;
using storage::make_error;

/// Whether `group` has met queue `q`: a subscription record, a cursor on one
/// of its partitions, or a DLQ entry.
storage::expected<bool>
group_known(storage::txn& t, storage::queue_id q,
            const std::vector<storage::partition_record>& parts,
            const std::string& group) {
  namespace tb = storage::tables;
  auto sub = tb::get_subscription(t, q, group);
  if (!sub)
    return std::move(sub).err();
  if (*sub)
    return true;
  for (auto& p : parts) {
    auto c = tb::get_cursor(t, q, p.id, group);
    if (!c)
      return std::move(c).err();
    if (*c)
      return true;
  }
  bool any = false;
  SPOOL_TRY(tb::scan_dlq(t, q, group, [&](const storage::dlq_entry&) {
    any = true;
    return false;
  }));
  return any;
}

} // namespace

namespace {

/// Keeps the `keep` entries with the highest ids (`newest`) or the lowest,
/// in a heap: memory bounded by `keep`, whatever the scan visits.
class bounded_pick {
public:
  bounded_pick(std::size_t keep, bool newest) : keep_(keep), newest_(newest) {
  }

  /// Whether an entry with `id` would be kept (before building it).
  bool wants(std::uint64_t id) const {
    if (keep_ == 0)
      return false;
    if (heap_.size() < keep_)
      return true;
    return newest_ ? id > heap_.front().entry.id : id < heap_.front().entry.id;
  }

  void add(dlq_item item) {
    heap_.push_back(std::move(item));
    std::push_heap(heap_.begin(), heap_.end(), order());
    if (heap_.size() > keep_) {
      std::pop_heap(heap_.begin(), heap_.end(), order());
      heap_.pop_back();
    }
  }

  /// The kept entries, newest first.
  std::vector<dlq_item> take() {
    sort_newest_first(heap_);
    return std::move(heap_);
  }

private:
  /// The heap's front is the kept entry to give up first.
  std::function<bool(const dlq_item&, const dlq_item&)> order() const {
    if (newest_) // a min-heap of ids
      return [](auto& a, auto& b) { return a.entry.id > b.entry.id; };
    return [](auto& a, auto& b) { return a.entry.id < b.entry.id; };
  }

  std::size_t keep_;
  bool newest_;
  std::vector<dlq_item> heap_;
};

/// One pass over the DLQ rows `f` selects: counts them, keeps what `pick`
/// wants among those below `after`.
storage::expected<std::size_t>
scan_selected(storage::txn& t, const dlq_filter& f, storage::micros now,
              std::optional<std::uint64_t> after, bounded_pick& pick,
              std::optional<std::size_t> per_cursor = std::nullopt) {
  namespace tb = storage::tables;
  auto queues = tb::all_queues(t);
  if (!queues)
    return std::move(queues).err();
  if (f.queue) {
    std::erase_if(*queues, [&](auto& q) { return q.name != *f.queue; });
    if (queues->empty())
      return make_error(ec::unknown_queue, "Queue not found: ", *f.queue);
  }
  if (f.slots)
    std::erase_if(*queues, [&](auto& q) {
      auto s = slot_of_id(q.id.value);
      return std::find(f.slots->begin(), f.slots->end(), s) == f.slots->end();
    });
  // Ids are looked up in a set, and names and times matched without them:
  // a request naming many ids costs one pass, not one pass per id.
  std::unordered_set<std::uint64_t> wanted(f.ids.begin(), f.ids.end());
  std::unordered_set<std::uint64_t> found;
  auto by_rest = f;
  by_rest.ids.clear();
  std::size_t total = 0;
  bool partition_seen = false;
  bool group_seen = false;
  for (auto& q : *queues) {
    auto parts = tb::partitions_of(t, q.id);
    if (!parts)
      return std::move(parts).err();
    std::map<std::uint64_t, const storage::partition_record*> names;
    for (auto& p : *parts) {
      names.emplace(p.id.value, &p);
      partition_seen
          = partition_seen || (f.partition && *f.partition == p.name);
    }
    // A requeue: per (group, partition), the cursor's free places (its
    // pending requeues are the entries marked requeued), so one full cursor
    // cannot hold the selection of every other one.
    std::map<std::pair<std::string, std::uint64_t>, std::size_t> used;
    auto scope
        = f.group ? std::optional<std::string_view>{*f.group} : std::nullopt;
    if (per_cursor)
      SPOOL_TRY(tb::scan_dlq_summaries(
          t, q.id, scope,
          [&](std::string_view group, const storage::tables::dlq_summary& s) {
            if (s.requeued)
              ++used[{std::string{group}, s.partition.value}];
            return true;
          }));
    auto visit = [&](std::string_view group,
                     const storage::tables::dlq_summary& s) {
      auto it = names.find(s.partition.value);
      // Both branches are views: a "" : std::string conditional would be a
      // temporary string.
      std::string_view pname = it == names.end()
                                   ? std::string_view{}
                                   : std::string_view{it->second->name};
      storage::dlq_entry e;
      e.id = s.id;
      e.partition = s.partition;
      e.message.off = s.off;
      e.deliveries = s.deliveries;
      e.failed_at = s.failed_at;
      e.requeued = s.requeued;
      if ((!wanted.empty() && !wanted.contains(s.id))
          || !matches(by_rest, q.name, group, pname, e)
          || expired(e, now, q.options.dlq_retention_s))
        return true;
      if (!wanted.empty())
        found.insert(s.id);
      if (per_cursor && s.requeued)
        return true; // pending already: nothing to requeue
      ++total;
      if (per_cursor) {
        auto& n = used[{std::string{group}, s.partition.value}];
        if (n >= *per_cursor)
          return true; // its cursor is full: a later call
        if (pick.wants(s.id))
          ++n;
      }
      if ((!after || s.id < *after) && pick.wants(s.id))
        pick.add(dlq_item{
            q.name, std::string{group}, std::string{pname}, q.id, std::move(e),
            it == names.end() ? std::string{} : it->second->uuid});
      return true;
    };
    if (f.group) {
      auto known = group_known(t, q.id, *parts, *f.group);
      if (!known)
        return std::move(known).err();
      group_seen = group_seen || *known;
    }
    SPOOL_TRY(tb::scan_dlq_summaries(t, q.id, scope, visit));
  }
  if (f.partition && !partition_seen)
    return make_error(ec::unknown_partition,
                      "Partition not found: ", *f.partition);
  if (f.group && !group_seen)
    return make_error(ec::not_found, "Consumer group not found: ", *f.group);
  for (auto id : f.ids)
    if (!found.contains(id))
      return make_error(ec::not_found, "DLQ entry not found: ", id);
  return total;
}

} // namespace

expected<dlq_selection> select_dlq(storage::txn& t, const dlq_filter& f,
                                   storage::micros now, std::size_t max,
                                   std::optional<std::size_t> per_cursor) {
  SPOOL_TRY(check(f));
  bounded_pick pick{max, false};
  auto total = scan_selected(t, f, now, std::nullopt, pick, per_cursor);
  if (!total)
    return storage::to_api(total.err());
  return dlq_selection{pick.take(), *total};
}

expected<dlq_page> list_dlq(storage::txn& t, const dlq_query& q,
                            storage::micros now) {
  SPOOL_TRY(check(q));
  bounded_pick pick{q.offset + q.limit, true};
  auto total = scan_selected(t, q.filter, now, q.after, pick);
  if (!total)
    return storage::to_api(total.err());
  auto page = paginate(pick.take(), q);
  page.total = *total;
  for (auto& item : page.items) {
    auto full
        = storage::tables::get_dlq(t, item.queue_id, item.group, item.entry.id);
    if (!full)
      return storage::to_api(full.err());
    if (*full)
      item.entry = std::move(**full);
  }
  return page;
}

} // namespace spool::core
