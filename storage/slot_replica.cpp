#include "storage/slot_replica.hpp"

#include "storage/keys.hpp"
#include "storage/record_codec.hpp"

namespace spool::storage::slot_log {

namespace {

using detail::decode_record;
using detail::put_record;

/// slot · "r" and slot · "b": beside the meta row (slot), never an entry
/// (slot · seq, ten bytes).
std::string side_key(slot_t s, char what) {
  return std::string{static_cast<char>(s >> 8), static_cast<char>(s & 0xff),
                     what};
}

std::string entry_key(slot_t s, std::uint64_t seq) {
  std::string k{static_cast<char>(s >> 8), static_cast<char>(s & 0xff)};
  keys::put_u64(k, seq);
  return k;
}

} // namespace

expected<slot_replica> replica(txn& t, slot_t s) {
  auto v = t.get(t.db().slot_log, side_key(s, 'r'));
  if (!v)
    return std::move(v).err();
  if (!*v)
    return slot_replica{};
  return decode_record<slot_replica>(**v, "slot_log");
}

expected<void> put_replica(txn& t, slot_t s, const slot_replica& r) {
  return put_record(t, t.db().slot_log, side_key(s, 'r'), r);
}

expected<std::uint64_t> base_epoch(txn& t, slot_t s) {
  auto v = t.get(t.db().slot_log, side_key(s, 'b'));
  if (!v)
    return std::move(v).err();
  if (!*v)
    return std::uint64_t{1}; // trimmed before the row was kept: one node's
                             // epoch, the only one it ever stamped
  std::string_view in = **v;
  std::uint64_t e = 0;
  if (!get_varint(in, e))
    return make_error(ec::corrupt_record, "slot log: slot ", s,
                      ": its base epoch does not decode");
  return e;
}

expected<void> put_base_epoch(txn& t, slot_t s, std::uint64_t epoch) {
  std::string v;
  put_varint(v, epoch);
  return t.put(t.db().slot_log, side_key(s, 'b'), v);
}

expected<std::optional<std::uint64_t>> epoch_of(txn& t, slot_t s,
                                                std::uint64_t seq) {
  auto v = t.get(t.db().slot_log, entry_key(s, seq));
  if (!v)
    return std::move(v).err();
  if (!*v)
    return std::optional<std::uint64_t>{};
  // A stored entry: the record version, then `log_entry`'s first field.
  std::string_view in = **v;
  std::uint64_t e = 0;
  if (in.empty() || in[0] != detail::record_version
      || !get_varint(in = in.substr(1), e))
    return make_error(ec::corrupt_record, "slot log: slot ", s, " seq ", seq,
                      " does not decode");
  return std::optional<std::uint64_t>{e};
}

expected<copy_piece> read_piece(txn& t, slot_t s, std::string_view from,
                                std::size_t max_bytes) {
  auto begin = keys::slot_begin(s);
  auto end = keys::slot_end(s);
  // A piece's `next`: the next row's table index, then its key.
  std::size_t table = 0;
  std::string at = begin;
  if (!from.empty()) {
    table = static_cast<std::uint8_t>(from[0]);
    at.assign(from.substr(1));
    if (table >= dbis::data_tables || at < begin || at >= end)
      return make_error(ec::invalid_argument, "slot log: a copy of slot ", s,
                        " cannot resume outside it");
  }
  copy_piece p;
  std::size_t bytes = 0;
  for (; table < dbis::data_tables; ++table, at = begin) {
    auto cur = t.open_cursor(t.db().data_table(table));
    if (!cur)
      return std::move(cur).err();
    auto found = cur->seek(at);
    while (found && *found && cur->key() < end) {
      auto n = cur->key().size() + cur->value().size();
      if (!p.rows.empty() && bytes + n > max_bytes) {
        p.next.push_back(static_cast<char>(table));
        p.next.append(cur->key());
        return p;
      }
      bytes += n;
      p.rows.push_back({static_cast<std::uint8_t>(table),
                        std::string{cur->key()}, std::string{cur->value()}});
      found = cur->next();
    }
    if (!found)
      return std::move(found).err();
  }
  p.last = true;
  return p;
}

namespace {

/// A staged row's key: slot · table index · the row's key.
std::string staging_prefix(slot_t s) {
  return {static_cast<char>(s >> 8), static_cast<char>(s & 0xff)};
}

/// Deletes every key of `dbi` from `begin` while `in_range` holds.
template <class InRange>
expected<void> delete_from(txn& t, MDB_dbi dbi, std::string_view begin,
                           InRange in_range) {
  auto cur = t.open_cursor(dbi);
  if (!cur)
    return std::move(cur).err();
  auto found = cur->seek(begin);
  while (found && *found && in_range(cur->key())) {
    SPOOL_TRY(cur->del());
    found = cur->seek(begin);
  }
  if (!found)
    return std::move(found).err();
  return {};
}

expected<void> drop_staged(txn& t, slot_t s) {
  auto prefix = staging_prefix(s);
  return delete_from(t, t.db().slot_staging, prefix,
                     [&](std::string_view k) { return k.starts_with(prefix); });
}

} // namespace

expected<void> stage(txn& t, slot_t s, const std::vector<slot_row>& rows,
                     bool fresh) {
  auto begin = keys::slot_begin(s);
  auto end = keys::slot_end(s);
  for (auto& r : rows)
    if (r.table >= dbis::data_tables || r.key < begin || r.key >= end)
      return make_error(ec::invalid_argument, "slot log: a copy of slot ", s,
                        " holds a row outside it (table ", int{r.table}, ")");
  if (fresh)
    SPOOL_TRY(drop_staged(t, s));
  auto key = staging_prefix(s);
  for (auto& r : rows) {
    key.resize(2);
    key.push_back(static_cast<char>(r.table));
    key.append(r.key);
    SPOOL_TRY(t.put(t.db().slot_staging, key, r.value));
  }
  return {};
}

expected<void> install_staged(txn& t, slot_t s, copy_position at) {
  auto begin = keys::slot_begin(s);
  auto end = keys::slot_end(s);
  for (std::size_t i = 0; i < dbis::data_tables; ++i)
    SPOOL_TRY(delete_from(t, t.db().data_table(i), begin,
                          [&](std::string_view k) { return k < end; }));
  auto prefix = staging_prefix(s);
  {
    auto cur = t.open_cursor(t.db().slot_staging);
    if (!cur)
      return std::move(cur).err();
    auto found = cur->seek(prefix);
    while (found && *found && cur->key().starts_with(prefix)) {
      if (cur->key().size() < 3
          || static_cast<std::uint8_t>(cur->key()[2]) >= dbis::data_tables)
        return make_error(ec::corrupt_record, "slot log: a staged row of slot ",
                          s, " does not decode");
      // Copied out: the puts below may move the pages the views point in.
      auto table = static_cast<std::uint8_t>(cur->key()[2]);
      std::string key{cur->key().substr(3)};
      std::string value{cur->value()};
      SPOOL_TRY(t.put(t.db().data_table(table), key, value));
      found = cur->next();
    }
    if (!found)
      return std::move(found).err();
  }
  SPOOL_TRY(drop_staged(t, s));
  // The log: no entry kept, the next one is at.seq + 1.
  auto m = meta(t, s);
  if (!m)
    return std::move(m).err();
  for (auto seq = m->first_seq; seq <= m->last_seq; ++seq)
    SPOOL_TRY(t.del(t.db().slot_log, entry_key(s, seq)));
  m->last_seq = at.seq;
  m->first_seq = at.seq + 1;
  m->bytes = 0;
  m->epoch = std::max(m->epoch, at.epoch);
  SPOOL_TRY(put_meta(t, s, *m));
  return put_base_epoch(t, s, at.epoch);
}

} // namespace spool::storage::slot_log
