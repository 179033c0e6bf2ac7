#include "sim_disk.hpp"

#include <cstring>
#include <stdexcept>

namespace spool::cluster::sim {

log_pos sim_disk::last() const {
  if (now_.history.size() == now_.base.seq)
    return now_.base;
  auto& e = now_.history.back();
  return {e.epoch, e.seq};
}

const entry* sim_disk::at(seq_t seq) const {
  if (seq == 0 || seq > now_.history.size())
    return nullptr;
  return &now_.history[seq - 1];
}

std::optional<epoch_t> sim_disk::epoch_at(seq_t seq) const {
  if (seq == now_.base.seq)
    return now_.base.epoch;
  if (seq < now_.base.seq || seq > now_.history.size())
    return std::nullopt;
  return now_.history[seq - 1].epoch;
}

std::vector<entry> sim_disk::read(seq_t from, std::size_t max_count,
                                  std::size_t max_bytes) const {
  std::vector<entry> out;
  std::size_t bytes = 0;
  for (seq_t s = from; s > now_.base.seq && s <= now_.history.size(); ++s) {
    auto& e = now_.history[s - 1];
    if (out.size() >= max_count
        || (!out.empty() && bytes + e.payload.size() > max_bytes))
      break;
    bytes += e.payload.size();
    out.push_back(e);
  }
  return out;
}

std::optional<log_pos> sim_disk::open_copy(std::uint64_t id) const {
  if (copies_.size() >= max_copies_) {
    ++copies_refused;
    return std::nullopt;
  }
  ++copies_opened;
  copies_[id] = now_.history;
  return last();
}

std::optional<copy_read> sim_disk::read_copy(std::uint64_t id,
                                             const std::string& from,
                                             std::size_t max_bytes) const {
  auto it = copies_.find(id);
  if (it == copies_.end())
    return std::nullopt;
  // `next`: the index of the next entry of the history, in decimal.
  const auto& h = it->second;
  std::size_t at = from.empty() ? 0 : std::stoull(from);
  std::vector<entry> piece;
  std::size_t bytes = 0;
  for (; at < h.size(); ++at) {
    auto n = h[at].payload.size() + 33;
    if (!piece.empty() && bytes + n > max_bytes)
      break;
    bytes += n;
    piece.push_back(h[at]);
  }
  copy_read out;
  out.data = encode_history(piece);
  out.last = at == h.size();
  if (!out.last)
    out.next = std::to_string(at);
  return out;
}

write_result sim_disk::write(const writes& w) {
  if (fail_next) {
    fail_next = false;
    return write_result::failed;
  }
  if (full)
    return write_result::disk_full;
  image next = now_;
  if (w.hard)
    next.hard = *w.hard;
  if (w.truncate_after) {
    if (*w.truncate_after < next.base.seq)
      return write_result::failed; // below the window: cannot undo
    if (*w.truncate_after < next.history.size())
      next.history.resize(*w.truncate_after);
  }
  if (w.stage) {
    if (w.stage->index == 0)
      next.staged.clear();
    for (auto& e : decode_history(w.stage->data))
      next.staged.push_back(std::move(e));
  }
  if (w.install) {
    next.history = std::move(next.staged);
    next.staged.clear();
    if (next.history.size() != w.install->seq)
      throw std::logic_error("sim_disk: a snapshot installed incomplete");
    next.base = *w.install;
  }
  for (auto& e : w.append) {
    if (e.seq != next.history.size() + 1)
      throw std::logic_error("sim_disk: append out of order");
    next.history.push_back(e);
  }
  if (next.history.size() > next.base.seq + keep_) {
    auto& e = next.history[next.history.size() - keep_ - 1];
    next.base = {e.epoch, e.seq};
  }
  now_ = std::move(next);
  return write_result::ok;
}

std::string encode_history(const std::vector<entry>& h) {
  std::string s;
  auto put = [&](const void* p, std::size_t n) {
    s.append(static_cast<const char*>(p), n);
  };
  for (auto& e : h) {
    std::uint64_t len = e.payload.size();
    put(&e.epoch, 8);
    put(&e.seq, 8);
    put(&e.kind, 1);
    put(&e.checksum, 8);
    put(&len, 8);
    s += e.payload;
  }
  return s;
}

std::vector<entry> decode_history(const std::string& s) {
  std::vector<entry> h;
  std::size_t at = 0;
  auto get = [&](void* p, std::size_t n) {
    std::memcpy(p, s.data() + at, n);
    at += n;
  };
  while (at < s.size()) {
    entry e;
    std::uint64_t len = 0;
    get(&e.epoch, 8);
    get(&e.seq, 8);
    get(&e.kind, 1);
    get(&e.checksum, 8);
    get(&len, 8);
    e.payload = s.substr(at, len);
    at += len;
    h.push_back(std::move(e));
  }
  return h;
}

} // namespace spool::cluster::sim
