#include "core/replica/slot_directory.hpp"

#include <algorithm>
#include <limits>

namespace spool::core {

using namespace spool::cluster;

std::vector<node_id> replicas_of(slot_t s, const std::vector<node_id>& nodes,
                                 std::uint32_t rf) {
  std::vector<node_id> out;
  if (nodes.empty())
    return out;
  auto n = static_cast<std::uint32_t>(nodes.size());
  for (std::uint32_t i = 0; i < std::min(rf, n); ++i)
    out.push_back(nodes[(s + i) % n]);
  return out;
}

std::string cluster_names::name(node_id n) const {
  auto i = index_of(n);
  if (i < names.size() && !names[i].empty())
    return names[i];
  return "n" + std::to_string(i + 1);
}

std::optional<api_error> refusal_of(slot_t s, const slot_status& st,
                                    const cluster_names& names) {
  if (!st.held) {
    std::string list;
    for (auto n : replicas_of(s, names.nodes, names.replication_factor))
      list += (list.empty() ? "" : ", ") + names.name(n);
    return make_error(
        errc::not_leader, "Not the leader of slot ", s,
        "; this node holds no replica of it (its replicas: ", list, ")");
  }
  if (st.failed)
    return make_error(errc::unavailable, "Server busy: slot ", s,
                      " stopped after a storage failure on this node");
  if (st.serving)
    return std::nullopt;
  if (st.taking_office)
    return make_error(errc::unavailable, "Server busy: slot ", s,
                      " is taking office (epoch ", st.epoch, ")");
  if (st.leader && *st.leader != names.self) {
    auto e = make_error(errc::not_leader, "Not the leader of slot ", s,
                        "; leader is ", names.name(*st.leader));
    e.leader = leader_ref{s, st.epoch, names.name(*st.leader), {}, {}};
    return e;
  }
  return make_error(errc::unavailable, "Server busy: slot ", s,
                    " has no leader yet");
}

namespace {

// One word: flags in bits 0-4, the leader's index in 8-31, the epoch
// (saturated) in 32-63.
constexpr std::uint64_t held_bit = 1, failed_bit = 2, serving_bit = 4,
                        office_bit = 8, leader_bit = 16;

std::uint64_t pack(const slot_status& st) noexcept {
  std::uint64_t w = 0;
  w |= st.held ? held_bit : 0;
  w |= st.failed ? failed_bit : 0;
  w |= st.serving ? serving_bit : 0;
  w |= st.taking_office ? office_bit : 0;
  if (st.leader)
    w |= leader_bit
         | (std::uint64_t{
                std::min<std::uint32_t>(index_of(*st.leader), 0xffffff)}
            << 8);
  auto e
      = std::min<epoch_t>(st.epoch, std::numeric_limits<std::uint32_t>::max());
  return w | (e << 32);
}

slot_status unpack(std::uint64_t w) noexcept {
  slot_status st;
  st.held = (w & held_bit) != 0;
  st.failed = (w & failed_bit) != 0;
  st.serving = (w & serving_bit) != 0;
  st.taking_office = (w & office_bit) != 0;
  if ((w & leader_bit) != 0)
    st.leader = node_id{static_cast<std::uint32_t>((w >> 8) & 0xffffff)};
  st.epoch = w >> 32;
  return st;
}

} // namespace

slot_directory::slot_directory(std::uint32_t slots, cluster_names names) :
    slots_(slots),
    names_(std::move(names)),
    words_(std::make_unique<std::atomic<std::uint64_t>[]>(slots)) {
  for (std::uint32_t s = 0; s < slots_; ++s) {
    auto reps = replicas_of(static_cast<slot_t>(s), names_.nodes,
                            names_.replication_factor);
    slot_status st;
    st.held = std::find(reps.begin(), reps.end(), names_.self) != reps.end();
    words_[s].store(pack(st), std::memory_order_relaxed);
  }
}

void slot_directory::set(slot_t s, const slot_status& st) noexcept {
  if (s < slots_)
    words_[s].store(pack(st), std::memory_order_release);
}

slot_status slot_directory::get(slot_t s) const noexcept {
  if (s >= slots_)
    return {};
  return unpack(words_[s].load(std::memory_order_acquire));
}

std::optional<api_error> slot_directory::refusal(slot_t s) const {
  return refusal(s, get(s));
}

std::optional<api_error> slot_directory::refusal(slot_t s,
                                                 const slot_status& st) const {
  auto e = refusal_of(s, st, names_);
  if (e && e->leader && st.leader) {
    auto a = addresses(*st.leader);
    e->leader->http = std::move(a.http);
    e->leader->msgpack = std::move(a.msgpack);
  }
  return e;
}

void slot_directory::set_addresses(node_id n, client_addresses a) const {
  std::lock_guard lock{addresses_mu_};
  auto i = index_of(n);
  if (i >= names_.nodes.size())
    return;
  if (addresses_.size() <= i)
    addresses_.resize(names_.nodes.size());
  addresses_[i] = std::move(a);
}

client_addresses slot_directory::addresses(node_id n) const {
  std::lock_guard lock{addresses_mu_};
  auto i = index_of(n);
  return i < addresses_.size() ? addresses_[i] : client_addresses{};
}

} // namespace spool::core
