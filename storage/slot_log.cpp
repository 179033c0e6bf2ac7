#include "storage/slot_log.hpp"

#include <algorithm>
#include <type_traits>

#include "storage/keys.hpp"
#include "storage/record_codec.hpp"
#include "storage/slot_replica.hpp"

namespace spool::storage {

slot_t slot_of(const mutation& m) {
  return std::visit(
      [](const auto& x) -> slot_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (
            std::is_same_v<
                T, mut::create_queue> || std::is_same_v<T, mut::update_queue>)
          return slot_of_id(x.rec.id.value);
        else if constexpr (std::is_same_v<T, mut::create_partition>)
          return slot_of_id(x.rec.queue.value);
        else
          return slot_of_id(x.queue.value);
      },
      m);
}

namespace slot_log {

namespace {

using detail::decode_record;
using detail::put_record;

/// slot (meta row) and slot · seq (entries), in `slot_log`.
std::string meta_key(slot_t s) {
  return std::string{static_cast<char>(s >> 8), static_cast<char>(s & 0xff)};
}

std::string entry_key(slot_t s, std::uint64_t seq) {
  auto k = meta_key(s);
  keys::put_u64(k, seq);
  return k;
}

/// A mutation as the log keeps it: an append's bytes are its segment row.
mutation as_logged(const mutation& m) {
  if (const auto* a = std::get_if<mut::append_segment>(&m)) {
    mut::append_segment copy;
    copy.queue = a->queue;
    copy.partition = a->partition;
    copy.base = a->base;
    copy.frame_count = a->frame_count;
    copy.created_at = a->created_at;
    copy.client_ids = a->client_ids;
    return copy;
  }
  return m;
}

expected<std::optional<log_entry>> get_raw(txn& t, slot_t s,
                                           std::uint64_t seq) {
  auto v = t.get(t.db().slot_log, entry_key(s, seq));
  if (!v)
    return std::move(v).err();
  if (!*v)
    return std::optional<log_entry>{};
  auto e = decode_record<log_entry>(**v, "slot_log");
  if (!e)
    return std::move(e).err();
  return std::optional<log_entry>{std::move(*e)};
}

/// The stored size of entry `seq` of slot `s` (0: absent).
expected<std::uint64_t> entry_bytes(txn& t, slot_t s, std::uint64_t seq) {
  auto v = t.get(t.db().slot_log, entry_key(s, seq));
  if (!v)
    return std::move(v).err();
  return *v ? (*v)->size() : 0;
}

/// Numbers `e` as slot `s`'s next entry and trims the slot's log.
expected<std::uint64_t> number(txn& t, slot_t s, log_entry& e,
                               const log_window& keep) {
  auto m = meta(t, s);
  if (!m)
    return std::move(m).err();
  auto seq = m->last_seq + 1;
  if (e.epoch == 0)
    e.epoch = m->epoch;
  m->epoch = std::max(m->epoch, e.epoch);
  std::string value(1, detail::record_version);
  append_bytes(value, e);
  SPOOL_TRY(t.put(t.db().slot_log, entry_key(s, seq), value));
  m->last_seq = seq;
  m->bytes += value.size();
  // A few old entries per batch: the log keeps up with any write rate. The
  // newest entry always stays.
  std::optional<std::uint64_t> trimmed_epoch;
  for (int i = 0; i < 4 && m->first_seq < m->last_seq; ++i) {
    auto kept = m->last_seq - m->first_seq + 1;
    if (kept <= keep.entries && m->bytes <= keep.bytes)
      break;
    auto size = entry_bytes(t, s, m->first_seq);
    if (!size)
      return std::move(size).err();
    auto epoch = epoch_of(t, s, m->first_seq);
    if (!epoch)
      return std::move(epoch).err();
    trimmed_epoch = epoch->value_or(0);
    SPOOL_TRY(t.del(t.db().slot_log, entry_key(s, m->first_seq)));
    m->bytes -= std::min(*size, m->bytes);
    ++m->first_seq;
  }
  // A replica's log position starts after the last entry trimmed: its
  // epoch is kept (`base_epoch`).
  if (trimmed_epoch)
    SPOOL_TRY(put_base_epoch(t, s, *trimmed_epoch));
  SPOOL_TRY(put_meta(t, s, *m));
  return seq;
}

} // namespace

expected<void> put_meta(txn& t, slot_t s, const slot_log_meta& m) {
  return put_record(t, t.db().slot_log, meta_key(s), m);
}

expected<slot_log_meta> meta(txn& t, slot_t s) {
  auto v = t.get(t.db().slot_log, meta_key(s));
  if (!v)
    return std::move(v).err();
  if (!*v)
    return slot_log_meta{};
  return decode_record<slot_log_meta>(**v, "slot_log");
}

expected<std::vector<slot_seq>> append(txn& t, const write_batch& b,
                                       std::vector<undo_image> undo,
                                       const log_window& keep) {
  std::vector<slot_t> slots;
  std::vector<log_entry> entries;
  auto entry_of = [&](slot_t s) -> log_entry* {
    auto it = std::find(slots.begin(), slots.end(), s);
    if (it != slots.end())
      return &entries[static_cast<std::size_t>(it - slots.begin())];
    return nullptr;
  };
  for (const auto& m : b.mutations) {
    auto s = slot_of(m);
    auto* e = entry_of(s);
    if (e == nullptr) {
      slots.push_back(s);
      e = &entries.emplace_back();
    }
    e->mutations.push_back(as_logged(m));
  }
  for (auto& u : undo) {
    auto s = keys::slot_of_key(u.key);
    auto* e = s ? entry_of(*s) : nullptr;
    if (e == nullptr)
      return make_error(ec::invalid_argument, "slot log: the batch wrote a ",
                        s ? "row of a slot none of its mutations names"
                          : "node-wide row",
                        " (table ", int{u.table}, ")");
    e->undo.push_back(std::move(u));
  }
  std::vector<slot_seq> out;
  out.reserve(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    auto seq = number(t, slots[i], entries[i], keep);
    if (!seq)
      return std::move(seq).err();
    out.push_back({slots[i], *seq});
  }
  return out;
}

expected<std::optional<log_entry>> read_entry(txn& t, slot_t s,
                                              std::uint64_t seq) {
  auto e = get_raw(t, s, seq);
  if (!e || !*e)
    return e;
  for (auto& m : (*e)->mutations) {
    auto* a = std::get_if<mut::append_segment>(&m);
    if (a == nullptr)
      continue;
    auto key = keys::segment(a->queue, a->partition, a->base);
    auto stored = t.get(t.db().segments, key);
    if (!stored)
      return std::move(stored).err();
    if (*stored) {
      a->bytes = **stored;
      continue;
    }
    // Deleted since (retention, a purge, a sweep): the entry that deleted
    // it kept the bytes as its undo image.
    auto m2 = meta(t, s);
    if (!m2)
      return std::move(m2).err();
    bool found = false;
    // From the entry itself: a batch may append and delete a segment.
    for (auto later = seq; later <= m2->last_seq && !found; ++later) {
      auto l = get_raw(t, s, later);
      if (!l)
        return std::move(l).err();
      if (!*l)
        break;
      for (auto& u : (*l)->undo)
        if (u.table < dbis::data_tables
            && t.db().data_table(u.table) == t.db().segments && u.key == key
            && u.before) {
          a->bytes = std::move(*u.before);
          found = true;
          break;
        }
    }
    if (!found)
      return make_error(ec::not_found, "slot log: slot ", s, " seq ", seq,
                        ": its segment ",
                        describe_partition(a->queue, a->partition), " @",
                        a->base.value, " is gone");
  }
  return e;
}

expected<void> apply_entry(txn& t, slot_t s, std::uint64_t seq,
                           const log_entry& e, const log_window& keep) {
  auto m = meta(t, s);
  if (!m)
    return std::move(m).err();
  if (seq != m->last_seq + 1)
    return make_error(ec::conflict, "slot log: slot ", s, " is at seq ",
                      m->last_seq, ", entry ", seq, " does not follow");
  for (const auto& mu : e.mutations)
    if (slot_of(mu) != s)
      return make_error(ec::invalid_argument, "slot log: entry ", seq,
                        " of slot ", s, " holds a mutation of slot ",
                        slot_of(mu));
  log_entry kept;
  kept.epoch = e.epoch;
  t.record_undo(&kept.undo);
  for (const auto& mu : e.mutations) {
    if (auto r = apply(t, mu); !r) {
      t.record_undo(nullptr);
      return r;
    }
    kept.mutations.push_back(as_logged(mu));
  }
  t.record_undo(nullptr);
  for (const auto& u : kept.undo)
    if (keys::slot_of_key(u.key) != s)
      return make_error(ec::invalid_argument, "slot log: entry ", seq,
                        " of slot ", s, " wrote outside its slot");
  auto numbered = number(t, s, kept, keep);
  if (!numbered)
    return std::move(numbered).err();
  return {};
}

expected<void> truncate(txn& t, slot_t s, std::uint64_t after_seq) {
  auto m = meta(t, s);
  if (!m)
    return std::move(m).err();
  if (after_seq >= m->last_seq)
    return {};
  if (after_seq + 1 < m->first_seq)
    return make_error(ec::invalid_argument, "slot log: slot ", s,
                      " cannot be truncated after seq ", after_seq,
                      ": its entries up to ", m->first_seq - 1,
                      " were trimmed");
  for (auto seq = m->last_seq; seq > after_seq; --seq) {
    auto size = entry_bytes(t, s, seq);
    if (!size)
      return std::move(size).err();
    auto e = get_raw(t, s, seq);
    if (!e)
      return std::move(e).err();
    if (!*e)
      return make_error(ec::corrupt_record, "slot log: slot ", s, " seq ", seq,
                        " is missing");
    m->bytes -= std::min(*size, m->bytes);
    auto& undo = (*e)->undo;
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      if (it->table >= dbis::data_tables)
        return make_error(ec::corrupt_record, "slot log: slot ", s, " seq ",
                          seq, " names table ", int{it->table});
      auto dbi = t.db().data_table(it->table);
      if (it->before) {
        SPOOL_TRY(t.put(dbi, it->key, *it->before));
      } else {
        SPOOL_TRY(t.del(dbi, it->key));
      }
    }
    SPOOL_TRY(t.del(t.db().slot_log, entry_key(s, seq)));
  }
  m->last_seq = after_seq;
  m->first_seq = std::min(m->first_seq, after_seq + 1);
  return put_meta(t, s, *m);
}

} // namespace slot_log

} // namespace spool::storage
