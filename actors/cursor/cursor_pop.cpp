// A cursor's pop: the rule (`core::plan_pop`: plan, read, cut, grant or
// autoAck) with this cursor's reads, then the write, then the answer; and
// the cursor's storage: frames and DLQ entries read, its record's batch.

#include "actors/cursor/cursor_state.hpp"
#include "cipher/envelope.hpp"

namespace spool::actors::cursor_detail {

/// Reads the frames at `offsets` (sorted) in one short read transaction,
/// decoding no more than `max_bytes` of payload (at least one frame; the
/// offsets past the cap are not read: a pop's byte cap bounds its memory).
expected<frame_list> load_frames(const cursor_config& cfg,
                                 const std::vector<storage::offset>& offs,
                                 std::size_t max_bytes) {
  frame_list out;
  if (offs.empty())
    return out;
  auto lo = offs.front();
  auto hi = offs.back();
  auto t = cfg.store.read();
  if (!t)
    return std::move(t).err();
  auto r
      = storage::read_frames(*t, cfg.queue, cfg.partition, lo,
                             static_cast<std::size_t>(hi - lo + 1), max_bytes);
  if (!r)
    return std::move(r).err();
  // The usual plan is one contiguous run: keep the read as it is.
  if (static_cast<std::int64_t>(offs.size()) == hi - lo + 1)
    return std::move(r->frames);
  out.reserve(offs.size());
  for (auto& f : r->frames)
    if (std::binary_search(offs.begin(), offs.end(), f.off))
      out.push_back(std::move(f));
  return out;
}

/// Why a pop cannot give `f` in clear (none: it can): a frame encrypted
/// with a key this node does not have fails the pop before anything of it
/// is written (its lease, its autoAck commit), so it stays where it is
/// until its key is configured (docs/security.md, "Encryption at rest").
std::optional<api_error> undeliverable(const cursor_config& cfg,
                                       const storage::stored_frame& f) {
  if (!storage::is_encrypted(f.data.encoding))
    return std::nullopt;
  auto ok = cipher::key_present(cfg.encryption_keys.get(), f.data.payload);
  if (ok)
    return std::nullopt;
  return make_error(ok.err().code, "message at offset ", f.off.value, ": ",
                    ok.err().message);
}

/// `frames` if a pop can give each in clear.
expected<frame_list> deliverable(const cursor_config& cfg,
                                 expected<frame_list> frames) {
  if (!frames)
    return frames;
  for (auto& f : *frames)
    if (auto why = undeliverable(cfg, f))
      return std::move(*why);
  return frames;
}

/// The stored DLQ entry `id` of this cursor's group, none when it is gone,
/// or why it cannot be read (a pop then fails: an entry it could not read
/// is not forgotten as if deleted).
expected<std::optional<storage::dlq_entry>> read_entry(const cursor_config& cfg,
                                                       std::uint64_t id) {
  auto t = cfg.store.read();
  if (!t)
    return std::move(t).err();
  auto e = storage::tables::get_dlq(*t, cfg.queue, cfg.group, id);
  if (!e)
    return std::move(e).err();
  return std::move(*e);
}

/// The stored DLQ entry `id` of this cursor's group, or none (gone).
std::optional<storage::dlq_entry> load_entry(const cursor_config& cfg,
                                             std::uint64_t id) {
  auto t = cfg.store.read();
  if (!t)
    return std::nullopt;
  auto e = storage::tables::get_dlq(*t, cfg.queue, cfg.group, id);
  if (!e || !*e)
    return std::nullopt;
  return std::move(**e);
}

expected<frame_list>
with_dead_frames(const cursor_config& cfg,
                 const std::vector<core::dead_letter>& dead, frame_list known) {
  std::vector<storage::offset> missing;
  for (auto& d : dead)
    if (!d.dlq_id && !find_frame(known, d.off))
      missing.push_back(d.off);
  if (missing.empty())
    return known;
  std::sort(missing.begin(), missing.end());
  auto more = load_frames(cfg, missing);
  if (!more)
    return std::move(more).err();
  for (auto& f : *more)
    known.push_back(std::move(f));
  std::sort(known.begin(), known.end(),
            [](auto& a, auto& b) { return a.off < b.off; });
  return known;
}

void tell_dead(cursor_ptr self, const std::vector<storage::micros>& failed_at) {
  if (auto watcher = caf::actor_cast<dlq_watcher>(self->state.cfg.watcher))
    for (auto t : failed_at)
      self->send(watcher, dead_atom::value, t);
}

/// The cursor record plus the DLQ changes, as one batch; `written` gets the
/// failure time of every entry written (for the retention sweep).
storage::write_batch state_batch(const cursor_config& cfg,
                                 const core::cursor_core& core,
                                 const dlq_changes& changes, frame_list& frames,
                                 std::vector<storage::micros>& written) {
  storage::write_batch b;
  b.mutations.emplace_back(storage::mut::put_cursor{cfg.queue, cfg.partition,
                                                    cfg.group, core.record()});
  // The clock is read only when something is dead-lettered (most writes
  // are plain acks).
  core::dlq_writer w{cfg.queue, cfg.partition, cfg.group,
                     cfg.policy.drop_dead_letters,
                     changes.dead.empty() ? 0 : cfg.wall()};
  auto done = core::plan_dlq_writes(
      w, changes, b, [&](std::uint64_t id) { return load_entry(cfg, id); },
      [&](storage::offset off) -> const storage::stored_frame* {
        return find_frame(frames, off);
      },
      [&](storage::micros now) { return cfg.store.next_dlq_id(now); });
  if (cfg.metrics && done.dropped > 0)
    cfg.metrics->dead_letters_dropped += done.dropped;
  written.insert(written.end(), done.failed_at.begin(), done.failed_at.end());
  return b;
}

namespace {

/// The pop rule (`core::plan_pop`) with this cursor's clock, expiries and
/// reads; counts the offsets a pop skipped below the watermark.
core::pop_outcome
plan_pop(cursor_ptr self, const pop_request& req, const partition_view& view,
         std::function<expected<frame_list>(const std::vector<storage::offset>&,
                                            std::size_t)>
             load) {
  auto& st = self->state;
  core::pop_inputs in;
  in.now = self->clock().now();
  in.wall = st.cfg.wall();
  in.visibility = st.cfg.visibility;
  std::tie(in.expired, in.dead) = end_due(self, in.now);
  in.needs_seed = st.needs_seed();
  in.load = std::move(load);
  // A requeued dead letter is checked as a frame is: its key first.
  in.load_entry
      = [&st](std::uint64_t id) -> expected<std::optional<storage::dlq_entry>> {
    auto e = read_entry(st.cfg, id);
    if (e && *e)
      if (auto why = undeliverable(st.cfg, (*e)->message))
        return make_error(why->code, "dead letter ", id, " (", why->message,
                          ")");
    return e;
  };
  auto out = core::plan_pop(*st.core, req, view, std::move(in));
  if (auto& s = out.reply.skipped; s && st.cfg.metrics)
    st.cfg.metrics->retention_skipped
        += static_cast<std::uint64_t>(s->last - s->first + 1);
  return out;
}

} // namespace

caf::result<pop_reply> on_pop(cursor_ptr self, pop_request& req,
                              const partition_view& view) {
  auto& st = self->state;
  auto before = snapshot(self);
  auto out = plan_pop(
      self, req, view,
      [&](const std::vector<storage::offset>& offs, std::size_t max_bytes) {
        return deliverable(st.cfg, load_frames(st.cfg, offs, max_bytes));
      });
  arm(self);
  if (!out.write)
    return std::move(out.reply);
  auto rp = promise_for<pop_reply>(self);
  // Nothing of the pop (its lease, its autoAck commit, the expiry it made)
  // stays if its write fails.
  commit(self, std::move(before), std::move(out.changes), std::move(out.frames),
         [rp, reply = std::move(out.reply)](
             std::optional<api_error> failure) mutable {
           if (failure) {
             reply = pop_reply{};
             reply.failure = std::move(failure);
           }
           rp.deliver(std::move(reply));
         });
  return rp.later();
}

claim_reply on_claim(cursor_ptr self, const pop_request& req,
                     const partition_view& view,
                     std::vector<storage::stored_frame>& sealed) {
  auto& st = self->state;
  claim_reply out;
  if (st.busy() || st.deleting || sealed.empty())
    return out;
  auto first = sealed.front().off;
  auto before = snapshot(self);
  st.core->touch(st.cfg.wall());
  // Frames below the seal are stored; the seal's are in memory (moved out:
  // a claim reads each once).
  auto pop
      = plan_pop(self, req, view,
                 [&](const std::vector<storage::offset>& offs,
                     std::size_t max_bytes) -> expected<frame_list> {
                   auto split
                       = std::lower_bound(offs.begin(), offs.end(), first);
                   std::vector<storage::offset> stored(offs.begin(), split);
                   auto frames = load_frames(st.cfg, stored, max_bytes);
                   if (!frames)
                     return frames;
                   for (auto it = split; it != offs.end(); ++it)
                     if (auto* f = find_frame(sealed, *it))
                       frames->push_back(std::move(*f));
                   return deliverable(st.cfg, std::move(frames));
                 });
  // Only a lease and delivery counts (or an autoAck commit) ride on the
  // push; anything else (nothing found, a requeue, dead letters, a read
  // failure) is left to the pop's own run after the push.
  if (pop.reply.messages.empty() || pop.requeued || pop.reply.failure
      || !pop.changes.dead.empty() || !pop.changes.done.empty()) {
    restore(self, before);
    return out;
  }
  std::vector<storage::micros> written;
  out.batch = state_batch(st.cfg, *st.core, pop.changes, pop.frames, written);
  out.reply = std::move(pop.reply);
  out.parts.push_back(hold_part(self, core::part_key::stage_part));
  st.before.emplace(std::move(before));
  cursor_state::staged_txn staged{std::nullopt, {}};
  staged.claim = true;
  st.staged.emplace(std::move(staged));
  arm(self);
  return out;
}

} // namespace spool::actors::cursor_detail
