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

std::optional<snapshot> sim_disk::take_snapshot(std::size_t max_bytes) const {
  ++snapshots_taken;
  auto data = encode_history(now_.history);
  if (data.size() > max_bytes)
    return std::nullopt;
  return make_snapshot(last(), std::move(data));
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
  if (w.install) {
    next.history = decode_history(w.install->data);
    next.base = w.install->through;
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
