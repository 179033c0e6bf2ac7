#include <algorithm>
#include <functional>

#include "cluster/replica_core.hpp"

// The leader's half of replica_core: taking office, shipping, counting.
//
// Planted bug (tests/cluster/README.md): SPOOL_PLANT_OLD_EPOCH_COMMIT makes
// the leader count acknowledgements sent in an older epoch, only in the
// simulation's planted-bug build.

namespace spool::cluster {

void replica_core::become_leader(epoch_t epoch, ready& out, millis now) {
  auto last = log_.last();
  role_ = role::leader;
  restart_pending_ = false;
  staging_.reset();
  serving_ = false;
  office_synced_ = false;
  epoch_start_ = last.seq + 1;
  // Everything it holds was synced before it granted the fence.
  self_match_ = last.seq;
  out.write.hard = hard_state{epoch, cfg_.self, false};
  out.write.append.push_back(
      make_entry(epoch, epoch_start_, entry_kind::epoch_start, {}));
  out.notices.push_back({notice_kind::leading, epoch, {}, {}});
  peers_.clear();
  for (auto n : cfg_.replicas) {
    if (n == cfg_.self)
      continue;
    auto& p = peers_[n];
    p.next = epoch_start_;
    p.last_ack = now;
  }
  // Nothing ships before the office is synced (`synced`).
}

void replica_core::ship(node_id to, peer_progress& p, ready& out, millis now,
                        bool heartbeat) {
  auto base = log_.base();
  // The writes of this step are not in the log yet: count them in.
  seq_t last = log_.last().seq;
  if (!out.write.append.empty())
    last = out.write.append.back().seq;
  auto epoch = log_.hard().epoch;
  if (out.write.hard)
    epoch = out.write.hard->epoch;
  if (!office_synced_)
    return;
  // What it needs is no longer in the log, or it lost faith in its own
  // copy: the whole state, then entries from there. A copy once started
  // is sent whole.
  if (p.copy || p.refused == refusal::damaged
      || p.refused == refusal::needs_snapshot || p.next <= base.seq) {
    send_copy(to, p, epoch, out, now);
    return;
  }
  auto batch_from = [&](seq_t from) {
    auto v = log_.read(from, cfg_.max_batch_entries, cfg_.max_batch_bytes);
    for (auto& e : out.write.append)
      if (e.seq >= from && v.size() < cfg_.max_batch_entries
          && (v.empty() || e.seq == v.back().seq + 1))
        v.push_back(e);
    return v;
  };
  auto append_at = [&](seq_t prev) {
    return append_req{
        epoch, {log_.epoch_at(prev).value_or(0), prev}, {}, commit_};
  };
  if (p.probing) {
    // One probe out at a time, sent again after the retry interval.
    if (p.paused && (!heartbeat || now - p.last_send < cfg_.retry))
      return;
    auto a = append_at(p.next - 1);
    a.entries = batch_from(p.next);
    p.probe_prev = p.next - 1;
    p.paused = true;
    p.last_send = now;
    out.send.push_back({cfg_.self, to, std::move(a)});
    return;
  }
  bool sent = false;
  while (p.next <= last && p.next - p.match - 1 < cfg_.max_in_flight) {
    auto a = append_at(p.next - 1);
    a.entries = batch_from(p.next);
    if (a.entries.empty())
      break;
    p.next = a.entries.back().seq + 1;
    out.send.push_back({cfg_.self, to, std::move(a)});
    sent = true;
  }
  if (sent) {
    p.last_send = now;
  } else if (heartbeat) {
    // At what it surely holds, so that a heartbeat overtaking appends in
    // flight is no mismatch.
    p.last_send = now;
    out.send.push_back(
        {cfg_.self, to, append_at(std::max(p.match, log_.base().seq))});
  }
}

ready replica_core::local_appended(millis now) {
  begin_step();
  ready out;
  if (role_ != role::leader)
    return finish(std::move(out));
  for (auto& [n, p] : peers_)
    ship(n, p, out, now, false);
  return finish(std::move(out));
}

ready replica_core::synced(seq_t through, millis now) {
  begin_step();
  ready out;
  if (role_ != role::leader)
    return finish(std::move(out));
  self_match_ = std::max(self_match_, std::min(through, log_.last().seq));
  if (!office_synced_ && through >= epoch_start_) {
    office_synced_ = true;
    for (auto& [n, p] : peers_)
      ship(n, p, out, now, true);
  }
  advance_commit(out);
  return finish(std::move(out));
}

ready replica_core::tick(millis now) {
  begin_step();
  ready out;
  if (restart_pending_ && role_ == role::fenced
      && now - last_restart_try_ >= 2 * cfg_.retry) {
    // Its restart election found no majority in time: try again, until a
    // leader's entry reaches it.
    last_restart_try_ = now;
    out.notices.push_back(
        {notice_kind::restart_election, log_.hard().epoch, {}, {}});
  }
  if (role_ != role::leader)
    return finish(std::move(out));
  for (auto& [n, p] : peers_) {
    if (!p.probing && p.next > p.match + 1 && now - p.last_ack >= cfg_.retry) {
      // Sent, and no progress for a while: lost on the way. Go back to what
      // it holds.
      p.next = p.match + 1;
      p.probing = true;
      p.paused = false;
      p.last_ack = now;
    }
    bool beat = now - p.last_send >= cfg_.heartbeat;
    if (p.refused == refusal::disk_full && !beat)
      continue;
    ship(n, p, out, now, beat);
  }
  return finish(std::move(out));
}

bool replica_core::heard_newer(epoch_t epoch, ready& out) {
  auto h = log_.hard();
  if (epoch <= h.epoch)
    return false;
  // A newer epoch exists: stop, and keep its promise from now on.
  step_down(out);
  out.write.hard = hard_state{epoch, std::nullopt, h.damaged};
  return true;
}

void replica_core::on_append_rep(node_id from, const append_rep& r, ready& out,
                                 millis now) {
  if (role_ != role::leader || heard_newer(r.epoch, out))
    return;
  auto h = log_.hard();
  auto it = peers_.find(from);
#ifdef SPOOL_PLANT_OLD_EPOCH_COMMIT
  if (it == peers_.end() || (r.epoch < h.epoch && r.refused != refusal::none))
    return;
#else
  // An answer to an older reign: what it matched was that reign's log,
  // which this one may have rewritten since.
  if (r.epoch < h.epoch || it == peers_.end())
    return;
#endif
  auto& p = it->second;
  switch (r.refused) {
  case refusal::none:
    if (r.match > p.match)
      p.last_ack = now;
    // Its copy is installed (or it holds what the copy would).
    if (p.copy && r.match >= p.copy->through.seq)
      close_copy(p);
    p.match = std::max(p.match, r.match);
    // The probe is taken (an answer to an older append or a heartbeat
    // below it ends nothing).
    if (p.probing && r.match >= p.probe_prev) {
      p.probing = p.paused = false;
      p.next = p.match + 1;
    }
    p.next = std::max(p.next, p.match + 1);
    p.refused = refusal::none;
    advance_commit(out);
    ship(from, p, out, now, false);
    return;
  case refusal::mismatch: {
    // A refusal of an append it holds since, or of a probe no longer
    // out, is old news: acting on it would resend a window for nothing.
    if (r.asked < p.match || (p.probing && r.asked != p.probe_prev))
      return;
    seq_t next = r.hint.seq + 1;
    if (r.hint.epoch != 0) {
      auto end = last_of_epoch(r.hint.epoch);
      next = end ? *end + 1 : r.hint.seq;
    }
    p.next = std::max(next, p.match + 1);
    p.probing = true;
    p.paused = false;
    p.last_ack = now;
    ship(from, p, out, now, false);
    return;
  }
  case refusal::disk_full:
  case refusal::damaged:
  case refusal::needs_snapshot:
    if (p.refused != r.refused && r.refused != refusal::needs_snapshot)
      out.notices.push_back(
          {notice_kind::peer_refusing, h.epoch, from, r.refused});
    p.refused = r.refused;
    p.next = p.match + 1;
    p.probing = true;
    p.paused = false;
    if (r.refused != refusal::disk_full)
      ship(from, p, out, now, false);
    return;
  case refusal::stale_epoch:
    return;
  }
}

void replica_core::advance_commit(ready& out) {
  if (role_ != role::leader)
    return;
  std::vector<seq_t> matches{self_match_};
  for (auto& [n, p] : peers_)
    matches.push_back(p.match);
  std::sort(matches.begin(), matches.end(), std::greater<>());
  seq_t c = matches[quorum() - 1];
  if (c <= commit_)
    return;
  // An older epoch's entry commits only under one of this epoch (Raft's
  // figure 8): a count of replicas holding it says nothing once a newer
  // epoch may have written another payload at its seq.
  if (log_.epoch_at(c) != log_.hard().epoch)
    return;
  commit_ = c;
  out.committed = c;
  if (!serving_ && commit_ >= epoch_start_) {
    serving_ = true;
    out.notices.push_back({notice_kind::serving, log_.hard().epoch, {}, {}});
  }
}

} // namespace spool::cluster
