#include "core/writer/durable_marks.hpp"

#include "storage/tables.hpp"

namespace spool::actors {

durable_marks::durable_marks(std::uint32_t slots) :
    slots_(slots),
    seqs_(std::make_unique<std::atomic<std::uint64_t>[]>(slots)) {
  for (std::uint32_t s = 0; s < slots_; ++s)
    seqs_[s].store(0, std::memory_order_relaxed);
}

storage::expected<std::shared_ptr<durable_marks>>
durable_marks::of(storage::env& e) {
  auto t = e.read();
  if (!t)
    return std::move(t).err();
  auto format = storage::tables::get_format(*t);
  if (!format)
    return std::move(format).err();
  // A bare environment (no store format row) may hold any slot.
  auto slots = format->slot_count != 0 ? format->slot_count : max_slot_count;
  auto marks = std::make_shared<durable_marks>(slots);
  for (std::uint32_t s = 0; s < slots; ++s) {
    auto m = read_mark(*t, static_cast<storage::slot_t>(s));
    if (!m)
      return std::move(m).err();
    marks->seqs_[s].store(m->seq, std::memory_order_relaxed);
  }
  return marks;
}

bool durable_marks::covers(storage::slot_seq m) const noexcept {
  return m.slot < slots_
         && seqs_[m.slot].load(std::memory_order_acquire) >= m.seq;
}

bool durable_marks::covers(
    std::span<const storage::slot_seq> marks) const noexcept {
  for (auto& m : marks)
    if (!covers(m))
      return false;
  return true;
}

void durable_marks::raise(std::span<const storage::slot_seq> marks) noexcept {
  for (auto& m : marks) {
    if (m.slot >= slots_)
      continue;
    // Never lowered, whoever raises it (the writer; a cluster node's
    // replication when a slot starts serving).
    auto& seq = seqs_[m.slot];
    auto cur = seq.load(std::memory_order_relaxed);
    while (cur < m.seq
           && !seq.compare_exchange_weak(cur, m.seq, std::memory_order_release,
                                         std::memory_order_relaxed)) {
    }
  }
}

storage::expected<storage::slot_seq> read_mark(storage::txn& t,
                                               storage::slot_t s) {
  auto m = storage::slot_log::meta(t, s);
  if (!m)
    return std::move(m).err();
  return storage::slot_seq{s, m->last_seq};
}

} // namespace spool::actors
