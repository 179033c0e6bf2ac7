#include "core/replica/slot_port.hpp"

#include <utility>

#include "storage/serial.hpp"
#include "storage/slot_log.hpp"
#include "storage/slot_replica.hpp"

namespace spool::core {

namespace sl = storage::slot_log;
using namespace spool::cluster;

namespace {

/// An entry's payload: its mutations as the slot log serializes them.
std::string payload_of(const storage::log_entry& e) {
  std::string out;
  storage::append_bytes(out, e.mutations);
  return out;
}

hard_state hard_of(const storage::slot_replica& r) {
  hard_state h;
  h.epoch = r.epoch;
  if (r.leader != 0)
    h.leader = node_id{r.leader - 1};
  h.damaged = r.damaged;
  return h;
}

storage::slot_replica row_of(const hard_state& h) {
  return {h.epoch, h.leader ? index_of(*h.leader) + 1 : 0, h.damaged};
}

} // namespace

// One read transaction per call: a second one opened while the first is
// held could wait on a map growth that waits on the first.
storage::expected<slot_port::log_ends> slot_port::ends_in(storage::txn& t,
                                                          slot_t s) {
  auto m = sl::meta(t, s);
  if (!m)
    return std::move(m).err();
  log_ends out;
  if (m->first_seq > 1) {
    auto b = sl::base_epoch(t, s);
    if (!b)
      return std::move(b).err();
    out.base = {*b, m->first_seq - 1};
  }
  out.last = out.base;
  if (m->last_seq >= m->first_seq) {
    auto e = sl::epoch_of(t, s, m->last_seq);
    if (!e)
      return std::move(e).err();
    out.last = {e->value_or(0), m->last_seq};
  }
  return out;
}

hard_state slot_port::hard() const {
  auto t = env_.read();
  if (!t) {
    error_ = std::move(t).err();
    return {};
  }
  auto r = sl::replica(*t, slot_);
  if (!r) {
    error_ = std::move(r).err();
    return {};
  }
  return hard_of(*r);
}

std::optional<slot_port::log_ends> slot_port::read_ends() const {
  auto t = env_.read();
  if (!t) {
    error_ = std::move(t).err();
    return std::nullopt;
  }
  auto e = ends_in(*t, slot_);
  if (!e) {
    error_ = std::move(e).err();
    return std::nullopt;
  }
  return *e;
}

log_pos slot_port::base() const {
  auto e = read_ends();
  return e ? e->base : log_pos{};
}

log_pos slot_port::last() const {
  auto e = read_ends();
  return e ? e->last : log_pos{};
}

std::optional<epoch_t> slot_port::epoch_at(seq_t seq) const {
  auto t = env_.read();
  if (!t) {
    error_ = std::move(t).err();
    return std::nullopt;
  }
  auto ends = ends_in(*t, slot_);
  if (!ends) {
    error_ = std::move(ends).err();
    return std::nullopt;
  }
  if (seq == ends->base.seq)
    return ends->base.epoch;
  if (seq < ends->base.seq)
    return std::nullopt;
  auto e = sl::epoch_of(*t, slot_, seq);
  if (!e) {
    error_ = std::move(e).err();
    return std::nullopt;
  }
  return *e;
}

std::vector<entry> slot_port::read(seq_t from, std::size_t max_count,
                                   std::size_t max_bytes) const {
  std::vector<entry> out;
  auto t = env_.read();
  if (!t) {
    error_ = std::move(t).err();
    return out;
  }
  std::size_t bytes = 0;
  for (auto seq = from; out.size() < max_count; ++seq) {
    auto e = sl::read_entry(*t, slot_, seq);
    if (!e) {
      error_ = std::move(e).err();
      break;
    }
    if (!*e)
      break;
    // An epoch_start entry (no mutation) travels with an empty payload.
    auto payload = (*e)->mutations.empty() ? std::string{} : payload_of(**e);
    if (!out.empty() && bytes + payload.size() > max_bytes)
      break;
    bytes += payload.size();
    auto kind
        = (*e)->mutations.empty() ? entry_kind::epoch_start : entry_kind::data;
    out.push_back(make_entry((*e)->epoch, seq, kind, std::move(payload)));
  }
  return out;
}

slot_port::~slot_port() {
  for (auto& [id, hold] : copies_)
    env_.release(hold);
}

std::optional<log_pos> slot_port::open_copy(std::uint64_t id) const {
  auto hold = env_.hold_read(max_copies_);
  if (!hold) {
    error_ = std::move(hold).err();
    return std::nullopt;
  }
  if (!*hold)
    return std::nullopt; // as many open as the node may
  auto ends = ends_in(*env_.held(**hold), slot_);
  if (!ends) {
    env_.release(**hold);
    error_ = std::move(ends).err();
    return std::nullopt;
  }
  copies_[id] = **hold;
  return ends->last;
}

std::optional<copy_read> slot_port::read_copy(std::uint64_t id,
                                              const std::string& from,
                                              std::size_t max_bytes) const {
  auto it = copies_.find(id);
  auto* t = it == copies_.end() ? nullptr : env_.held(it->second);
  if (t == nullptr) {
    if (it != copies_.end())
      copies_.erase(it); // ended by a growth of the map
    return std::nullopt;
  }
  auto piece = sl::read_piece(*t, slot_, from, max_bytes);
  if (!piece) {
    error_ = std::move(piece).err();
    return std::nullopt;
  }
  copy_read out;
  storage::append_bytes(out.data, piece->rows);
  out.next = std::move(piece->next);
  out.last = piece->last;
  return out;
}

void slot_port::close_copy(std::uint64_t id) const {
  auto it = copies_.find(id);
  if (it == copies_.end())
    return;
  env_.release(it->second);
  copies_.erase(it);
}

write_result slot_port::write(const writes& w) {
  auto attempt = [&]() -> storage::expected<void> {
    auto t = env_.write();
    if (!t)
      return std::move(t).err();
    if (w.hard)
      SPOOL_TRY(sl::put_replica(*t, slot_, row_of(*w.hard)));
    if (w.truncate_after)
      SPOOL_TRY(sl::truncate(*t, slot_, *w.truncate_after));
    if (w.stage) {
      std::vector<storage::slot_row> rows;
      if (!storage::from_bytes(w.stage->data, rows))
        return storage::make_error(storage::ec::invalid_argument, "slot ",
                                   slot_, ": a snapshot's piece ",
                                   w.stage->index, " does not decode");
      SPOOL_TRY(sl::stage(*t, slot_, rows, w.stage->index == 0));
    }
    if (w.install)
      SPOOL_TRY(
          sl::install_staged(*t, slot_, {w.install->epoch, w.install->seq}));
    for (const auto& e : w.append) {
      storage::log_entry le;
      le.epoch = e.epoch;
      if (e.kind != entry_kind::epoch_start
          && !storage::from_bytes(e.payload, le.mutations))
        return storage::make_error(storage::ec::invalid_argument, "slot ",
                                   slot_, " seq ", e.seq,
                                   ": an entry does not decode");
      SPOOL_TRY(sl::apply_entry(*t, slot_, e.seq, le, env_.options().slot_log));
    }
    return t->commit();
  };
  auto r = attempt();
  if (!r && r.err().code == storage::ec::storage_full) {
    // The map may grow (no transaction is open now); then once more.
    if (auto grown = env_.grow(); grown)
      r = attempt();
  }
  if (r)
    return write_result::ok;
  error_ = r.err();
  return r.err().code == storage::ec::storage_full ? write_result::disk_full
                                                   : write_result::failed;
}

bool slot_port::sync() {
  if (auto r = env_.sync(); !r) {
    error_ = std::move(r).err();
    return false;
  }
  return true;
}

} // namespace spool::core
