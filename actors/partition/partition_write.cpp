// The partition's writes: a seal for a batch another actor commits (its
// part, settled by the writer), the marks of what its cursors stage (a
// transaction's acks, a seek, a claim in the append) and their settles.

#include "actors/partition/partition_state.hpp"

namespace spool::actors::partition_detail {

void mark_staged(partition_ptr self, const std::string& group,
                 const caf::actor_addr& cursor, std::vector<part_ref>& parts) {
  if (parts.empty())
    return;
  auto& st = self->state;
  auto& live = st.live_of(parts.front().key.first)[group];
  live.cursor = cursor;
  live.forward = false;
  ++live.open;
  parts.push_back(hold_part(self, st.cfg.node.writer, parts.front().key));
}

/// A group's stage settled: if its cursor died, the respawn waited for it
/// (its row is written now, or never will be).
void unstaged(partition_ptr self, const std::string& group) {
  auto& st = self->state;
  if (st.respawning.contains(group) && !st.barrier_pending.contains(group)
      && !st.staged(group))
    st.respawning.erase(group);
}

void on_stage_settled(partition_ptr self, const core::part_key& key,
                      core::part_outcome outcome) {
  auto& st = self->state;
  auto& group = key.group;
  // A seek held here: its record is durable (or not); either way the next
  // contact spawns the cursor from the stored row.
  if (key.first == core::part_key::seek_part && st.holds.erase(group) > 0)
    return;
  auto& live = st.live_of(key.first);
  auto l = live.find(group);
  if (l == live.end())
    return;
  auto cursor = l->second.cursor;
  auto forward = l->second.forward;
  if (--l->second.open == 0)
    live.erase(l);
  unstaged(self, group);
  // A held seek passed to a cursor spawned since: only to that one.
  if (auto it = st.cursors.find(group);
      forward && it != st.cursors.end() && it->second.address() == cursor) {
    ++st.contacts;
    self->send(it->second, settled_atom::value, key, outcome);
  }
}

/// Seals `frames` for a batch the caller submits: the part is kept here.
seal_reply on_seal(partition_ptr self,
                   const std::vector<storage::frame>& frames) {
  auto& st = self->state;
  auto t = st.cfg.node.store.read();
  if (!t)
    return seal_reply{std::nullopt, {}, t.err()};
  // Encrypted here, where the write is proposed: what a follower applies
  // is the same bytes, and apply draws no random nonce.
  bool encrypt = st.cfg.options.encryption_enabled;
  if (encrypt && !st.cfg.node.encryption_keys)
    return seal_reply{
        std::nullopt,
        {},
        make_error(errc::unavailable,
                   "queue has encryptionEnabled but this server "
                   "has no encryption key (--encryption-key-file)")};
  // The worker thread's encoder: a zstd context per partition held tens
  // of kB each (bench/README.md, partitions_bench).
  auto& enc = storage::thread_encoder(st.cfg.node.codec);
  enc.encrypt_with(encrypt ? st.cfg.node.encryption_keys : nullptr);
  auto sealed = st.log->seal(*t, frames, st.cfg.node.wall(), enc,
                             st.cfg.options.dedup_window_s);
  enc.encrypt_with(nullptr); // keeps no keyring alive past the seal
  if (!sealed)               // nothing changed
    return seal_reply{std::nullopt, {}, sealed.err()};
  auto& s = *sealed;
  // Only duplicates (perhaps with guards that their originals in
  // flight be stored, `expect_dedup`): no offsets taken, nothing to
  // settle; the guards still go in the caller's batch.
  if (s.next <= s.first) {
    st.log->durable(s);
    return seal_reply{std::nullopt, std::move(s), std::nullopt};
  }
  // The caller gets the mutations; the partition keeps the rest
  // (offsets, results, ids in flight) as a part the writer settles.
  core::part_key key{st.cfg.record.queue.value, st.cfg.record.id.value, "",
                     s.first.value};
  auto& kept = st.seals[key.first];
  kept.results = s.results;
  kept.first = s.first;
  kept.next = s.next;
  kept.created_at = s.created_at;
  kept.pending_ids = s.pending_ids;
  hold_part(self, st.cfg.node.writer, key);
  return seal_reply{key, std::move(s), std::nullopt};
}

/// The writer settled a part of this partition: a seal, or a stage's mark.
void on_settled(partition_ptr self, const core::part_key& key,
                core::part_outcome outcome) {
  auto& st = self->state;
  if (key.first == core::part_key::delete_part) {
    // A group's deletion settled: the cursor its first phase stopped ends
    // (durable) or serves again; a cursor created since is not touched.
    auto stopped = st.stopping.find(key.group);
    if (stopped == st.stopping.end())
      return;
    auto c = std::move(stopped->second);
    st.stopping.erase(stopped);
    bool durable = outcome == core::part_outcome::durable;
    ++st.contacts;
    self->send(c, verdict_atom::value, durable);
    if (auto it = st.cursors.find(key.group);
        durable && it != st.cursors.end() && it->second == c)
      st.cursors.erase(it); // the next contact is a first one
    return;
  }
  if (!key.group.empty()) // a stage: a seek, a transaction, a claim
    return on_stage_settled(self, key, outcome);
  auto it = st.seals.find(key.first);
  if (it == st.seals.end())
    return; // not this incarnation's (respawned meanwhile)
  auto s = std::move(it->second);
  st.seals.erase(it);
  switch (outcome) {
  case core::part_outcome::durable:
    st.log->durable(s);
    retention_after_push(self);
    break;
  case core::part_outcome::failed:
    st.log->failed(s);
    break;
  case core::part_outcome::unknown:
    st.log->lost(s); // it may be stored: keep the gap
    break;
  }
}

/// A transaction's acks staged on the group's cursor.
caf::result<stage_reply> on_stage(partition_ptr self, const std::string& group,
                                  std::vector<ack_request>& reqs) {
  auto c = cursor_for(self, group);
  if (!c)
    return failed<stage_reply>(c.err());
  return stage_on<stage_reply>(self, *c, group, cursor_restarting<stage_reply>,
                               stage_atom::value, std::move(reqs),
                               view_of(*self->state.log));
}

/// A parked pop served from the seal `first`, not durable yet.
caf::result<claim_reply> on_claim(partition_ptr self, std::int64_t first,
                                  const pop_request& req,
                                  std::vector<storage::stored_frame>& frames) {
  auto& st = self->state;
  // Only the seal next in line: were an earlier one in flight, the
  // cursor would see its frames too, and they could still fail.
  auto s = st.seals.find(first);
  if (s == st.seals.end() || s->second.next <= s->second.first
      || st.log->record().next_offset != s->second.first
      || st.staged(req.group))
    return claim_reply{}; // declined
  auto c = cursor_for(self, req.group);
  if (!c)
    return claim_reply{};
  auto view = view_of(*st.log);
  view.readable_end = s->second.next;
  view.newest_created_at = s->second.created_at;
  // Recorded until its settle, as a transaction's stage is; a cursor that
  // does not answer declines.
  return stage_on<claim_reply>(
      self, *c, req.group, [](const caf::error&) { return claim_reply{}; },
      claim_atom::value, req, view, std::move(frames));
}

} // namespace spool::actors::partition_detail
