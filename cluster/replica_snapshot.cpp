#include <algorithm>

#include "cluster/replica_core.hpp"

// Snapshots in pieces (docs/cluster.md, "Snapshots"):
//
//   leader: open a copy (one view of the store), send pieces 0, 1, ... at
//           most `snapshot_pieces_in_flight` ahead of what was taken
//   follower --snapshot_rep(taken)--> leader: pieces [0, taken) staged
//   follower, at the last piece: install the staged pieces and the log's
//           new start in one write, answer append_rep(match = through)
//           after the sync; the leader closes the copy and ships entries
//
// Nothing of a copy replaces the follower's state before its last piece: it
// keeps its log and its vote meanwhile, and a restart drops what it staged.
// A piece lost on the way is sent again from what was taken, after a
// silence longer than the follower's pace.

namespace spool::cluster {

// --- the follower's half ----------------------------------------------------

void replica_core::on_snapshot(node_id from, const snapshot_req& r,
                               ready& out) {
  auto h = log_.hard();
  if (r.epoch < h.epoch) {
    reply(from, {h.epoch, refusal::stale_epoch, 0, {}}, out, false);
    return;
  }
  if (role_ == role::leader && r.epoch == h.epoch)
    return;
  step_from_ = from;
  step_epoch_ = r.epoch;
  follow(r.epoch, from, out);
  const auto& p = r.piece;
  const auto& at = p.through;
  if (!checksum_ok(p)) {
    mark_damaged(from, out);
    return;
  }
  if (!h.damaged && log_.epoch_at(at.seq) == at.epoch) {
    // Already holds it (a duplicate, or the leader was not sure).
    staging_.reset();
    reply(from, {r.epoch, refusal::none, at.seq, {}}, out, true);
    return;
  }
  // Never go back, damaged or not: everything its log holds may have been
  // acknowledged (and counted) already. A late, older copy is dropped; the
  // leader sends a newer one.
  if (at < log_.last() || at.seq < commit_) {
    staging_.reset();
    // A damaged one says so (its own log may be what is wrong): the leader
    // reports it rather than copying the slot for nothing.
    if (h.damaged)
      reply(from, {r.epoch, refusal::damaged, 0, {}}, out, true);
    return;
  }
  auto taken = [&](std::uint32_t n) {
    envelope e{cfg_.self, from, snapshot_rep{}};
    std::get<snapshot_rep>(e.msg) = {r.epoch, p.copy, n};
    out.send.push_back(std::move(e));
  };
  if (!staging_ || staging_->copy != p.copy || staging_->from != from
      || staging_->epoch != r.epoch) {
    // A copy it holds nothing of (after a restart, or the leader opened a
    // new one) starts at its first piece.
    if (p.index != 0) {
      taken(0);
      return;
    }
    staging_ = staging{from, r.epoch, p.copy, 0};
  }
  if (p.index != staging_->taken) {
    taken(staging_->taken); // a duplicate, or one after a lost piece
    return;
  }
  out.write.stage = p;
  ++staging_->taken;
  if (!p.last) {
    taken(staging_->taken);
    return;
  }
  staging_.reset();
  auto nh = out.write.hard ? *out.write.hard : log_.hard();
  nh.damaged = false;
  out.write.hard = nh;
  out.write.install = at;
  commit_ = std::max(commit_, std::min(r.commit, at.seq));
  out.notices.push_back(
      {notice_kind::installed, r.epoch, from, {}, p.index + 1});
  reply(from, {r.epoch, refusal::none, at.seq, {}}, out, true);
}

// --- the leader's half ------------------------------------------------------

void replica_core::send_copy(node_id to, peer_progress& p, epoch_t epoch,
                             ready& out, millis now) {
  if (p.copy && now - p.copy->last_taken >= cfg_.snapshot_idle) {
    // It took nothing for long (it may be down): the copy's view of the
    // store ends, and the next one waits as long.
    close_copy(p);
    p.copy_after = now + cfg_.snapshot_idle;
  }
  if (!p.copy) {
    // At most one try per retry interval (the node may have as many copies
    // open as it may).
    if (now < p.copy_after)
      return;
    p.copy_after = now + cfg_.retry;
    p.last_send = now;
    auto id = copies_ + 1;
    auto at = log_.open_copy(id);
    if (!at)
      return;
    copies_ = id;
    p.copy = peer_progress::copy_out{};
    p.copy->id = id;
    p.copy->through = *at;
    p.copy->last_taken = now;
  }
  auto& c = *p.copy;
  // The peer link is reliable and in order: a piece is lost only when the
  // link's queue overflows or the connection drops. So nothing is sent
  // again while pieces are being taken at the pace seen so far, only after
  // a silence of four times the longest recent gap between two pieces
  // taken, at least a quarter of `snapshot_idle` (and `retry`); then twice
  // as long each time nothing is taken.
  auto base = std::max({cfg_.retry, cfg_.snapshot_idle / 4, 4 * c.gap});
  auto silence = base << std::min(c.resends, 3u);
  if (!c.sent_next.empty()
      && now - std::max(c.last_sent, c.last_taken) >= silence) {
    // From what it took.
    c.sent_next.clear();
    c.sent_last = false;
    ++c.resends;
  }
  while (!c.sent_last && c.sent_next.size() < cfg_.snapshot_pieces_in_flight) {
    const auto& from = c.sent_next.empty() ? c.taken_next : c.sent_next.back();
    auto piece = log_.read_copy(c.id, from, cfg_.snapshot_piece_bytes);
    if (!piece) {
      close_copy(p); // ended by the store: a new one at the next retry
      return;
    }
    auto index = c.taken + static_cast<std::uint32_t>(c.sent_next.size());
    c.sent_next.push_back(std::move(piece->next));
    c.sent_last = piece->last;
    c.last_sent = now;
    p.last_send = now;
    snapshot_req s{
        epoch,
        make_piece(c.id, c.through, index, piece->last, std::move(piece->data)),
        commit_};
    out.send.push_back({cfg_.self, to, std::move(s)});
  }
  if (c.sent_last) {
    // Once installed, entries from the copy's position on: the install's
    // answer is the probe.
    p.next = c.through.seq + 1;
    p.probing = true;
    p.paused = true;
    p.probe_prev = c.through.seq;
  }
}

void replica_core::on_snapshot_rep(node_id from, const snapshot_rep& r,
                                   ready& out, millis now) {
  if (role_ != role::leader || heard_newer(r.epoch, out))
    return;
  auto h = log_.hard();
  auto it = peers_.find(from);
  if (r.epoch < h.epoch || it == peers_.end())
    return;
  auto& p = it->second;
  if (!p.copy || p.copy->id != r.copy)
    return; // a copy closed since
  auto& c = *p.copy;
  if (r.taken > c.taken) {
    auto n = std::min<std::size_t>(r.taken - c.taken, c.sent_next.size());
    if (n == 0)
      return;
    for (std::size_t i = 0; i < n; ++i)
      c.ends.push_back(std::move(c.sent_next[i]));
    c.taken_next = c.ends.back();
    c.sent_next.erase(c.sent_next.begin(),
                      c.sent_next.begin() + static_cast<std::ptrdiff_t>(n));
    c.taken += static_cast<std::uint32_t>(n);
    // The pace: the longest recent gap (it jumps up at once, and decays by
    // a quarter per piece), a gap that took a resend left out.
    c.gap
        = std::max(c.resends == 0 ? now - c.last_taken : 0, c.gap - c.gap / 4);
    c.last_taken = now;
    c.resends = 0;
  } else if (r.taken < c.taken) {
    // It lost what it staged (a restart, `taken` 0), or an older answer
    // came late: from what it says it holds.
    c.taken = r.taken;
    c.ends.resize(r.taken);
    c.taken_next = r.taken == 0 ? std::string{} : c.ends.back();
    c.sent_next.clear();
    c.sent_last = false;
    c.last_taken = now;
  } else {
    return;
  }
  ship(from, p, out, now, false);
}

void replica_core::close_copy(peer_progress& p) const {
  if (!p.copy)
    return;
  log_.close_copy(p.copy->id);
  p.copy.reset();
}

void replica_core::drop_peers() {
  for (auto& [n, p] : peers_)
    close_copy(p);
  peers_.clear();
}

} // namespace spool::cluster
