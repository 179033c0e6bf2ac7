#include "storage/tables.hpp"

#include "storage/keys.hpp"
#include "storage/record_codec.hpp"
#include "storage/serial.hpp"

namespace spool::storage::tables {

namespace {

using detail::decode_record;
using detail::put_record;

template <class T>
expected<std::optional<T>> get_record(txn& t, MDB_dbi dbi, std::string_view key,
                                      const char* table) {
  auto v = t.get(dbi, key);
  if (!v)
    return std::move(v).err();
  if (!*v)
    return std::optional<T>{};
  auto rec = decode_record<T>(**v, table);
  if (!rec)
    return std::move(rec).err();
  return std::optional<T>{std::move(*rec)};
}

/// Decodes every record under `prefix`; `name_of` extracts the key suffix.
template <class T>
expected<std::vector<std::pair<std::string, T>>>
named_records(txn& t, MDB_dbi dbi, const std::string& prefix,
              const char* table) {
  std::vector<std::pair<std::string, T>> out;
  SPOOL_TRY(
      detail::scan_records<T>(t, dbi, prefix, table, [&](auto key, T&& rec) {
        out.emplace_back(std::string{key.substr(prefix.size())},
                         std::move(rec));
        return true;
      }));
  return out;
}

template <class T>
expected<std::vector<T>> records(txn& t, MDB_dbi dbi, const std::string& prefix,
                                 const char* table) {
  auto named = named_records<T>(t, dbi, prefix, table);
  if (!named)
    return std::move(named).err();
  std::vector<T> out;
  out.reserve(named->size());
  for (auto& [_, rec] : *named)
    out.push_back(std::move(rec));
  return out;
}

} // namespace

expected<void> put_queue(txn& t, const queue_record& rec) {
  return put_record(t, t.db().queues, keys::queue(rec.id), rec);
}

expected<std::optional<queue_record>> get_queue(txn& t, queue_id q) {
  return get_record<queue_record>(t, t.db().queues, keys::queue(q), "queues");
}

expected<std::vector<queue_record>> all_queues(txn& t) {
  return records<queue_record>(t, t.db().queues, "", "queues");
}

expected<void> put_partition(txn& t, const partition_record& rec) {
  return put_record(t, t.db().partitions, keys::partition(rec.queue, rec.id),
                    rec);
}

expected<std::optional<partition_record>> get_partition(txn& t, queue_id q,
                                                        partition_id p) {
  return get_record<partition_record>(t, t.db().partitions,
                                      keys::partition(q, p), "partitions");
}

expected<partition_record> require_partition(txn& t, queue_id q,
                                             partition_id p) {
  auto rec = get_partition(t, q, p);
  if (!rec)
    return std::move(rec).err();
  // A deleted queue's partition rows stay until its sweep removes them:
  // they are not there for anyone (a write in flight at the deletion fails).
  auto doomed = is_doomed(t, q);
  if (!doomed)
    return std::move(doomed).err();
  if (!*rec || *doomed)
    return make_error(ec::unknown_partition, "partition ", q.value, "/",
                      p.value, " does not exist");
  return std::move(**rec);
}

expected<std::vector<partition_record>> all_partitions(txn& t) {
  return records<partition_record>(t, t.db().partitions, "", "partitions");
}

expected<std::vector<partition_record>> partitions_of(txn& t, queue_id q) {
  return records<partition_record>(t, t.db().partitions, keys::queue(q),
                                   "partitions");
}

expected<void> put_cursor(txn& t, queue_id q, partition_id p,
                          std::string_view group, const cursor_record& rec) {
  return put_record(t, t.db().cursors, keys::partition_named(q, p, group), rec);
}

expected<std::optional<cursor_record>>
get_cursor(txn& t, queue_id q, partition_id p, std::string_view group) {
  return get_record<cursor_record>(
      t, t.db().cursors, keys::partition_named(q, p, group), "cursors");
}

expected<bool> delete_cursor(txn& t, queue_id q, partition_id p,
                             std::string_view group) {
  return t.del(t.db().cursors, keys::partition_named(q, p, group));
}

expected<std::vector<std::pair<std::string, cursor_record>>>
cursors_of(txn& t, queue_id q, partition_id p) {
  return named_records<cursor_record>(t, t.db().cursors, keys::partition(q, p),
                                      "cursors");
}

expected<void> put_subscription(txn& t, queue_id q, std::string_view group,
                                const subscription_record& rec) {
  return put_record(t, t.db().subscriptions, keys::queue_named(q, group), rec);
}

expected<std::optional<subscription_record>>
get_subscription(txn& t, queue_id q, std::string_view group) {
  return get_record<subscription_record>(
      t, t.db().subscriptions, keys::queue_named(q, group), "subscriptions");
}

expected<bool> delete_subscription(txn& t, queue_id q, std::string_view group) {
  return t.del(t.db().subscriptions, keys::queue_named(q, group));
}

expected<std::vector<std::pair<std::string, subscription_record>>>
subscriptions_of(txn& t, queue_id q) {
  return named_records<subscription_record>(t, t.db().subscriptions,
                                            keys::queue(q), "subscriptions");
}

expected<void> put_dlq(txn& t, queue_id q, std::string_view group,
                       const dlq_entry& e) {
  // The key's one length byte cannot wrap: longer names are never stored
  // (and so never found below).
  if (group.size() > keys::max_dlq_group)
    return make_error(ec::invalid_argument, "dlq: group name over ",
                      keys::max_dlq_group, " bytes");
  return put_record(t, t.db().dlq, keys::dlq(q, group, e.id), e);
}

expected<std::optional<dlq_entry>>
get_dlq(txn& t, queue_id q, std::string_view group, std::uint64_t id) {
  if (group.size() > keys::max_dlq_group)
    return std::optional<dlq_entry>{};
  return get_record<dlq_entry>(t, t.db().dlq, keys::dlq(q, group, id), "dlq");
}

expected<bool> delete_dlq(txn& t, queue_id q, std::string_view group,
                          std::uint64_t id) {
  if (group.size() > keys::max_dlq_group)
    return false;
  return t.del(t.db().dlq, keys::dlq(q, group, id));
}

namespace {

/// A dlq_entry's layout with views for its bytes (see `dlq_summary`): the
/// same fields in the same order, so it decodes any stored entry.
struct frame_view {
  std::string_view transaction_id;
  txid_origin origin = txid_origin::generated;
  std::string_view trace_id;
  std::vector<std::pair<std::string_view, std::string_view>> headers;
  std::string_view producer_sub;
  payload_encoding encoding = payload_encoding::json;
  std::string_view payload;

  template <class F>
  friend auto fields(F& f, frame_view& x) {
    return f(x.transaction_id, x.origin, x.trace_id, x.headers, x.producer_sub,
             x.encoding, x.payload);
  }
};

struct dlq_entry_view {
  std::uint64_t id = 0;
  partition_id partition;
  offset off;
  micros created_at = 0;
  frame_view data;
  std::string_view error;
  std::uint32_t deliveries = 0;
  micros failed_at = 0;
  bool requeued = false;

  template <class F>
  friend auto fields(F& f, dlq_entry_view& x) {
    return f(x.id, x.partition, x.off, x.created_at, x.data, x.error,
             x.deliveries, x.failed_at, x.requeued);
  }
};

template <class T>
expected<T> decode_dlq_value(std::string_view value);

template <>
expected<dlq_entry> decode_dlq_value<dlq_entry>(std::string_view value) {
  return decode_record<dlq_entry>(value, "dlq");
}

template <>
expected<dlq_summary> decode_dlq_value<dlq_summary>(std::string_view value) {
  auto v = decode_record<dlq_entry_view>(value, "dlq");
  if (!v)
    return std::move(v).err();
  return dlq_summary{v->id,         v->partition, v->off,
                     v->deliveries, v->failed_at, v->requeued};
}

/// Scans the DLQ rows under `prefix` (one group's, or a queue's), decoding
/// each as `T`; `f` gets the group and the record.
template <class T, class F>
expected<void> scan_dlq_rows(txn& t, const std::string& prefix, F&& f) {
  std::optional<error> failure;
  auto scanned = t.scan_prefix(t.db().dlq, prefix, [&](auto key, auto value) {
    // queue(8) · group length(1) · group · id(8)
    std::size_t len = key.size() > 8 ? static_cast<std::uint8_t>(key[8]) : 0;
    if (key.size() != 8 + 1 + len + 8) {
      failure = make_error(ec::corrupt_record, "dlq: malformed key");
      return false;
    }
    auto rec = decode_dlq_value<T>(value);
    if (!rec) {
      failure = std::move(rec).err();
      return false;
    }
    return f(key.substr(9, len), *rec);
  });
  if (!scanned)
    return scanned;
  if (failure)
    return std::move(*failure);
  return {};
}

} // namespace

namespace {

expected<std::optional<std::uint64_t>>
highest_dlq_id_under(txn& t, std::string_view prefix) {
  std::optional<std::uint64_t> highest;
  bool malformed = false;
  auto scanned = t.scan_prefix(t.db().dlq, prefix, [&](auto key, auto) {
    if (key.size() < 8 + 1 + 8) { // queue · group length · group · id
      malformed = true;
      return false;
    }
    auto id = keys::get_u64(key, key.size() - 8);
    highest = std::max(highest.value_or(0), id);
    return true;
  });
  if (!scanned)
    return std::move(scanned).err();
  if (malformed)
    return make_error(ec::corrupt_record, "dlq: malformed key");
  return highest;
}

} // namespace

expected<std::optional<std::uint64_t>> highest_dlq_id(txn& t) {
  return highest_dlq_id_under(t, "");
}

expected<std::optional<std::uint64_t>> highest_dlq_id(txn& t, slot_t s) {
  // A queue id is the slot in bits 32-47 (bits 48-63 are 0): its first
  // four key bytes.
  std::string prefix;
  keys::put_u64(prefix, slot_id(s, 0));
  prefix.resize(4);
  return highest_dlq_id_under(t, prefix);
}

expected<void> scan_dlq(txn& t, queue_id q, std::string_view group,
                        const std::function<bool(const dlq_entry&)>& f) {
  if (group.size() > keys::max_dlq_group)
    return {};
  return scan_dlq_rows<dlq_entry>(
      t, keys::dlq_prefix(q, group),
      [&](std::string_view, const dlq_entry& e) { return f(e); });
}

expected<void> scan_queue_dlq(
    txn& t, queue_id q,
    const std::function<bool(std::string_view, const dlq_entry&)>& f) {
  return scan_dlq_rows<dlq_entry>(t, keys::queue(q), f);
}

expected<void> scan_dlq_summaries(
    txn& t, queue_id q, std::optional<std::string_view> group,
    const std::function<bool(std::string_view, const dlq_summary&)>& f) {
  if (group && group->size() > keys::max_dlq_group)
    return {};
  return scan_dlq_rows<dlq_summary>(
      t, group ? keys::dlq_prefix(q, *group) : keys::queue(q), f);
}

expected<void> put_dedup(txn& t, queue_id q, partition_id p,
                         std::string_view txid, const dedup_record& rec) {
  return put_record(t, t.db().dedup, keys::partition_named(q, p, txid), rec);
}

expected<std::optional<dedup_record>>
get_dedup(txn& t, queue_id q, partition_id p, std::string_view txid) {
  return get_record<dedup_record>(t, t.db().dedup,
                                  keys::partition_named(q, p, txid), "dedup");
}

expected<bool> delete_dedup(txn& t, queue_id q, partition_id p,
                            std::string_view txid) {
  return t.del(t.db().dedup, keys::partition_named(q, p, txid));
}

// -- transaction results ------------------------------------------------------

expected<void> put_txn(txn& t, queue_id q, std::string_view id,
                       const txn_record& rec) {
  SPOOL_TRY(delete_txn(t, q, id)); // a replaced id leaves no stale index
  SPOOL_TRY(put_record(t, t.db().txns, keys::txn(q, id), rec));
  return t.put(t.db().txn_time, keys::txn_time(q, rec.created_at, id), {});
}

expected<std::optional<txn_record>> get_txn(txn& t, queue_id q,
                                            std::string_view id) {
  return get_record<txn_record>(t, t.db().txns, keys::txn(q, id), "txns");
}

expected<bool> delete_txn(txn& t, queue_id q, std::string_view id) {
  auto old = get_txn(t, q, id);
  if (!old)
    return std::move(old).err();
  if (!*old)
    return false;
  SPOOL_TRY(t.del(t.db().txn_time, keys::txn_time(q, (*old)->created_at, id)));
  return t.del(t.db().txns, keys::txn(q, id));
}

expected<std::vector<std::string>>
txns_before(txn& t, queue_id q, micros before, std::size_t limit) {
  std::vector<std::string> out;
  auto prefix = keys::queue(q);
  auto scanned = t.scan_prefix(t.db().txn_time, prefix, [&](auto key, auto) {
    // queue(8) · created_at(8) · id
    if (out.size() >= limit || key.size() < 16
        || keys::get_i64(key, 8) >= before)
      return false;
    out.emplace_back(key.substr(16));
    return true;
  });
  if (!scanned)
    return std::move(scanned).err();
  return out;
}

expected<void> put_doomed(txn& t, queue_id q) {
  return t.put(t.db().meta, keys::doomed(q), {});
}

expected<bool> delete_doomed(txn& t, queue_id q) {
  return t.del(t.db().meta, keys::doomed(q));
}

expected<bool> is_doomed(txn& t, queue_id q) {
  auto v = t.get(t.db().meta, keys::doomed(q));
  if (!v)
    return std::move(v).err();
  return v->has_value();
}

expected<std::vector<queue_id>> doomed_queues(txn& t) {
  std::vector<queue_id> out;
  auto cur = t.open_cursor(t.db().meta);
  if (!cur)
    return std::move(cur).err();
  auto found = cur->first();
  for (; found && *found; found = cur->next()) {
    auto key = cur->key();
    if (key.size() == keys::slot_key_bytes + keys::doomed_suffix.size()
        && keys::slot_of_key(key)
        && key.substr(keys::slot_key_bytes) == keys::doomed_suffix)
      out.push_back(queue_id{keys::get_u64(key, 0)});
  }
  if (!found)
    return std::move(found).err();
  return out;
}

expected<slot_counters> get_counters(txn& t, slot_t s) {
  auto rec = get_record<slot_counters>(t, t.db().meta, keys::slot_counters(s),
                                       "meta");
  if (!rec)
    return std::move(rec).err();
  return rec->value_or(slot_counters{});
}

expected<void> put_counters(txn& t, slot_t s, const slot_counters& c) {
  return put_record(t, t.db().meta, keys::slot_counters(s), c);
}

namespace {

expected<std::uint32_t> get_u32(txn& t, std::string_view key) {
  auto v = t.get(t.db().meta, key);
  if (!v)
    return std::move(v).err();
  if (!*v)
    return std::uint32_t{0};
  if ((*v)->size() != 4)
    return make_error(ec::corrupt_record, "meta: ", key, " holds ",
                      (*v)->size(), " bytes, not 4");
  std::uint32_t x = 0;
  for (char c : **v)
    x = (x << 8) | static_cast<std::uint8_t>(c);
  return x;
}

expected<void> put_u32(txn& t, std::string_view key, std::uint32_t x) {
  std::string v;
  for (int shift = 24; shift >= 0; shift -= 8)
    v.push_back(static_cast<char>((x >> shift) & 0xff));
  return t.put(t.db().meta, key, v);
}

} // namespace

expected<store_format> get_format(txn& t) {
  store_format f;
  auto format = get_u32(t, keys::format_key);
  if (!format)
    return std::move(format).err();
  f.format = *format;
  auto count = get_u32(t, keys::slot_count_key);
  if (!count)
    return std::move(count).err();
  f.slot_count = *count;
  return f;
}

expected<void> put_format(txn& t, const store_format& f) {
  SPOOL_TRY(put_u32(t, keys::format_key, f.format));
  return put_u32(t, keys::slot_count_key, f.slot_count);
}

} // namespace spool::storage::tables
