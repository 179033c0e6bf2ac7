#include "cluster/replica_core.hpp"

#include <algorithm>
#include <utility>

// A replica of one slot. Flow (docs/cluster.md, "Protocol"):
//
//   coordinator --fence(E)--> replica: persist E, answer log end (after sync)
//   coordinator --lead(E)---> chosen: persist (E, self), append epoch_start
//   leader --append(prev, entries, commit)--> follower: log matching, then
//          truncate a divergent tail, append, answer match (after sync)
//   follower --append_rep(match | refusal)--> leader: count, commit, ship
//
// The leader's half is in replica_leader.cpp.
//
// Planted bugs (tests/cluster/README.md): SPOOL_PLANT_FENCE_BEFORE_SYNC and
// SPOOL_PLANT_NO_TRUNCATE break this file's rules on purpose, only in the
// simulation's planted-bug builds, to show that the simulation finds them.

namespace spool::cluster {

namespace {

hard_state hard_after(const ready& out, const log_port& log) {
  return out.write.hard ? *out.write.hard : log.hard();
}

} // namespace

replica_core::replica_core(replica_config cfg, const log_port& log) :
    cfg_(std::move(cfg)), log_(log) {
}

epoch_t replica_core::epoch() const {
  return log_.hard().epoch;
}

std::optional<node_id> replica_core::leader() const {
  return log_.hard().leader;
}

std::optional<epoch_t> replica_core::write_epoch() const {
  if (role_ != role::leader)
    return std::nullopt;
  return log_.hard().epoch;
}

ready replica_core::start(millis now) {
  begin_step();
  ready out;
  last_restart_try_ = now;
  auto h = log_.hard();
  if (h.leader == cfg_.self) {
    // It led before this restart. It never leads that epoch again: its
    // unsynced tail is gone while followers may hold it, so a seq of that
    // epoch could get a second payload. A new epoch, if a majority still
    // stands where it left them.
    role_ = role::fenced;
    restart_pending_ = !h.damaged;
    if (restart_pending_)
      out.notices.push_back({notice_kind::restart_election, h.epoch, {}, {}});
  } else {
    role_ = h.leader ? role::follower : role::fenced;
  }
  return finish(std::move(out));
}

ready replica_core::on_message(const envelope& m, millis now) {
  begin_step();
  ready out;
  if (auto* f = std::get_if<fence_req>(&m.msg))
    on_fence(m.from, *f, out);
  else if (auto* l = std::get_if<lead_req>(&m.msg))
    on_lead(*l, out, now);
  else if (auto* a = std::get_if<append_req>(&m.msg))
    on_append(m.from, *a, out);
  else if (auto* s = std::get_if<snapshot_req>(&m.msg))
    on_snapshot(m.from, *s, out);
  else if (auto* r = std::get_if<append_rep>(&m.msg))
    on_append_rep(m.from, *r, out, now);
  else if (auto* c = std::get_if<snapshot_rep>(&m.msg))
    on_snapshot_rep(m.from, *c, out, now);
  // A fence_rep is the coordinator's (election.hpp), not a replica's.
  return finish(std::move(out));
}

ready replica_core::finish(ready out) {
  step_applies_ = !out.write.append.empty() || out.write.stage.has_value()
                  || out.write.install.has_value();
  return out;
}

ready replica_core::write_failed(write_result r, millis) {
  ready out;
  // Memory follows disk: what the step chose is void, and the shell
  // dropped its messages and notices. Stepping down is always safe: a
  // leader before the step is told it no longer leads (a leader made by
  // the step was never announced).
  bool applied = step_applies_;
  if (before_.r == role::leader)
    out.notices.push_back({notice_kind::deposed, log_.hard().epoch, {}, {}});
  drop_peers();
  serving_ = false;
  commit_ = before_.commit;
  restart_pending_ = before_.restart_pending;
  staging_ = before_.staged;
  auto h = log_.hard();
  role_ = h.leader && h.leader != cfg_.self ? role::follower : role::fenced;
  // A follower answers the leader whose entries its disk refused, in that
  // leader's epoch; it turns damaged only when applying them failed (not a
  // hard state's write, not a leader's own epoch_start).
  auto from = step_from_;
  auto epoch = step_epoch_;
  begin_step();
  if (from && r == write_result::disk_full) {
    reply(*from, {epoch, refusal::disk_full, 0, {}}, out, false);
  } else if (from && r == write_result::failed && applied) {
    mark_damaged(*from, out);
  }
  return finish(std::move(out));
}

// --- fencing --------------------------------------------------------------

void replica_core::on_fence(node_id from, const fence_req& r, ready& out) {
  auto h = log_.hard();
  // A restarted leader's fence (`expect`) moves only replicas that nobody
  // moved on: not past the epoch it led, following it or no one.
  bool grant
      = r.epoch > h.epoch
        && (!r.expect
            || (h.epoch <= *r.expect && (!h.leader || h.leader == from)));
  if (!grant) {
    fence_rep no{r.epoch, false, h.epoch, h.leader, log_.last(), h.damaged};
    out.send.push_back({cfg_.self, from, no});
    return;
  }
  if (role_ == role::leader)
    step_down(out);
  role_ = role::fenced;
  out.write.hard = hard_state{r.epoch, std::nullopt, h.damaged};
  fence_rep yes{r.epoch, true, r.epoch, std::nullopt, log_.last(), h.damaged};
#ifdef SPOOL_PLANT_FENCE_BEFORE_SYNC
  out.send.push_back({cfg_.self, from, yes});
#else
  // The promise counts only once it survives a crash: a replica that
  // forgot it could take entries from the deposed leader again.
  out.after_sync.push_back({cfg_.self, from, yes});
#endif
}

void replica_core::on_lead(const lead_req& r, ready& out, millis now) {
  auto h = log_.hard();
  // Only the replica fenced to exactly this epoch, with no leader yet.
  if (h.epoch != r.epoch || h.leader || h.damaged || role_ == role::leader)
    return;
  become_leader(r.epoch, out, now);
}

void replica_core::step_down(ready& out) {
  if (role_ != role::leader)
    return;
  out.notices.push_back({notice_kind::deposed, log_.hard().epoch, {}, {}});
  role_ = role::fenced;
  drop_peers();
  serving_ = false;
}

void replica_core::follow(epoch_t epoch, node_id leader, ready& out) {
  auto h = hard_after(out, log_);
  if (role_ == role::leader)
    step_down(out);
  role_ = role::follower;
  restart_pending_ = false;
  // What is staged came from another reign: its rest never comes.
  if (staging_ && (staging_->epoch != epoch || staging_->from != leader))
    staging_.reset();
  if (h.epoch != epoch || h.leader != leader)
    out.write.hard = hard_state{epoch, leader, h.damaged};
}

void replica_core::mark_damaged(node_id leader, ready& out) {
  auto h = hard_after(out, log_);
  h.damaged = true;
  out.write = writes{};
  out.write.hard = h;
  out.notices.push_back({notice_kind::damaged, h.epoch, {}, {}});
  reply(leader, {h.epoch, refusal::damaged, 0, {}}, out, true);
}

void replica_core::reply(node_id to, append_rep rep, ready& out, bool synced) {
  (synced ? out.after_sync : out.send).push_back({cfg_.self, to, rep});
}

// --- following ------------------------------------------------------------

seq_t replica_core::first_of_epoch(seq_t at) const {
  auto e = log_.epoch_at(at);
  seq_t lo = log_.base().seq + 1, hi = at;
  // Epochs never go down along a log: the first seq in [lo, at] whose
  // epoch is `e`, by bisection.
  while (lo < hi) {
    seq_t mid = lo + (hi - lo) / 2;
    if (log_.epoch_at(mid) < e)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

std::optional<seq_t> replica_core::last_of_epoch(epoch_t e) const {
  seq_t lo = log_.base().seq, hi = log_.last().seq;
  if (lo == hi || log_.epoch_at(lo + 1) > e)
    return std::nullopt;
  // The last seq in (base, last] whose epoch is at most `e`.
  ++lo;
  while (lo < hi) {
    seq_t mid = hi - (hi - lo) / 2;
    if (log_.epoch_at(mid) <= e)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (log_.epoch_at(lo) != e)
    return std::nullopt;
  return lo;
}

void replica_core::on_append(node_id from, const append_req& r, ready& out) {
  auto h = log_.hard();
  if (r.epoch < h.epoch) {
    reply(from, {h.epoch, refusal::stale_epoch, 0, {}}, out, false);
    return;
  }
  if (role_ == role::leader && r.epoch == h.epoch)
    return; // two leaders of one epoch cannot be; ignore rather than obey
  step_from_ = from;
  step_epoch_ = r.epoch;
  follow(r.epoch, from, out);
  if (h.damaged) {
    reply(from, {r.epoch, refusal::damaged, 0, {}}, out, true);
    return;
  }
  for (auto& e : r.entries)
    if (!checksum_ok(e)) {
      mark_damaged(from, out);
      return;
    }
  auto base = log_.base();
  auto last = log_.last();
  std::size_t skip = 0;
  log_pos prev = r.prev;
  if (prev.seq < base.seq) {
    // Our snapshot covers the start of the request: line it up at the
    // snapshot's position, if the request reaches it.
    auto it = std::find_if(r.entries.begin(), r.entries.end(),
                           [&](const entry& e) { return e.seq == base.seq; });
    if (it == r.entries.end()) {
      // Probe at our snapshot's position instead.
      reply(from, {r.epoch, refusal::mismatch, 0, {0, base.seq}, r.prev.seq},
            out, true);
      return;
    }
    if (it->epoch != base.epoch) {
      // What diverges is below what the log can undo.
      reply(from, {r.epoch, refusal::needs_snapshot, 0, {}}, out, true);
      return;
    }
    skip = static_cast<std::size_t>(it - r.entries.begin()) + 1;
    prev = base;
  }
  if (prev.seq > last.seq) {
    reply(from, {r.epoch, refusal::mismatch, 0, {0, last.seq}, r.prev.seq}, out,
          true);
    return;
  }
  if (log_.epoch_at(prev.seq) != prev.epoch) {
    if (prev.seq <= base.seq) {
      reply(from, {r.epoch, refusal::needs_snapshot, 0, {}}, out, true);
      return;
    }
    log_pos hint{*log_.epoch_at(prev.seq), first_of_epoch(prev.seq)};
    reply(from, {r.epoch, refusal::mismatch, 0, hint, r.prev.seq}, out, true);
    return;
  }
  // The entry before matches: every one we hold after it either equals the
  // request's or diverges from there on.
  for (std::size_t i = skip; i < r.entries.size(); ++i) {
    const auto& e = r.entries[i];
    if (e.seq <= last.seq) {
      if (log_.epoch_at(e.seq) == e.epoch)
        continue;
#ifdef SPOOL_PLANT_NO_TRUNCATE
      continue;
#else
      if (e.seq - 1 < commit_) {
        // A committed entry never diverges; a log that says so is broken.
        mark_damaged(from, out);
        return;
      }
      if (e.seq - 1 < base.seq) {
        // Too old a tail to undo (the log keeps a window): a snapshot
        // replaces it. Nothing here is wrong, so it goes on voting.
        out.write.truncate_after.reset();
        out.write.append.clear();
        reply(from, {r.epoch, refusal::needs_snapshot, 0, {}}, out, true);
        return;
      }
      out.write.truncate_after = e.seq - 1;
      last.seq = e.seq - 1;
#endif
    }
    out.write.append.push_back(e);
    last.seq = e.seq;
  }
  seq_t match = r.entries.empty() ? prev.seq : r.entries.back().seq;
  commit_ = std::max(commit_, std::min(r.commit, match));
  reply(from, {r.epoch, refusal::none, match, {}}, out, true);
}

} // namespace spool::cluster
