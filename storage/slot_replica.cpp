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

expected<slot_copy> copy(txn& t, slot_t s) {
  auto c = copy(t, s, SIZE_MAX);
  if (!c)
    return std::move(c).err();
  return std::move(**c);
}

expected<std::optional<slot_copy>> copy(txn& t, slot_t s,
                                        std::size_t max_bytes) {
  auto m = meta(t, s);
  if (!m)
    return std::move(m).err();
  slot_copy c;
  c.seq = m->last_seq;
  if (m->last_seq >= m->first_seq) {
    auto e = epoch_of(t, s, m->last_seq);
    if (!e)
      return std::move(e).err();
    c.epoch = e->value_or(0);
  } else {
    auto b = base_epoch(t, s);
    if (!b)
      return std::move(b).err();
    c.epoch = *b;
  }
  auto end = keys::slot_end(s);
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < dbis::data_tables; ++i) {
    auto cur = t.open_cursor(t.db().data_table(i));
    if (!cur)
      return std::move(cur).err();
    auto found = cur->seek(keys::slot_begin(s));
    while (found && *found && cur->key() < end) {
      bytes += cur->key().size() + cur->value().size();
      if (bytes > max_bytes)
        return std::optional<slot_copy>{};
      c.rows.push_back({static_cast<std::uint8_t>(i), std::string{cur->key()},
                        std::string{cur->value()}});
      found = cur->next();
    }
    if (!found)
      return std::move(found).err();
  }
  return std::optional<slot_copy>{std::move(c)};
}

expected<void> install(txn& t, slot_t s, const slot_copy& c) {
  auto begin = keys::slot_begin(s);
  auto end = keys::slot_end(s);
  for (auto& r : c.rows)
    if (r.table >= dbis::data_tables || r.key < begin || r.key >= end)
      return make_error(ec::invalid_argument, "slot log: a copy of slot ", s,
                        " holds a row outside it (table ", int{r.table}, ")");
  for (std::size_t i = 0; i < dbis::data_tables; ++i) {
    auto cur = t.open_cursor(t.db().data_table(i));
    if (!cur)
      return std::move(cur).err();
    auto found = cur->seek(begin);
    while (found && *found && cur->key() < end) {
      SPOOL_TRY(cur->del());
      found = cur->seek(begin);
    }
    if (!found)
      return std::move(found).err();
  }
  for (auto& r : c.rows)
    SPOOL_TRY(t.put(t.db().data_table(r.table), r.key, r.value));
  // The log: no entry kept, the next one is c.seq + 1.
  auto m = meta(t, s);
  if (!m)
    return std::move(m).err();
  for (auto seq = m->first_seq; seq <= m->last_seq; ++seq)
    SPOOL_TRY(t.del(t.db().slot_log, entry_key(s, seq)));
  m->last_seq = c.seq;
  m->first_seq = c.seq + 1;
  m->bytes = 0;
  m->epoch = std::max(m->epoch, c.epoch);
  SPOOL_TRY(put_meta(t, s, *m));
  return put_base_epoch(t, s, c.epoch);
}

} // namespace spool::storage::slot_log
