#include "storage/traces.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "storage/keys.hpp"
#include "storage/record_codec.hpp"

namespace spool::storage::traces {

namespace {

constexpr const char* table = "traces";

/// Where a name entry points, parsed from its key.
struct name_entry {
  micros at = 0;
  queue_id queue;
  partition_id partition;
  offset off;
  std::string id;
};

/// Parses the part of a `trace_names` key after its name.
std::optional<name_entry> parse_tail(queue_id q, std::string_view key,
                                     std::size_t at) {
  if (key.size() < at + 24)
    return std::nullopt;
  name_entry e;
  e.at = keys::get_i64(key, at);
  e.queue = q;
  e.partition = partition_id{keys::get_u64(key, at + 8)};
  e.off = offset{keys::get_i64(key, at + 16)};
  e.id = std::string{key.substr(at + 24)};
  return e;
}

error bad_index(queue_id q) {
  return make_error(ec::corrupt_record, "table trace_names: queue ", q.value,
                    ": a key does not parse");
}

error too_many(std::size_t max_scan, std::string_view what) {
  return make_error(ec::invalid_argument, "more than ", max_scan, " ", what,
                    ": too many to count in one request (retention or a "
                    "purge removes traces with their messages)");
}

} // namespace

expected<void> put(txn& t, queue_id q, partition_id p, offset off,
                   const trace_record& rec) {
  auto& d = t.db();
  SPOOL_TRY(detail::put_record(
      t, d.traces, keys::trace(q, p, off, rec.created_at, rec.id), rec));
  for (auto& n : rec.names)
    SPOOL_TRY(t.put(d.trace_names,
                    keys::trace_name(q, n, rec.created_at, p, off, rec.id),
                    {}));
  return {};
}

expected<std::size_t> count_of_message(txn& t, queue_id q, partition_id p,
                                       offset off, std::size_t cap) {
  std::size_t n = 0;
  auto scanned = t.scan_prefix(t.db().traces, keys::trace_message(q, p, off),
                               [&](auto, auto) { return ++n < cap; });
  if (!scanned)
    return std::move(scanned).err();
  return n;
}

expected<std::optional<offset>> traces_end(txn& t, queue_id q, partition_id p,
                                           std::size_t max_traces) {
  auto prefix = keys::partition(q, p);
  std::size_t n = 0;
  std::optional<offset> end;
  auto scanned = t.scan_prefix(t.db().traces, prefix, [&](auto key, auto) {
    if (++n <= max_traces)
      return true;
    end = offset{keys::get_i64(key, prefix.size())};
    return false;
  });
  if (!scanned)
    return std::move(scanned).err();
  return end;
}

expected<void> delete_below(txn& t, queue_id q, partition_id p, offset below) {
  auto& d = t.db();
  auto cur = t.open_cursor(d.traces);
  if (!cur)
    return std::move(cur).err();
  auto prefix = keys::partition(q, p);
  auto found = cur->seek(prefix);
  while (found && *found && cur->key().substr(0, prefix.size()) == prefix
         && keys::get_i64(cur->key(), prefix.size()) < below.value) {
    auto rec = detail::decode_record<trace_record>(cur->value(), table);
    if (!rec)
      return std::move(rec).err();
    auto off = offset{keys::get_i64(cur->key(), prefix.size())};
    for (auto& n : rec->names)
      SPOOL_TRY(t.del(d.trace_names, keys::trace_name(q, n, rec->created_at, p,
                                                      off, rec->id)));
    SPOOL_TRY(cur->del());
    found = cur->seek(prefix);
  }
  if (!found)
    return std::move(found).err();
  return {};
}

expected<std::vector<trace_record>>
of_message(txn& t, queue_id q, partition_id p, offset off, std::size_t limit) {
  std::vector<trace_record> out;
  SPOOL_TRY(detail::scan_records<trace_record>(
      t, t.db().traces, keys::trace_message(q, p, off), table,
      [&](auto, trace_record&& rec) {
        if (out.size() >= limit)
          return false;
        out.push_back(std::move(rec));
        return true;
      }));
  return out;
}

expected<named_page> named(txn& t, std::span<const queue_id> qs,
                           std::string_view name, std::size_t limit,
                           std::size_t skip, std::size_t max_scan) {
  std::vector<name_entry> entries;
  std::optional<error> failure;
  for (auto q : qs) {
    auto prefix = keys::trace_name_prefix(q, name);
    auto scanned
        = t.scan_prefix(t.db().trace_names, prefix, [&](auto key, auto) {
            auto e = parse_tail(q, key, prefix.size());
            if (!e)
              failure = bad_index(q);
            else if (entries.size() >= max_scan)
              failure = too_many(max_scan, "traces carry this name");
            else
              entries.push_back(std::move(*e));
            return !failure;
          });
    if (!scanned)
      return std::move(scanned).err();
    if (failure)
      return std::move(*failure);
  }
  // Newest first; the same µs by place, so pages do not overlap.
  auto order = [](const name_entry& e) {
    return std::tie(e.at, e.queue.value, e.partition.value, e.off.value, e.id);
  };
  std::sort(entries.begin(), entries.end(),
            [&](auto& a, auto& b) { return order(a) > order(b); });
  named_page page;
  page.total = entries.size();
  for (std::size_t i = skip; i < entries.size() && page.hits.size() < limit;
       ++i) {
    auto& e = entries[i];
    auto v = t.get(t.db().traces,
                   keys::trace(e.queue, e.partition, e.off, e.at, e.id));
    if (!v)
      return std::move(v).err();
    if (!*v)
      return make_error(ec::corrupt_record, "table trace_names: queue ",
                        e.queue.value, ": an entry names no trace");
    auto rec = detail::decode_record<trace_record>(**v, table);
    if (!rec)
      return std::move(rec).err();
    page.hits.push_back({e.queue, e.partition, e.off, std::move(*rec)});
  }
  return page;
}

expected<std::vector<name_stats>> names(txn& t, std::span<const queue_id> qs,
                                        std::size_t max_scan) {
  struct agg {
    std::uint64_t traces = 0;
    std::set<std::tuple<std::uint64_t, std::uint64_t, std::int64_t>> messages;
    micros last_seen = 0;
  };
  std::map<std::string, agg, std::less<>> by_name;
  std::size_t seen = 0;
  std::optional<error> failure;
  for (auto q : qs) {
    auto scanned = t.scan_prefix(
        t.db().trace_names, keys::queue(q), [&](auto key, auto) {
          if (++seen > max_scan) {
            failure = too_many(max_scan, "traced names in all");
            return false;
          }
          std::size_t len
              = key.size() > 8 ? static_cast<std::uint8_t>(key[8]) : 0;
          auto e = key.size() > 9 + len ? parse_tail(q, key, 9 + len)
                                        : std::nullopt;
          if (!e) {
            failure = bad_index(q);
            return false;
          }
          auto name = key.substr(9, len);
          auto it = by_name.find(name);
          if (it == by_name.end())
            it = by_name.emplace(std::string{name}, agg{}).first;
          auto& a = it->second;
          ++a.traces;
          a.messages.emplace(q.value, e->partition.value, e->off.value);
          a.last_seen = std::max(a.last_seen, e->at);
          return true;
        });
    if (!scanned)
      return std::move(scanned).err();
    if (failure)
      return std::move(*failure);
  }
  std::vector<name_stats> out;
  out.reserve(by_name.size());
  for (auto& [n, a] : by_name)
    out.push_back({n, a.traces, a.messages.size(), a.last_seen});
  std::stable_sort(out.begin(), out.end(),
                   [](auto& a, auto& b) { return a.last_seen > b.last_seen; });
  return out;
}

} // namespace spool::storage::traces
