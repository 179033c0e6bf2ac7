// Message flow: a push seals the frames with the partition log (dedup,
// offsets, one created_at), sends the batch to the writer and answers when it
// is durable; only then do the frames become readable (`log.record()`
// advances over settled seals in seal order). Pops, acks and extends go to
// the group's cursor child, spawned on first contact, with the partition's
// view (watermark, readable end, newest stamp).

#include "actors/partition/partition_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <unordered_map>

#include "actors/cursor/cursor_actor.hpp"
#include "actors/fan_out.hpp"
#include "storage/tables.hpp"

namespace spool::actors {

namespace {

struct partition_state {
  static inline const char* name = "spool.partition";
  partition_config cfg;
  std::unique_ptr<storage::partition_log> log;
  std::unique_ptr<storage::segment_encoder> enc;
  std::unordered_map<std::string, cursor_actor> cursors;
  /// Cursors stopped by the first phase of a group deletion, by group: the
  /// second phase reaches only these (never a cursor created since).
  std::unordered_map<std::string, cursor_actor> deleting;
};

using partition_ptr = partition_actor::stateful_pointer<partition_state>;

partition_view view_of(const storage::partition_log& log) {
  auto& rec = log.record();
  return {rec.watermark, rec.next_offset, rec.last_created_at};
}

/// Where a group's first contact with this partition seeds its cursor.
storage::offset first_contact_committed(partition_ptr self) {
  // Until subscription modes exist, a new group starts at the oldest
  // retained frame (mode `all`, the default).
  return self->state.log->record().watermark - 1;
}

/// The group's cursor, spawned on first contact.
storage::expected<cursor_actor> cursor_for(partition_ptr self,
                                           const std::string& group) {
  auto& st = self->state;
  if (auto it = st.cursors.find(group); it != st.cursors.end())
    return it->second;
  cursor_config cc;
  cc.store = st.cfg.node.store;
  cc.writer = st.cfg.node.writer;
  cc.queue = st.cfg.record.queue;
  cc.partition = st.cfg.record.id;
  cc.group = group;
  cc.policy = core::cursor_policy::from(st.cfg.options);
  cc.visibility = core::visibility_policy::from(st.cfg.options);
  cc.wall = st.cfg.node.wall;
  cc.initial_committed = first_contact_committed(self);
  cc.watcher = st.cfg.watcher;
  cc.metrics = st.cfg.node.metrics;
  auto c = spawn_cursor(self, std::move(cc));
  if (c)
    st.cursors.emplace(group, *c);
  return c;
}

/// Seals `frames`; nothing changes on error.
storage::expected<sealed_ptr> seal(partition_ptr self,
                                   const std::vector<storage::frame>& frames) {
  auto& st = self->state;
  auto t = st.cfg.node.store->db().read();
  if (!t)
    return std::move(t).err();
  auto sealed = st.log->seal(*t, frames, st.cfg.node.wall(), *st.enc,
                             st.cfg.options.dedup_window_s);
  if (!sealed)
    return std::move(sealed).err();
  return std::make_shared<storage::sealed_append>(std::move(*sealed));
}

caf::typed_response_promise<push_reply>
on_push(partition_ptr self, std::vector<storage::frame>& frames) {
  auto& st = self->state;
  auto rp = self->make_response_promise<push_reply>();
  auto sealed = seal(self, frames);
  if (!sealed) {
    rp.deliver(push_reply{{}, 0, sealed.err()});
    return rp;
  }
  auto s = *sealed;
  if (s->mutations.empty()) { // only duplicates of stored frames
    st.log->durable(*s);
    rp.deliver(push_reply{s->results, s->created_at, std::nullopt});
    return rp;
  }
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                storage::write_batch{std::move(s->mutations)})
      .then(
          [self, rp, s](write_result& r) mutable {
            if (r.ok()) {
              self->state.log->durable(*s);
              rp.deliver(push_reply{s->results, s->created_at, std::nullopt});
            } else {
              self->state.log->failed(*s);
              rp.deliver(push_reply{{}, 0, r.failure});
            }
          },
          [self, rp, s](caf::error& err) mutable {
            self->state.log->failed(*s);
            rp.deliver(push_reply{{},
                                  0,
                                  storage::make_error(storage::ec::io_error,
                                                      "writer unreachable: ",
                                                      caf::to_string(err))});
          });
  return rp;
}

// -- administration -----------------------------------------------------------

/// Most frames one browse returns.
constexpr std::size_t max_browse_frames = 10'000;

/// Segments deleted per purge step (one write each).
constexpr std::size_t purge_step_segments = 1024;

browse_reply browse(partition_ptr self, const browse_request& req) {
  auto& st = self->state;
  browse_reply reply;
  auto end = st.log->record().next_offset; // the readable end
  reply.next = req.from;
  if (req.from.value < 0 || req.max_frames == 0) {
    reply.failure = storage::make_error(
        storage::ec::invalid_argument,
        "browse: offset must be >= 0 and the count at least 1");
    return reply;
  }
  if (req.from >= end)
    return reply; // nothing readable there yet
  auto t = st.cfg.node.store->db().read();
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
    reply.skipped = core::offset_range{r->skipped->first, r->skipped->second};
  return reply;
}

/// The groups with a cursor here: live ones and stored ones.
storage::expected<std::vector<std::string>>
groups_here(partition_ptr self, const std::optional<std::string>& only) {
  auto& st = self->state;
  std::vector<std::string> names;
  for (auto& [g, _] : st.cursors)
    names.push_back(g);
  auto t = st.cfg.node.store->db().read();
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

caf::typed_response_promise<std::vector<cursor_info>>
on_groups(partition_ptr self, const std::optional<std::string>& only) {
  auto rp = self->make_response_promise<std::vector<cursor_info>>();
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
  return rp;
}

caf::typed_response_promise<delete_vote>
on_delete_group(partition_ptr self, const std::string& group,
                storage::micros active_after) {
  auto rp = self->make_response_promise<delete_vote>();
  auto names = groups_here(self, group);
  if (names && names->empty()) {
    rp.deliver(delete_vote{false, false});
    return rp;
  }
  auto c = cursor_for(self, group);
  if (!c) {
    // Cannot tell: the delete mutation is harmless.
    rp.deliver(delete_vote{true, false});
    return rp;
  }
  self->state.deleting[group] = *c;
  self->request(*c, caf::infinite, delete_atom::value, active_after)
      .then([rp](delete_vote& v) mutable { rp.deliver(v); },
            [rp](caf::error&) mutable {
              rp.deliver(delete_vote{true, false});
            });
  return rp;
}

/// Deletes segments through `through`, one bounded step per write, until
/// none is left; answers whether the watermark moved.
void purge_step(partition_ptr self, storage::offset through, bool moved,
                caf::typed_response_promise<purge_reply> rp) {
  auto& st = self->state;
  auto fail = [&rp](storage::error err) mutable {
    purge_reply reply;
    reply.failure = std::move(err);
    rp.deliver(std::move(reply));
  };
  auto t = st.cfg.node.store->db().read();
  if (!t)
    return fail(t.err());
  storage::retention_rule rule;
  rule.through = through;
  rule.max_segments = purge_step_segments;
  auto plan = storage::plan_retention(*t, st.cfg.record.queue, st.cfg.record.id,
                                      rule);
  t->abort();
  if (!plan)
    return fail(plan.err());
  if (!*plan) {
    rp.deliver(purge_reply{moved ? 1u : 0u, std::nullopt});
    return;
  }
  auto watermark = (*plan)->new_watermark;
  storage::write_batch batch;
  batch.mutations.emplace_back(std::move(**plan));
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                std::move(batch))
      .then(
          [self, through, watermark, rp, fail](write_result& r) mutable {
            if (!r.ok())
              return fail(*r.failure);
            self->state.log->watermark_moved(watermark);
            purge_step(self, through, true, rp);
          },
          [fail](caf::error& err) mutable {
            fail(storage::make_error(
                storage::ec::io_error,
                "writer unreachable: ", caf::to_string(err)));
          });
}

/// The highest offset every interested group has committed (semantics.md
/// §7): the minimum over the cursors here; none when no group has a cursor
/// here, or a group registered on the queue has none yet (it would start
/// at the watermark).
storage::expected<std::optional<storage::offset>>
consumed_by_all(partition_ptr self) {
  auto& st = self->state;
  auto t = st.cfg.node.store->db().read();
  if (!t)
    return std::move(t).err();
  auto cursors
      = storage::tables::cursors_of(*t, st.cfg.record.queue, st.cfg.record.id);
  if (!cursors)
    return std::move(cursors).err();
  auto subs = storage::tables::subscriptions_of(*t, st.cfg.record.queue);
  if (!subs)
    return std::move(subs).err();
  std::optional<storage::offset> low;
  std::set<std::string> here;
  for (auto& [g, c] : *cursors) {
    here.insert(g);
    if (!low || c.committed < *low)
      low = c.committed;
  }
  for (auto& [g, _] : *subs)
    if (!here.contains(g))
      return std::optional<storage::offset>{};
  return low;
}

/// One bounded trim step after another until `need` frames are freed.
void trim_step(partition_ptr self, std::int64_t need, std::int64_t freed,
               caf::typed_response_promise<std::int64_t> rp) {
  auto& st = self->state;
  auto low = consumed_by_all(self);
  if (!low || !*low || freed >= need) {
    rp.deliver(freed);
    return;
  }
  auto t = st.cfg.node.store->db().read();
  if (!t) {
    rp.deliver(freed);
    return;
  }
  storage::retention_rule rule;
  // Never past the readable end (seals in flight stay).
  rule.through = std::min(**low, st.log->record().next_offset - 1);
  rule.max_segments = purge_step_segments;
  auto plan = storage::plan_retention(*t, st.cfg.record.queue, st.cfg.record.id,
                                      rule);
  t->abort();
  if (!plan || !*plan) {
    rp.deliver(freed);
    return;
  }
  auto watermark = (*plan)->new_watermark;
  auto gained = watermark - st.log->record().watermark;
  storage::write_batch batch;
  batch.mutations.emplace_back(std::move(**plan));
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                std::move(batch))
      .then(
          [self, need, freed, gained, watermark, rp](write_result& r) mutable {
            if (!r.ok()) {
              rp.deliver(freed);
              return;
            }
            self->state.log->watermark_moved(watermark);
            trim_step(self, need, freed + gained, rp);
          },
          [rp, freed](caf::error&) mutable { rp.deliver(freed); });
}

caf::typed_response_promise<storage::micros>
on_oldest(partition_ptr self, const std::string& group) {
  auto rp = self->make_response_promise<storage::micros>();
  auto& st = self->state;
  auto names = groups_here(self, group);
  if (names && names->empty()) {
    // New here: it would start at the watermark (mode `all`).
    auto& rec = st.log->record();
    storage::micros at = 0;
    if (rec.next_offset > rec.watermark)
      if (auto t = st.cfg.node.store->db().read())
        if (auto r
            = storage::read_frames(*t, rec.queue, rec.id, rec.watermark, 1);
            r && !r->frames.empty())
          at = r->frames.front().created_at;
    rp.deliver(at);
    return rp;
  }
  auto c = cursor_for(self, group);
  if (!c) {
    rp.deliver(storage::micros{0});
    return rp;
  }
  self->request(*c, caf::infinite, info_atom::value, view_of(*st.log))
      .then(
          [rp](cursor_info& info) mutable {
            rp.deliver(info.oldest_unconsumed_at);
          },
          [rp](caf::error&) mutable { rp.deliver(storage::micros{0}); });
  return rp;
}

// -- seek ---------------------------------------------------------------------

/// Stages a group's seek on its cursor (created if the group never met this
/// partition), after the timestamp walk. A dry run for a group without a
/// cursor here creates none: it answers where the seek would land from the
/// position a first contact would seed.
caf::typed_response_promise<seek_stage> on_seek(partition_ptr self,
                                                const std::string& group,
                                                const core::seek_target& target,
                                                bool dry_run) {
  auto& st = self->state;
  auto rp = self->make_response_promise<seek_stage>();
  auto fail = [&rp](storage::error err) mutable {
    seek_stage failed;
    failed.failure = std::move(err);
    rp.deliver(std::move(failed));
    return rp;
  };
  auto rule = core::seek_rule_of(target);
  if (!rule)
    return fail(rule.err());
  auto view = view_of(*st.log);
  cursor_seek req{target, std::nullopt, dry_run};
  if (*rule == core::seek_rule::timestamp) {
    auto t = st.cfg.node.store->db().read();
    if (!t)
      return fail(t.err());
    auto walked = storage::resolve_timestamp(
        *t, st.cfg.record.queue, st.cfg.record.id, *target.timestamp);
    if (!walked)
      return fail(walked.err());
    req.walked = *walked;
  }
  if (dry_run) {
    auto names = groups_here(self, group);
    if (names && names->empty()) {
      seek_stage positions;
      positions.after
          = core::seek_position(*rule, target,
                                {view.watermark, view.readable_end - 1,
                                 first_contact_committed(self), req.walked});
      rp.deliver(std::move(positions));
      return rp;
    }
  }
  auto c = cursor_for(self, group);
  if (!c)
    return fail(c.err());
  rp.delegate(*c, seek_atom::value, std::move(req), view);
  return rp;
}

partition_actor::behavior_type partition(partition_ptr self,
                                         partition_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.log = std::make_unique<storage::partition_log>(
      st.cfg.record, st.cfg.node.segments, st.cfg.node.frames);
  st.enc = std::make_unique<storage::segment_encoder>(st.cfg.node.codec);
  auto failed = [](const storage::error& err) {
    pop_reply r;
    r.failure = err;
    return r;
  };
  return {
      [self](push_atom, std::vector<storage::frame>& frames) {
        return on_push(self, frames);
      },
      [self](seal_atom, const std::vector<storage::frame>& frames) {
        auto sealed = seal(self, frames);
        if (!sealed)
          return seal_reply{nullptr, sealed.err()};
        return seal_reply{*sealed, std::nullopt};
      },
      [self](settle_atom, const sealed_ptr& s, bool durable) {
        if (durable)
          self->state.log->durable(*s);
        else
          self->state.log->failed(*s);
      },
      [self, failed](pop_atom, pop_request& req) -> caf::delegated<pop_reply> {
        auto c = cursor_for(self, req.group);
        if (!c) {
          auto rp = self->make_response_promise<pop_reply>();
          rp.deliver(failed(c.err()));
          return {};
        }
        return self->delegate(*c, pop_atom::value, std::move(req),
                              view_of(*self->state.log));
      },
      [self](ack_atom, const std::string& group,
             std::vector<core::ack_request>& reqs)
          -> caf::delegated<std::vector<ack_reply>> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = self->make_response_promise<std::vector<ack_reply>>();
          rp.deliver(std::vector<ack_reply>(
              reqs.size(),
              ack_reply{core::ack_error::none, false, false, c.err()}));
          return {};
        }
        return self->delegate(*c, ack_atom::value, std::move(reqs),
                              view_of(*self->state.log));
      },
      [self](extend_atom, const std::string& group, const std::string& lease_id,
             std::chrono::milliseconds by) -> caf::delegated<extend_reply> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = self->make_response_promise<extend_reply>();
          rp.deliver(extend_reply{core::extend_error::not_found, std::nullopt});
          return {};
        }
        return self->delegate(*c, extend_atom::value, lease_id, by);
      },
      [self](options_atom, storage::queue_options& opts) {
        auto& st = self->state;
        st.cfg.options = std::move(opts);
        auto policy = core::cursor_policy::from(st.cfg.options);
        auto visibility = core::visibility_policy::from(st.cfg.options);
        for (auto& [_, c] : st.cursors)
          self->send(c, options_atom::value, policy, visibility);
      },
      [self](browse_atom, const browse_request& req) {
        return browse(self, req);
      },
      [self](groups_atom, const std::optional<std::string>& group) {
        return on_groups(self, group);
      },
      [self](delete_atom, const std::string& group,
             storage::micros active_after) {
        return on_delete_group(self, group, active_after);
      },
      [self](delete_atom, const std::string& group, bool durable) {
        auto& st = self->state;
        auto stopped = st.deleting.find(group);
        if (stopped == st.deleting.end())
          return; // the first phase stopped no cursor here
        auto c = std::move(stopped->second);
        st.deleting.erase(stopped);
        self->send(c, delete_atom::value, durable);
        if (auto it = st.cursors.find(group);
            durable && it != st.cursors.end() && it->second == c)
          st.cursors.erase(it); // the next contact is a first one
      },
      [self](purge_atom, const std::optional<storage::offset>& below) {
        auto rp = self->make_response_promise<purge_reply>();
        // Never past the readable end: seals in flight stay untouched.
        auto end = self->state.log->record().next_offset;
        auto limit = below ? std::min(*below, end) : end;
        purge_step(self, limit - 1, false, rp);
        return rp;
      },
      [self](size_atom) {
        auto& log = *self->state.log;
        return log.next_offset() - log.record().watermark;
      },
      [self](oldest_atom, const std::string& group) {
        return on_oldest(self, group);
      },
      [self](release_atom, const std::string& group,
             const std::string& lease_id) -> caf::delegated<bool> {
        auto it = self->state.cursors.find(group);
        if (it == self->state.cursors.end()) { // no live cursor, no lease
          auto rp = self->make_response_promise<bool>();
          rp.deliver(false);
          return {};
        }
        return self->delegate(it->second, release_atom::value, lease_id);
      },
      [self](trim_atom, std::int64_t need) {
        auto rp = self->make_response_promise<std::int64_t>();
        trim_step(self, need, 0, rp);
        return rp;
      },
      [self](requeue_atom, const std::string& group,
             std::vector<storage::dlq_entry>& entries)
          -> caf::delegated<dlq_count_reply> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = self->make_response_promise<dlq_count_reply>();
          rp.deliver(dlq_count_reply{0, c.err()});
          return {};
        }
        return self->delegate(*c, requeue_atom::value, std::move(entries));
      },
      [self](
          stage_atom, const std::string& group,
          std::vector<core::ack_request>& reqs) -> caf::delegated<stage_reply> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = self->make_response_promise<stage_reply>();
          stage_reply failed;
          failed.failure = c.err();
          rp.deliver(std::move(failed));
          return {};
        }
        return self->delegate(*c, stage_atom::value, std::move(reqs),
                              view_of(*self->state.log));
      },
      [self](settle_atom, const std::string& group, std::uint64_t id,
             bool commit) {
        auto& cursors = self->state.cursors;
        if (auto it = cursors.find(group); it != cursors.end())
          self->send(it->second, settle_atom::value, id, commit);
      },
      [self](seek_atom, const std::string& group,
             const core::seek_target& target,
             bool dry_run) { return on_seek(self, group, target, dry_run); },
  };
}

} // namespace

storage::expected<void> partition_config::validate() const {
  return node.validate("partition");
}

storage::expected<partition_actor> spawn_partition(caf::actor_system& sys,
                                                   partition_config cfg) {
  SPOOL_TRY(cfg.validate());
  return sys.spawn(partition, std::move(cfg));
}

} // namespace spool::actors
