#include "actors/dlq/dlq_reader.hpp"

#include <algorithm>
#include <map>

#include "storage/tables.hpp"

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

storage::expected<std::vector<dlq_item>> select_dlq(storage::txn& t,
                                                    const dlq_filter& f,
                                                    storage::micros now,
                                                    bool with_message) {
  namespace tb = storage::tables;
  SPOOL_TRY(check(f));
  auto queues = tb::all_queues(t);
  if (!queues)
    return std::move(queues).err();
  if (f.queue) {
    std::erase_if(*queues, [&](auto& q) { return q.name != *f.queue; });
    if (queues->empty())
      return make_error(ec::unknown_queue, "Queue not found: ", *f.queue);
  }
  std::vector<dlq_item> out;
  bool partition_seen = false;
  bool group_seen = false;
  for (auto& q : *queues) {
    auto parts = tb::partitions_of(t, q.id);
    if (!parts)
      return std::move(parts).err();
    std::map<std::uint64_t, std::string> names;
    for (auto& p : *parts) {
      names.emplace(p.id.value, p.name);
      partition_seen
          = partition_seen || (f.partition && *f.partition == p.name);
    }
    auto visit = [&](std::string_view group, const storage::dlq_entry& e) {
      auto it = names.find(e.partition.value);
      // Both branches are views: a "" : std::string conditional would be a
      // temporary string.
      std::string_view pname = it == names.end() ? std::string_view{}
                                                 : std::string_view{it->second};
      if (!matches(f, q.name, group, pname, e)
          || expired(e, now, q.options.dlq_retention_s))
        return true;
      dlq_item item{q.name, std::string{group}, std::string{pname}, q.id, e};
      if (!with_message) {
        item.entry.message.data.payload.clear();
        item.entry.message.data.headers.clear();
      }
      out.push_back(std::move(item));
      return true;
    };
    if (f.group) {
      auto known = group_known(t, q.id, *parts, *f.group);
      if (!known)
        return std::move(known).err();
      group_seen = group_seen || *known;
      SPOOL_TRY(
          tb::scan_dlq(t, q.id, *f.group, [&](const storage::dlq_entry& e) {
            return visit(*f.group, e);
          }));
    } else {
      SPOOL_TRY(tb::scan_queue_dlq(t, q.id, visit));
    }
  }
  if (f.partition && !partition_seen)
    return make_error(ec::unknown_partition,
                      "Partition not found: ", *f.partition);
  if (f.group && !group_seen)
    return make_error(ec::invalid_argument,
                      "Consumer group not found: ", *f.group);
  for (auto id : f.ids)
    if (std::none_of(out.begin(), out.end(),
                     [&](auto& x) { return x.entry.id == id; }))
      return make_error(ec::invalid_argument, "DLQ entry not found: ", id);
  sort_newest_first(out);
  return out;
}

storage::expected<dlq_page> list_dlq(storage::txn& t, const dlq_query& q,
                                     storage::micros now) {
  SPOOL_TRY(check(q));
  auto all = select_dlq(t, q.filter, now, false);
  if (!all)
    return std::move(all).err();
  auto page = paginate(std::move(*all), q);
  for (auto& item : page.items) {
    auto full
        = storage::tables::get_dlq(t, item.queue_id, item.group, item.entry.id);
    if (!full)
      return std::move(full).err();
    if (*full)
      item.entry = std::move(**full);
  }
  return page;
}

} // namespace spool::core
