// A partition's administration: browse, group listings, group deletion
// votes, and the one deletion stepper behind purge, maxSize trims and
// retention.

#include "actors/partition/partition_state.hpp"

namespace spool::actors::partition_detail {

// -- administration
// -----------------------------------------------------------

/// Most frames one browse returns.
constexpr std::size_t max_browse_frames = 10'000;

namespace {

browse_reply find(partition_ptr self, const std::string& txid) {
  auto& st = self->state;
  browse_reply reply;
  reply.partition = st.cfg.record.name;
  reply.partition_uuid = st.cfg.record.uuid;
  reply.partition_id = st.cfg.record.id;
  auto t = st.cfg.node.store.read();
  if (!t) {
    reply.failure = t.err();
    return reply;
  }
  auto& rec = st.log->record();
  auto f = storage::find_frame(*t, rec, rec.next_offset, txid);
  if (!f)
    reply.failure = f.err();
  else if (*f)
    reply.frames.push_back(std::move(**f));
  return reply;
}

} // namespace

browse_reply browse(partition_ptr self, const browse_request& req) {
  auto& st = self->state;
  if (req.transaction_id)
    return find(self, *req.transaction_id);
  browse_reply reply;
  reply.partition = st.cfg.record.name;
  reply.partition_uuid = st.cfg.record.uuid;
  reply.partition_id = st.cfg.record.id;
  auto end = st.log->record().next_offset; // the readable end
  reply.next = req.from;
  if (req.from.value < 0 || req.max_frames == 0) {
    reply.failure
        = make_error(errc::invalid_argument,
                     "browse: offset must be >= 0 and the count at least 1");
    return reply;
  }
  if (req.from >= end)
    return reply; // nothing readable there yet
  auto t = st.cfg.node.store.read();
  if (!t) {
    reply.failure = t.err();
    return reply;
  }
  auto r = storage::read_frames(
      *t, st.cfg.record.queue, st.cfg.record.id, req.from,
      std::min(req.max_frames, max_browse_frames), req.max_bytes);
  if (!r) {
    reply.failure = r.err();
    return reply;
  }
  for (auto& f : r->frames)
    if (f.off < end)
      reply.frames.push_back(std::move(f));
  reply.next = reply.frames.empty() ? std::min(r->next, end)
                                    : reply.frames.back().off + 1;
  if (r->skipped)
    reply.skipped = offset_range{r->skipped->first, r->skipped->second};
  return reply;
}

/// The groups with a cursor here: live ones and stored ones.
expected<std::vector<std::string>>
groups_here(partition_ptr self, const std::optional<std::string>& only) {
  auto& st = self->state;
  std::vector<std::string> names;
  for (auto& [g, _] : st.cursors)
    names.push_back(g);
  auto t = st.cfg.node.store.read();
  if (!t)
    return std::move(t).err();
  auto stored
      = storage::tables::cursors_of(*t, st.cfg.record.queue, st.cfg.record.id);
  if (!stored)
    return std::move(stored).err();
  for (auto& [g, _] : *stored)
    names.push_back(g);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (only)
    std::erase_if(names, [&](auto& g) { return g != *only; });
  return names;
}

caf::result<std::vector<cursor_info>>
on_groups(partition_ptr self, const std::optional<std::string>& only) {
  auto rp = promise_for<std::vector<cursor_info>>(self);
  auto names = groups_here(self, only);
  std::vector<cursor_actor> cursors;
  if (names)
    for (auto& g : *names)
      if (auto c = cursor_for(self, g))
        cursors.push_back(*c);
  auto& rec = self->state.cfg.record;
  fan_out<cursor_info>(
      self, cursors,
      [rp, name = rec.name,
       uuid = rec.uuid](std::vector<fanned<cursor_info>> slots) mutable {
        std::vector<cursor_info> out;
        for (auto& s : slots)
          if (s.reply) {
            s.reply->partition = name;
            s.reply->partition_uuid = uuid;
            out.push_back(std::move(*s.reply));
          }
        rp.deliver(std::move(out));
      },
      info_atom::value, view_of(*self->state.log));
  return rp.later();
}

caf::result<vote_reply> on_delete_group(partition_ptr self,
                                        const std::string& group,
                                        storage::micros active_after) {
  auto names = groups_here(self, group);
  if (names && names->empty())
    return vote_reply{{false, false}, std::nullopt};
  // A dead cursor's stage may still write its row after the deletion: the
  // group counts as active until that settles (the deletion is refused,
  // busy; the idle sweep tries again later).
  auto unsettled = [self, group] {
    auto& st = self->state;
    return st.respawning.contains(group) || st.staged(group);
  };
  auto c = cursor_for(self, group);
  if (!c) {
    // Cannot tell: the delete mutation is harmless, unless a stage is open.
    auto open = unsettled();
    return vote_reply{{true, open, open}, std::nullopt};
  }
  auto rp = promise_for<vote_reply>(self);
  self->state.stopping[group] = *c;
  self->request(*c, caf::infinite, vote_atom::value, active_after)
      .then(
          [self, rp, group](delete_vote& v) mutable {
            // The stopped cursor is a part: held before the answer.
            auto& rec = self->state.cfg.record;
            rp.deliver(
                vote_reply{v, hold_part(self, self->state.cfg.node.writer,
                                        {rec.queue.value, rec.id.value, group,
                                         core::part_key::delete_part})});
          },
          [self, rp, group, c = *c, unsettled](caf::error&) mutable {
            // No part: nothing will settle the stop, so forget it here.
            auto& stopping = self->state.stopping;
            if (auto s = stopping.find(group);
                s != stopping.end() && s->second == c)
              stopping.erase(s);
            auto open = unsettled();
            rp.deliver(vote_reply{{true, open, open}, std::nullopt});
          });
  return rp.later();
}

/// One step: plans with the first rule that admits a segment (at most
/// `delete_step` segments), writes it, moves the watermark and goes on.
void delete_step(partition_ptr self, std::shared_ptr<step_rules> rules,
                 std::int64_t freed, std::size_t writes, steps_done done) {
  auto& st = self->state;
  auto candidates = (*rules)(freed);
  if (!candidates)
    return done(freed, writes, candidates.err());
  if (candidates->empty())
    return done(freed, writes, std::nullopt);
  auto t = st.cfg.node.store.read();
  if (!t)
    return done(freed, writes, t.err());
  std::optional<storage::mut::delete_segments> step;
  for (auto& rule : *candidates) {
    rule.max_segments = st.cfg.node.delete_step;
    auto plan = storage::plan_retention(*t, st.cfg.record.queue,
                                        st.cfg.record.id, rule);
    if (!plan)
      return done(freed, writes, plan.err());
    if (*plan) {
      step = std::move(**plan);
      break;
    }
  }
  t->abort();
  if (!step)
    return done(freed, writes, std::nullopt);
  auto watermark = step->new_watermark;
  auto gained = watermark - st.log->record().watermark;
  storage::write_batch batch;
  batch.mutations.emplace_back(std::move(*step));
  write_then(self, st.cfg.node.writer, st.cfg.node.term, std::move(batch),
             [self, rules, freed, writes, gained, watermark,
              done](std::optional<api_error> failure) mutable {
               if (failure)
                 return done(freed, writes, std::move(failure));
               watermark_moved(self, watermark);
               delete_step(self, std::move(rules), freed + gained, writes + 1,
                           std::move(done));
             });
}

/// Deletes whole segments, oldest first, in bounded steps of one write each
/// until `rules` admit no more; the one piece behind purge, maxSize trims
/// and retention. Runs are serialized per partition, so two of them never
/// plan from the same watermark.
void delete_steps(partition_ptr self, step_rules rules, steps_done done) {
  auto shared = std::make_shared<step_rules>(std::move(rules));
  self->state.deleting.wait([self, shared, done = std::move(done)]() mutable {
    self->state.deleting.enter();
    delete_step(self, shared, 0, 0,
                [self, done = std::move(done)](std::int64_t freed,
                                               std::size_t writes,
                                               std::optional<api_error> err) {
                  done(freed, writes, std::move(err));
                  self->state.deleting.leave();
                });
  });
}

/// The highest offset every interested group has committed (semantics.md
/// §7): the minimum over the cursors stored here and, for a group
/// registered on the queue without one, where its first contact would seed
/// it; none when nobody is interested, or a group met here has nothing
/// stored yet.
expected<std::optional<storage::offset>> consumed_by_all(partition_ptr self) {
  auto& st = self->state;
  auto t = st.cfg.node.store.read();
  if (!t)
    return std::move(t).err();
  auto cursors
      = storage::tables::cursors_of(*t, st.cfg.record.queue, st.cfg.record.id);
  if (!cursors)
    return std::move(cursors).err();
  auto subs = storage::tables::subscriptions_of(*t, st.cfg.record.queue);
  if (!subs)
    return std::move(subs).err();
  core::interest groups;
  std::set<std::string> here;
  for (auto& [g, c] : *cursors) {
    here.insert(g);
    groups.stored.push_back(c.committed);
  }
  for (auto& [g, sub] : *subs)
    if (!here.contains(g) && !st.cursors.contains(g)) {
      auto at = first_contact(self, *t, g, sub);
      if (!at)
        return std::move(at).err();
      groups.seeds.push_back(*at);
    }
  for (auto& [g, _] : st.cursors)
    groups.unstored_cursor = groups.unstored_cursor || !here.contains(g);
  groups.seek_open = !st.holds.empty() || !st.live_seeks.empty();
  return core::consumed_by_all(groups);
}

/// maxSize: deletes segments every interested group committed past until
/// `need` frames are freed or none is left; answers the frames freed by the
/// durable steps and the error of a failed one.
void trim(partition_ptr self, std::int64_t need, promise<trim_reply> rp) {
  delete_steps(
      self,
      [self, need](std::int64_t freed)
          -> expected<std::vector<storage::retention_rule>> {
        std::vector<storage::retention_rule> rules;
        if (freed >= need)
          return rules;
        auto low = consumed_by_all(self);
        if (!low) // a failed read is the refusal's reason, not "nothing"
          return std::move(low).err();
        if (*low)
          // Never past the readable end (seals in flight stay).
          rules.push_back(
              {.through
               = std::min(**low, self->state.log->record().next_offset - 1)});
        return rules;
      },
      [rp](std::int64_t freed, std::size_t,
           std::optional<api_error> err) mutable {
        rp.deliver(trim_reply{freed, std::move(err)});
      });
}

} // namespace spool::actors::partition_detail
