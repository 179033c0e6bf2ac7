#include "storage/mutation.hpp"

#include <algorithm>

#include "storage/keys.hpp"
#include "storage/segment.hpp"
#include "storage/tables.hpp"
#include "storage/traces.hpp"

namespace spool::storage {

namespace {

/// What one sweep step may still delete: keys, and bytes (keys and values:
/// each deleted value is kept as an undo image in the slot log), at least
/// one key whatever its size.
struct step_budget {
  std::uint64_t keys = 0;
  std::uint64_t bytes = 0;
  bool spent = false;
};

/// Deletes keys under `prefix` within `budget` (which it spends); answers
/// whether keys under it are left.
expected<bool> delete_prefix(txn& t, MDB_dbi dbi, const std::string& prefix,
                             step_budget& budget) {
  auto cur = t.open_cursor(dbi);
  if (!cur)
    return std::move(cur).err();
  auto found = cur->seek(prefix);
  while (found && *found && cur->key().substr(0, prefix.size()) == prefix) {
    auto size = cur->key().size() + cur->value().size();
    if (budget.keys == 0 || (budget.spent && size > budget.bytes))
      return true;
    SPOOL_TRY(cur->del());
    --budget.keys;
    budget.bytes -= std::min<std::uint64_t>(size, budget.bytes);
    budget.spent = true;
    // After a delete the cursor points at the next entry; re-read it.
    found = cur->seek(prefix);
  }
  if (!found)
    return std::move(found).err();
  return false;
}

/// Moves the counter `field` of the slot `used` belongs to past it.
expected<void> bump_counters(txn& t, std::uint32_t slot_counters::*field,
                             std::uint64_t used) {
  auto s = slot_of_id(used);
  auto n = slot_local_id(used);
  if (n == 0 || n == UINT32_MAX)
    return make_error(ec::invalid_argument, "id ", used,
                      " is not a slot id (its low 32 bits are ", n, ")");
  auto c = tables::get_counters(t, s);
  if (!c)
    return std::move(c).err();
  if ((*c).*field > n)
    return {};
  (*c).*field = n + 1;
  return tables::put_counters(t, s, *c);
}

/// The stored record of live queue `q`; `unknown_queue` when there is none.
expected<queue_record> require_queue(txn& t, queue_id q) {
  auto rec = tables::get_queue(t, q);
  if (!rec)
    return std::move(rec).err();
  if (!*rec)
    return make_error(ec::unknown_queue, "queue ", q.value, " does not exist");
  return std::move(**rec);
}

expected<void> apply_one(txn& t, const mut::create_queue& m) {
  auto existing = tables::get_queue(t, m.rec.id);
  if (!existing)
    return std::move(existing).err();
  if (*existing)
    return make_error(ec::conflict, "queue ", m.rec.id.value, " exists");
  auto format = tables::get_format(t);
  if (!format)
    return std::move(format).err();
  if (format->slot_count != 0
      && slot_of(m.rec.name, format->slot_count) != slot_of_id(m.rec.id.value))
    return make_error(ec::invalid_argument, "queue ", m.rec.id.value,
                      " is in slot ", slot_of_id(m.rec.id.value), ", its name ",
                      m.rec.name, " in slot ",
                      slot_of(m.rec.name, format->slot_count));
  SPOOL_TRY(tables::put_queue(t, m.rec));
  return bump_counters(t, &slot_counters::next_queue, m.rec.id.value);
}

expected<void> apply_one(txn& t, const mut::update_queue& m) {
  SPOOL_TRY(require_queue(t, m.rec.id));
  return tables::put_queue(t, m.rec);
}

expected<void> apply_one(txn& t, const mut::delete_queue& m) {
  SPOOL_TRY(require_queue(t, m.queue));
  SPOOL_TRY(t.del(t.db().queues, keys::queue(m.queue)));
  return tables::put_doomed(t, m.queue);
}

expected<void> apply_one(txn& t, const mut::sweep_queue& m) {
  auto live = tables::get_queue(t, m.queue);
  if (!live)
    return std::move(live).err();
  if (*live)
    return make_error(ec::conflict, "queue ", m.queue.value,
                      " is not deleted: its rows stay");
  auto doomed = tables::is_doomed(t, m.queue);
  if (!doomed)
    return std::move(doomed).err();
  if (!*doomed)
    return {}; // swept already
  auto prefix = keys::queue(m.queue);
  auto& d = t.db();
  step_budget budget{std::max<std::uint64_t>(m.max_keys, 1), m.max_bytes};
  for (auto dbi :
       {d.segments, d.segment_time, d.partitions, d.cursors, d.subscriptions,
        d.dedup, d.dlq, d.txns, d.txn_time, d.traces, d.trace_names}) {
    auto left = delete_prefix(t, dbi, prefix, budget);
    if (!left)
      return std::move(left).err();
    if (*left)
      return {}; // the budget is spent: the next step goes on
  }
  SPOOL_TRY(tables::delete_doomed(t, m.queue));
  return {};
}

expected<void> apply_one(txn& t, const mut::create_partition& m) {
  SPOOL_TRY(require_queue(t, m.rec.queue));
  if (slot_of_id(m.rec.id.value) != slot_of_id(m.rec.queue.value))
    return make_error(ec::invalid_argument,
                      describe_partition(m.rec.queue, m.rec.id),
                      ": the partition id is not of its queue's slot");
  auto existing = tables::get_partition(t, m.rec.queue, m.rec.id);
  if (!existing)
    return std::move(existing).err();
  if (*existing)
    return make_error(ec::conflict, describe_partition(m.rec.queue, m.rec.id),
                      " exists");
  SPOOL_TRY(tables::put_partition(t, m.rec));
  return bump_counters(t, &slot_counters::next_partition, m.rec.id.value);
}

/// A segment below the partition's next offset must fill a hole that a
/// later segment, committed first, left: no overlap with its neighbours, a
/// stamp between theirs, not below what retention deleted.
expected<void> check_hole(txn& t, const partition_record& rec,
                          const mut::append_segment& m, const std::string& w) {
  auto refuse = [&](std::string_view why) {
    return make_error(ec::conflict, w, ": segment at offset ", m.base.value,
                      " ", why);
  };
  if (m.base < rec.deleted_below)
    return refuse("is below what retention deleted");
  auto end = m.base + static_cast<std::int64_t>(m.frame_count);
  auto prefix = keys::partition(m.queue, m.partition);
  auto cur = t.open_cursor(t.db().segments);
  if (!cur)
    return std::move(cur).err();
  auto found = cur->seek(keys::segment(m.queue, m.partition, m.base));
  if (!found)
    return std::move(found).err();
  if (*found && cur->key().substr(0, prefix.size()) == prefix) {
    auto next = peek_segment_header(cur->value(),
                                    {w, keys::segment_base(cur->key())});
    if (!next)
      return std::move(next).err();
    if (next->base < end)
      return refuse("overlaps stored offsets");
    if (next->created_at < m.created_at)
      return refuse("is stamped after the segment that follows it");
  }
  auto moved = *found ? cur->prev() : cur->last();
  if (!moved)
    return std::move(moved).err();
  if (*moved && cur->key().substr(0, prefix.size()) == prefix) {
    auto prev = peek_segment_header(cur->value(),
                                    {w, keys::segment_base(cur->key())});
    if (!prev)
      return std::move(prev).err();
    if (prev->end() > m.base)
      return refuse("overlaps stored offsets");
    if (prev->created_at > m.created_at)
      return refuse("is stamped before the segment that precedes it");
  }
  return {};
}

expected<void> apply_one(txn& t, const mut::append_segment& m) {
  auto rec = tables::require_partition(t, m.queue, m.partition);
  if (!rec)
    return std::move(rec).err();
  auto w = describe_partition(m.queue, m.partition);
  if (m.frame_count == 0 || m.base.value < 0
      || m.base.value > INT64_MAX - m.frame_count)
    return make_error(ec::invalid_argument, w, ": segment at offset ",
                      m.base.value, " with ", m.frame_count,
                      " frames is out of range");
  if (m.base >= rec->next_offset) {
    if (m.created_at < rec->last_created_at)
      return make_error(ec::conflict, w, ": segment at offset ", m.base.value,
                        " stamped before the previous segment");
  } else {
    SPOOL_TRY(check_hole(t, *rec, m, w));
  }
  // The checksum is cheap (no decompression) and keeps a damaged segment
  // from ever being stored; the frames were built by our own encoder.
  auto h = verify_segment(m.bytes, {w, m.base});
  if (!h)
    return std::move(h).err();
  if (h->frame_count != m.frame_count || h->created_at != m.created_at)
    return make_error(ec::conflict, w, ": segment at offset ", m.base.value,
                      " does not match its mutation");
  for (auto& [txid, off] : m.client_ids)
    if (off < m.base || off >= h->end())
      return make_error(ec::invalid_argument, w, ": transactionId '", txid,
                        "' at offset ", off.value, " is outside its segment");
  auto& d = t.db();
  SPOOL_TRY(
      t.put(d.segments, keys::segment(m.queue, m.partition, m.base), m.bytes));
  SPOOL_TRY(t.put(
      d.segment_time,
      keys::segment_time(m.queue, m.partition, m.created_at, m.base), {}));
  for (auto& [txid, off] : m.client_ids)
    SPOOL_TRY(tables::put_dedup(t, m.queue, m.partition, txid,
                                dedup_record{off, m.created_at}));
  advance_partition(*rec, m.base, m.frame_count, m.created_at);
  return tables::put_partition(t, *rec);
}

expected<void> apply_one(txn& t, const mut::delete_segments& m) {
  auto rec = tables::require_partition(t, m.queue, m.partition);
  if (!rec)
    return std::move(rec).err();
  auto w = describe_partition(m.queue, m.partition);
  if (m.new_watermark <= rec->watermark || m.new_watermark > rec->next_offset)
    return make_error(ec::offset_out_of_range, w, ": new watermark ",
                      m.new_watermark.value, " not in (", rec->watermark.value,
                      ", ", rec->next_offset.value, "]");
  auto& d = t.db();
  auto cur = t.open_cursor(d.segments);
  if (!cur)
    return std::move(cur).err();
  auto prefix = keys::partition(m.queue, m.partition);
  auto found = cur->seek(prefix);
  rec->watermark = rec->next_offset;
  while (found && *found && cur->key().substr(0, prefix.size()) == prefix) {
    auto h = peek_segment_header(cur->value(),
                                 {w, keys::segment_base(cur->key())});
    if (!h)
      return std::move(h).err();
    if (h->base >= m.new_watermark) {
      rec->watermark = h->base;
      break;
    }
    if (h->end() > m.new_watermark)
      return make_error(ec::invalid_argument, w, ": watermark ",
                        m.new_watermark.value,
                        " is not a segment boundary (segment at offset ",
                        h->base.value, " ends at ", h->end().value, ")");
    SPOOL_TRY(
        t.del(d.segment_time, keys::segment_time(m.queue, m.partition,
                                                 h->created_at, h->base)));
    SPOOL_TRY(cur->del());
    found = cur->seek(prefix);
  }
  if (!found)
    return std::move(found).err();
  rec->deleted_below = std::max(rec->deleted_below, m.new_watermark);
  // An id may have been reused after its dedup window: forget it only while
  // it still points into the deleted range.
  for (auto& txid : m.forget_ids) {
    auto entry = tables::get_dedup(t, m.queue, m.partition, txid);
    if (!entry)
      return std::move(entry).err();
    if (*entry && (*entry)->off < m.new_watermark)
      SPOOL_TRY(tables::delete_dedup(t, m.queue, m.partition, txid));
  }
  // Traces go with their messages.
  SPOOL_TRY(traces::delete_below(t, m.queue, m.partition, rec->watermark));
  return tables::put_partition(t, *rec);
}

expected<void> apply_one(txn& t, const mut::expect_dedup& m) {
  auto entry = tables::get_dedup(t, m.queue, m.partition, m.transaction_id);
  if (!entry)
    return std::move(entry).err();
  if (!*entry || (*entry)->off != m.off)
    return make_error(ec::conflict, describe_partition(m.queue, m.partition),
                      ": transactionId '", m.transaction_id,
                      "': its original at offset ", m.off.value,
                      " was not stored");
  return {};
}

expected<void> apply_one(txn& t, const mut::put_cursor& m) {
  SPOOL_TRY(tables::require_partition(t, m.queue, m.partition));
  return tables::put_cursor(t, m.queue, m.partition, m.group, m.rec);
}

expected<void> apply_one(txn& t, const mut::delete_cursor& m) {
  SPOOL_TRY(tables::delete_cursor(t, m.queue, m.partition, m.group));
  return {};
}

expected<void> apply_one(txn& t, const mut::put_subscription& m) {
  SPOOL_TRY(require_queue(t, m.queue));
  return tables::put_subscription(t, m.queue, m.group, m.rec);
}

expected<void> apply_one(txn& t, const mut::delete_subscription& m) {
  SPOOL_TRY(tables::delete_subscription(t, m.queue, m.group));
  return {};
}

expected<void> apply_one(txn& t, const mut::put_dlq& m) {
  SPOOL_TRY(tables::require_partition(t, m.queue, m.entry.partition));
  // The id needs no counter (`store::next_dlq_id`): the write stays
  // within the queue's keys.
  return tables::put_dlq(t, m.queue, m.group, m.entry);
}

expected<void> apply_one(txn& t, const mut::update_dlq& m) {
  auto stored = tables::get_dlq(t, m.queue, m.group, m.entry.id);
  if (!stored)
    return std::move(stored).err();
  if (!*stored)
    return {}; // deleted meanwhile: the deletion wins
  auto doomed = tables::is_doomed(t, m.queue);
  if (!doomed)
    return std::move(doomed).err();
  if (*doomed)
    return {}; // its queue was deleted meanwhile: the deletion wins
  return tables::put_dlq(t, m.queue, m.group, m.entry);
}

expected<void> apply_one(txn& t, const mut::update_subscription& m) {
  auto stored = tables::get_subscription(t, m.queue, m.group);
  if (!stored)
    return std::move(stored).err();
  if (!*stored)
    return {}; // the group or its queue was deleted meanwhile: it wins
  if ((*stored)->registered_at != m.rec.registered_at)
    return {}; // deleted and registered again meanwhile: the new one wins
  auto doomed = tables::is_doomed(t, m.queue);
  if (!doomed)
    return std::move(doomed).err();
  if (*doomed)
    return {}; // its queue was deleted meanwhile: the deletion wins
  return tables::put_subscription(t, m.queue, m.group, m.rec);
}

expected<void> apply_one(txn& t, const mut::delete_dlq& m) {
  SPOOL_TRY(tables::delete_dlq(t, m.queue, m.group, m.id));
  return {};
}

expected<void> apply_one(txn& t, const mut::put_txn& m) {
  if (m.id.empty() || m.id.size() > 255)
    return make_error(ec::invalid_argument,
                      "transaction id must be 1..255 bytes");
  SPOOL_TRY(require_queue(t, m.queue));
  return tables::put_txn(t, m.queue, m.id, m.rec);
}

expected<void> apply_one(txn& t, const mut::delete_txn& m) {
  auto old = tables::get_txn(t, m.queue, m.id);
  if (!old)
    return std::move(old).err();
  if (*old && (*old)->created_at < m.stored_before)
    SPOOL_TRY(tables::delete_txn(t, m.queue, m.id));
  return {};
}

expected<void> apply_one(txn& t, const mut::put_trace& m) {
  if (m.rec.id.empty())
    return make_error(ec::invalid_argument, "trace: no id");
  for (auto& n : m.rec.names)
    if (n.empty() || n.size() > keys::max_trace_name)
      return make_error(ec::invalid_argument, "trace: a name must be 1 to ",
                        keys::max_trace_name, " bytes");
  auto rec = tables::require_partition(t, m.queue, m.partition);
  if (!rec)
    return std::move(rec).err();
  if (m.off < rec->watermark || m.off >= rec->next_offset)
    return make_error(ec::not_found, describe_partition(m.queue, m.partition),
                      ": no message at offset ", m.off.value,
                      " (deleted by retention or a purge)");
  auto held = traces::count_of_message(t, m.queue, m.partition, m.off,
                                       traces::max_per_message);
  if (!held)
    return std::move(held).err();
  if (*held >= traces::max_per_message)
    return make_error(ec::invalid_argument, "the message holds ",
                      traces::max_per_message,
                      " traces, the most a message holds");
  return traces::put(t, m.queue, m.partition, m.off, m.rec);
}

} // namespace

std::size_t write_batch::byte_size() const noexcept {
  std::size_t n = 0;
  for (auto& m : mutations) {
    n += 64;
    if (auto* a = std::get_if<mut::append_segment>(&m))
      n += a->bytes.size() + a->client_ids.size() * 48;
    else if (auto* tr = std::get_if<mut::put_trace>(&m))
      n += tr->rec.data.size() + tr->rec.names.size() * 64;
  }
  return n;
}

void advance_partition(partition_record& rec, offset base,
                       std::uint32_t frame_count, micros created_at) {
  if (rec.watermark >= rec.next_offset) // nothing retained so far
    rec.watermark = base;
  else
    rec.watermark = std::min(rec.watermark, base); // a hole filled
  rec.next_offset = std::max(rec.next_offset,
                             base + static_cast<std::int64_t>(frame_count));
  rec.last_created_at = std::max(rec.last_created_at, created_at);
}

expected<void> apply(txn& t, const mutation& m) {
  return std::visit([&t](const auto& x) { return apply_one(t, x); }, m);
}

expected<void> apply(txn& t, const write_batch& b) {
  for (auto& m : b.mutations)
    SPOOL_TRY(apply(t, m));
  return {};
}

} // namespace spool::storage
