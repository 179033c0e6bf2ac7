// Message flow: a push seals the frames with the partition log (dedup,
// offsets, one created_at), sends the batch to the writer and answers when it
// is durable; only then do the frames become readable (`log.record()`
// advances over settled seals in seal order). Pops, acks and extends go to
// the group's cursor child, spawned on first contact, with the partition's
// view (watermark, readable end, newest stamp).
// Deletions (purge, maxSize trims, retention) run one at a time, each as
// bounded steps of one write (`delete_steps`); every watermark move is told
// to the live cursors. Retention (semantics.md §7) runs on the partition's
// one timer (`retention_atom` with an id; stale ids are ignored), armed at
// the next time a rule can become due and never sooner than one
// `retention.intervalSeconds` after a run: a run deletes what
// retentionSeconds / completedRetentionSeconds allow and tells every group
// with a cursor here the maxWaitTimeSeconds boundary (the cursors
// dead-letter what they have not consumed).

#include "actors/partition/partition_actor.hpp"
#include "actors/promise.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "actors/async_mutex.hpp"
#include "actors/cursor/cursor_actor.hpp"
#include "actors/fan_out.hpp"
#include "actors/supervise.hpp"
#include "actors/write.hpp"
#include "core/partition/retention.hpp"
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
  std::unordered_map<std::string, cursor_actor> stopping;
  /// Deletions (purge, trim, retention): one run at a time.
  async_mutex deleting;
  /// Retention: the options' rules, the one timer (when it fires, wall µs,
  /// and its id), whether a run is going on, and the maxWait boundary told
  /// to the cursors (frames at or below it are overdue).
  core::retention_policy retention;
  std::optional<storage::micros> armed;
  std::uint64_t timer_id = 0;
  bool retaining = false;
  storage::offset overdue{-1};
  /// Seeks staged here for groups without a live cursor, until settled:
  /// the seek, and the row (or first-contact position) it was staged from.
  struct hold {
    held_seek seek;
    std::optional<storage::cursor_record> row;
    storage::offset start{-1};
  };
  std::unordered_map<std::string, hold> holds;
  std::uint64_t next_hold = 0;
  /// Seeks staged by live cursors here (group -> stage id), until the queue
  /// settles them through this partition: while one may move its group
  /// back, nothing counts as consumed by all (correction 13).
  struct live_seek {
    std::uint64_t id = 0;
    caf::actor_addr cursor; ///< the cursor that staged it (settled only there)
  };
  std::unordered_map<std::string, live_seek> live_seeks;
  /// Transactions staged by live cursors here (group -> stage id), until
  /// the broker settles them through this partition.
  std::unordered_map<std::string, live_seek> live_txns;
  /// Whether `group` has a seek or a transaction staged here.
  bool staged(const std::string& group) const {
    return live_seeks.contains(group) || live_txns.contains(group);
  }
  /// Groups whose cursor died, until the write barrier (supervise.hpp)
  /// answers: their next cursor reads a row every earlier write reached.
  std::unordered_set<std::string> respawning;
  /// Of those, the groups whose respawn barrier has not returned yet. A
  /// group whose dead cursor had staged a seek or a transaction (`staged`)
  /// also waits for its settle: its batch may be written after the barrier,
  /// and the new cursor must read the row it writes.
  std::unordered_set<std::string> barrier_pending;
  /// Cursor deaths allowed before the partition gives up.
  restart_budget restarts;
};

using partition_ptr = partition_actor::stateful_pointer<partition_state>;

/// The cursor policy of this partition's queue options and node settings.
core::cursor_policy policy_of(const partition_state& st) {
  auto p = core::cursor_policy::from(st.cfg.options);
  p.max_extend = st.cfg.node.max_extend;
  return p;
}

partition_view view_of(const storage::partition_log& log) {
  auto& rec = log.record();
  return {rec.watermark, rec.next_offset, rec.last_created_at};
}

/// Where `group` starts here on its first contact: seeded from its stored
/// subscription record (none, e.g. queue mode: `all`), never past the
/// readable end (a seal committed out of order is not readable yet).
expected<storage::offset>
first_contact(partition_ptr self, storage::txn& t, const std::string& group,
              const std::optional<storage::subscription_record>& known = {}) {
  auto& st = self->state;
  auto& rec = st.log->record();
  auto sub = known;
  if (!sub) {
    auto stored = storage::tables::get_subscription(t, rec.queue, group);
    if (!stored)
      return std::move(stored).err();
    sub = std::move(*stored);
  }
  auto at = storage::first_contact(
      t, rec.queue, rec.id, sub.value_or(storage::subscription_record{}));
  if (!at)
    return std::move(at).err();
  return core::clamp_first_contact(*at, rec.watermark, rec.next_offset);
}

/// Where a group without a live cursor stands here: its stored row, or
/// (none stored) the position its first contact seeds.
struct stored_position {
  std::optional<storage::cursor_record> row;
  storage::offset start{-1}; ///< used only without a row
};

expected<stored_position> read_position(partition_ptr self, storage::txn& t,
                                        const std::string& group) {
  auto& st = self->state;
  auto row = storage::tables::get_cursor(t, st.cfg.record.queue,
                                         st.cfg.record.id, group);
  if (!row)
    return std::move(row).err();
  stored_position pos{std::move(*row), storage::offset{-1}};
  if (!pos.row) {
    auto first = first_contact(self, t, group);
    if (!first)
      return std::move(first).err();
    pos.start = *first;
  }
  return pos;
}

/// The group's cursor, spawned on first contact. A seek held here for the
/// group passes to the new cursor, staged from the row it was computed on.
expected<cursor_actor> cursor_for(partition_ptr self,
                                  const std::string& group) {
  auto& st = self->state;
  if (auto it = st.cursors.find(group); it != st.cursors.end())
    return it->second;
  if (st.respawning.contains(group))
    return make_error(errc::unavailable, "the cursor of group ", group,
                      " is restarting; retry");
  stored_position pos;
  std::optional<held_seek> held;
  if (auto h = st.holds.find(group); h != st.holds.end()) {
    pos = {std::move(h->second.row), h->second.start};
    held = h->second.seek;
    st.holds.erase(h);
  } else {
    auto t = st.cfg.node.store->db().read();
    if (!t)
      return std::move(t).err();
    auto read = read_position(self, *t, group);
    if (!read)
      return std::move(read).err();
    pos = std::move(*read);
  }
  cursor_config cc;
  cc.store = st.cfg.node.store;
  cc.writer = st.cfg.node.writer;
  cc.queue = st.cfg.record.queue;
  cc.partition = st.cfg.record.id;
  cc.group = group;
  cc.policy = policy_of(st);
  cc.visibility = core::visibility_policy::from(st.cfg.options);
  cc.wall = st.cfg.node.wall;
  cc.initial_committed = pos.start; // used only if no row is stored
  cc.watermark = st.log->record().watermark;
  cc.overdue_step = st.cfg.node.delete_step;
  cc.watcher = st.cfg.watcher;
  cc.metrics = st.cfg.node.metrics;
  auto c = spawn_cursor(self, std::move(cc), std::move(pos.row), held);
  if (!c)
    return c;
  st.cursors.emplace(group, *c);
  if (held) // the held seek is the new cursor's staged one until it settles
    st.live_seeks[group] = {held->id, c->address()};
  // A group new here judges what is overdue already before anything else.
  if (st.overdue.value >= 0)
    self->send(*c, retention_atom::value, view_of(*st.log), st.overdue);
  return c;
}

/// Retention or purge deleted segments: the new watermark, told to every
/// live cursor (frames deleted under a lease count as completed).
void watermark_moved(partition_ptr self, storage::offset watermark) {
  auto& st = self->state;
  st.log->watermark_moved(watermark);
  for (auto& [_, c] : st.cursors)
    self->send(c, retention_atom::value, view_of(*st.log), st.overdue);
}

void retention_after_push(partition_ptr self);

/// Seals `frames`; nothing changes on error.
expected<sealed_ptr> seal(partition_ptr self,
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
  auto rp = promise_for<push_reply>(self);
  auto sealed = seal(self, frames);
  if (!sealed) {
    rp.deliver(push_reply{{}, 0, sealed.err()});
    return rp.later();
  }
  auto s = *sealed;
  if (s->mutations.empty()) { // only duplicates of stored frames
    st.log->durable(*s);
    rp.deliver(push_reply{s->results, s->created_at, std::nullopt});
    return rp.later();
  }
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                storage::write_batch{std::move(s->mutations)})
      .then(
          [self, rp, s](write_result& r) mutable {
            if (r.ok()) {
              self->state.log->durable(*s);
              retention_after_push(self);
              rp.deliver(push_reply{s->results, s->created_at, std::nullopt});
            } else {
              self->state.log->failed(*s);
              rp.deliver(push_reply{{}, 0, r.failure});
            }
          },
          [self, rp, s](caf::error& err) mutable {
            self->state.log->lost(*s); // it may be stored: keep the gap
            rp.deliver(push_reply{{}, 0, unreachable(err, "writer")});
          });
  return rp.later();
}

// -- administration
// -----------------------------------------------------------

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
    reply.failure
        = make_error(errc::invalid_argument,
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

caf::typed_response_promise<delete_vote>
on_delete_group(partition_ptr self, const std::string& group,
                storage::micros active_after) {
  auto rp = promise_for<delete_vote>(self);
  auto names = groups_here(self, group);
  if (names && names->empty()) {
    rp.deliver(delete_vote{false, false});
    return rp.later();
  }
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
    rp.deliver(delete_vote{true, open, open});
    return rp.later();
  }
  self->state.stopping[group] = *c;
  self->request(*c, caf::infinite, delete_atom::value, active_after)
      .then([rp](delete_vote& v) mutable { rp.deliver(v); },
            [rp, unsettled](caf::error&) mutable {
              auto open = unsettled();
              rp.deliver(delete_vote{true, open, open});
            });
  return rp.later();
}

/// What the next deletion step may delete, given the frames freed so far:
/// rules tried in order until one admits a segment (none: the run ends).
using step_rules
    = std::function<std::vector<storage::retention_rule>(std::int64_t freed)>;

/// The end of a deletion run: frames freed (how far the watermark moved),
/// writes made, and the error that stopped it, if any.
using steps_done = std::function<void(std::int64_t freed, std::size_t writes,
                                      std::optional<api_error>)>;

/// One step: plans with the first rule that admits a segment (at most
/// `delete_step` segments), writes it, moves the watermark and goes on.
void delete_step(partition_ptr self, std::shared_ptr<step_rules> rules,
                 std::int64_t freed, std::size_t writes, steps_done done) {
  auto& st = self->state;
  auto candidates = (*rules)(freed);
  if (candidates.empty())
    return done(freed, writes, std::nullopt);
  auto t = st.cfg.node.store->db().read();
  if (!t)
    return done(freed, writes, t.err());
  std::optional<storage::mut::delete_segments> step;
  for (auto& rule : candidates) {
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
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                std::move(batch))
      .then(
          [self, rules, freed, writes, gained, watermark,
           done](write_result& r) mutable {
            if (!r.ok())
              return done(freed, writes, std::move(r.failure));
            watermark_moved(self, watermark);
            delete_step(self, std::move(rules), freed + gained, writes + 1,
                        std::move(done));
          },
          [freed, writes, done](caf::error& err) mutable {
            done(freed, writes,
                 make_error(errc::internal,
                            "writer unreachable: ", caf::to_string(err)));
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

/// A rule deleting segments through `through`, whatever their age.
storage::retention_rule through_rule(storage::offset through) {
  storage::retention_rule rule;
  rule.through = through;
  return rule;
}

/// The highest offset every interested group has committed (semantics.md
/// §7): the minimum over the cursors stored here and, for a group
/// registered on the queue without one, where its first contact would seed
/// it; none when nobody is interested, or a group met here has nothing
/// stored yet.
expected<std::optional<storage::offset>> consumed_by_all(partition_ptr self) {
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
      [self, need](std::int64_t freed) {
        std::vector<storage::retention_rule> rules;
        if (freed >= need)
          return rules;
        auto low = consumed_by_all(self);
        if (low && *low)
          // Never past the readable end (seals in flight stay).
          rules.push_back(through_rule(
              std::min(**low, self->state.log->record().next_offset - 1)));
        return rules;
      },
      [rp](std::int64_t freed, std::size_t,
           std::optional<api_error> err) mutable {
        rp.deliver(trim_reply{freed, std::move(err)});
      });
}

// -- retention (semantics.md §7)
// ----------------------------------------------

/// Keeps the one retention timer at `due` (wall µs) or earlier.
void arm_retention(partition_ptr self, std::optional<storage::micros> due) {
  auto& st = self->state;
  if (!due || (st.armed && *st.armed <= *due))
    return;
  st.armed = due;
  auto delay = std::chrono::microseconds{
      std::max<storage::micros>(*due - st.cfg.node.wall(), 0)};
  self->delayed_send(self, delay, retention_atom::value, ++st.timer_id);
}

/// New frames are durable: retention looks at them one interval from now
/// (cheap: no read; the run computes the exact next time).
void retention_after_push(partition_ptr self) {
  auto& st = self->state;
  if (st.armed || st.retaining || !st.retention.active())
    return;
  arm_retention(self,
                st.cfg.node.wall()
                    + std::chrono::duration_cast<std::chrono::microseconds>(
                          st.cfg.node.retention_interval)
                          .count());
}

/// created_at of the frame at `off` (or the next retained one); none past
/// the readable end.
std::optional<storage::micros> created_at_of(partition_ptr self,
                                             storage::offset off) {
  auto& st = self->state;
  auto& rec = st.log->record();
  off = std::max(off, rec.watermark);
  if (off >= rec.next_offset)
    return std::nullopt;
  auto t = st.cfg.node.store->db().read();
  if (!t)
    return std::nullopt;
  auto r = storage::read_frames(*t, rec.queue, rec.id, off, 1);
  if (!r || r->frames.empty() || r->frames.front().off >= rec.next_offset)
    return std::nullopt;
  return r->frames.front().created_at;
}

/// maxWaitTimeSeconds: moves the overdue boundary to the last frame created
/// before `before` and tells every group with a cursor here.
void tell_overdue(partition_ptr self, storage::micros before) {
  auto& st = self->state;
  auto& rec = st.log->record();
  auto t = st.cfg.node.store->db().read();
  if (!t)
    return;
  auto boundary = storage::resolve_timestamp(*t, rec.queue, rec.id, before);
  t->abort();
  if (!boundary)
    return;
  auto through = std::min(*boundary, rec.next_offset - 1);
  if (through <= st.overdue)
    return;
  st.overdue = through;
  auto names = groups_here(self, std::nullopt);
  if (!names)
    return;
  for (auto& g : *names) {
    if (auto it = st.cursors.find(g); it != st.cursors.end())
      self->send(it->second, retention_atom::value, view_of(*st.log),
                 st.overdue);
    else
      (void)cursor_for(self, g); // told at its spawn
  }
}

/// One retention run: maxWait, then deletion steps, then the next timer.
void run_retention(partition_ptr self) {
  auto& st = self->state;
  if (!st.retention.active())
    return;
  st.retaining = true;
  if (auto before = core::overdue_before(st.retention, st.cfg.node.wall()))
    tell_overdue(self, *before);
  delete_steps(
      self,
      [self](std::int64_t) {
        auto& st = self->state;
        std::optional<storage::offset> low;
        if (st.retention.completed > 0)
          if (auto c = consumed_by_all(self))
            low = *c;
        std::vector<storage::retention_rule> rules;
        for (auto& b :
             core::deletion_bounds(st.retention, st.cfg.node.wall(),
                                   st.log->record().next_offset - 1, low)) {
          storage::retention_rule rule;
          rule.created_before = b.created_before;
          rule.through = b.through;
          rules.push_back(rule);
        }
        return rules;
      },
      [self](std::int64_t freed, std::size_t writes,
             std::optional<api_error> err) {
        auto& st = self->state;
        st.retaining = false;
        if (auto& m = st.cfg.node.metrics) {
          m->retention_frames_deleted += static_cast<std::uint64_t>(freed);
          m->retention_writes += writes;
        }
        if (err)
          spdlog::warn("partition {}: retention stopped: {}",
                       st.cfg.record.name, to_string(*err));
        auto now = st.cfg.node.wall();
        auto interval = std::chrono::duration_cast<std::chrono::microseconds>(
                            st.cfg.node.retention_interval)
                            .count();
        std::optional<storage::micros> unjudged;
        if (st.retention.max_wait > 0)
          unjudged = created_at_of(self, st.overdue + 1);
        arm_retention(self,
                      core::next_run(st.retention, now, interval,
                                     created_at_of(self, storage::offset{0}),
                                     unjudged));
      });
}

void on_retention_timer(partition_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.timer_id)
    return; // superseded by an earlier deadline
  st.armed.reset();
  if (!st.retaining) // a run going on arms the next one when it ends
    run_retention(self);
}

caf::typed_response_promise<storage::micros>
on_oldest(partition_ptr self, const std::string& group) {
  auto rp = promise_for<storage::micros>(self);
  auto& st = self->state;
  auto names = groups_here(self, group);
  if (names && names->empty()) {
    // New here: it would start where its first contact seeds it.
    auto& rec = st.log->record();
    storage::micros at = 0;
    if (auto t = st.cfg.node.store->db().read())
      if (auto start = first_contact(self, *t, group);
          start && *start + 1 < rec.next_offset)
        if (auto r = storage::read_frames(*t, rec.queue, rec.id, *start + 1, 1);
            r && !r->frames.empty())
          at = r->frames.front().created_at;
    rp.deliver(at);
    return rp.later();
  }
  auto c = cursor_for(self, group);
  if (!c) {
    rp.deliver(storage::micros{0});
    return rp.later();
  }
  self->request(*c, caf::infinite, info_atom::value, view_of(*st.log))
      .then(
          [rp](cursor_info& info) mutable {
            rp.deliver(info.oldest_unconsumed_at);
          },
          [rp](caf::error&) mutable { rp.deliver(storage::micros{0}); });
  return rp.later();
}

// -- seek
// ---------------------------------------------------------------------

/// Stages a seek for a group without a live cursor here, without spawning
/// one: the new record is computed from the stored row (or first-contact
/// position) as the cursor would compute it, and held until the queue
/// settles it (see `held_seek`).
caf::typed_response_promise<seek_stage>
hold_seek(partition_ptr self, const std::string& group, core::seek_rule rule,
          const cursor_seek& req, const partition_view& view,
          promise<seek_stage> rp) {
  auto& st = self->state;
  seek_stage stage;
  auto t = st.cfg.node.store->db().read();
  if (!t) {
    stage.failure = t.err();
    rp.deliver(std::move(stage));
    return rp.later();
  }
  auto pos = read_position(self, *t, group);
  t->abort();
  if (!pos) {
    stage.failure = pos.err();
    rp.deliver(std::move(stage));
    return rp.later();
  }
  storage::cursor_record initial;
  initial.committed = pos->start;
  core::cursor_core core{pos->row ? *pos->row : initial, policy_of(st)};
  core.note_watermark(view.watermark);
  auto wall = st.cfg.node.wall();
  auto plan = core::plan_seek(core, rule, req.target, view.watermark,
                              view.readable_end - 1, req.walked, wall);
  stage.before = plan.before;
  stage.after = plan.after;
  stage.record = storage::mut::put_cursor{st.cfg.record.queue, st.cfg.record.id,
                                          group, std::move(plan.record)};
  // Ids of held seeks have the top bit set: never a cursor's own stage id.
  stage.stage_id = (std::uint64_t{1} << 63) | ++st.next_hold;
  st.holds.emplace(
      group, partition_state::hold{held_seek{stage.stage_id, stage.after, wall},
                                   std::move(pos->row), pos->start});
  rp.deliver(std::move(stage));
  return rp.later();
}

/// Stages a group's seek on its cursor (created if the group never met this
/// partition), after the timestamp walk. A dry run for a group without a
/// cursor here creates none: it answers where the seek would land from the
/// position a first contact would seed.
caf::typed_response_promise<seek_stage> on_seek(partition_ptr self,
                                                const std::string& group,
                                                const core::seek_target& target,
                                                bool dry_run, bool no_wait) {
  auto& st = self->state;
  auto rp = promise_for<seek_stage>(self);
  auto fail = [&rp](api_error err) mutable {
    seek_stage failed;
    failed.failure = std::move(err);
    rp.deliver(std::move(failed));
    return rp.later();
  };
  auto rule = core::seek_rule_of(target);
  if (!rule)
    return fail(rule.err());
  auto view = view_of(*st.log);
  cursor_seek req{target, std::nullopt, dry_run, no_wait};
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
      auto t = self->state.cfg.node.store->db().read();
      if (!t)
        return fail(t.err());
      auto start = first_contact(self, *t, group);
      t->abort();
      if (!start)
        return fail(start.err());
      seek_stage positions;
      positions.after = core::seek_position(
          *rule, target,
          {view.watermark, view.readable_end - 1, *start, req.walked});
      rp.deliver(std::move(positions));
      return rp.later();
    }
  }
  // Held here only while no maxWait boundary is in force: the exemption a
  // seek gives the frames overdue at that moment lives in the cursor. Not
  // while the group's cursor is being respawned: its row may still change
  // (a stage of the dead cursor settles), so the seek waits (busy).
  if (!dry_run && st.overdue.value < 0 && !st.cursors.contains(group)
      && !st.holds.contains(group) && !st.respawning.contains(group))
    return hold_seek(self, group, *rule, req, view, rp);
  auto c = cursor_for(self, group);
  if (!c)
    return fail(c.err());
  if (dry_run) {
    rp.delegate(*c, seek_atom::value, std::move(req), view);
    return rp.later();
  }
  self->request(*c, caf::infinite, seek_atom::value, std::move(req), view)
      .then(
          [self, rp, group, cursor = c->address()](seek_stage& stage) mutable {
            if (stage.stage_id != 0)
              self->state.live_seeks[group] = {stage.stage_id, cursor};
            rp.deliver(std::move(stage));
          },
          [rp](caf::error& err) mutable {
            seek_stage failed;
            failed.failure = make_error(
                errc::unavailable, "the group's cursor here is restarting (",
                caf::to_string(err), "); retry");
            rp.deliver(std::move(failed));
          });
  return rp.later();
}

partition_actor::behavior_type partition(partition_ptr self,
                                         partition_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.log = std::make_unique<storage::partition_log>(
      st.cfg.record, st.cfg.node.segments, st.cfg.node.frames);
  st.enc = std::make_unique<storage::segment_encoder>(st.cfg.node.codec);
  st.retention = core::retention_policy::from(st.cfg.options);
  if (st.log->record().next_offset > st.log->record().watermark)
    retention_after_push(self); // recovered frames: looked at one interval on
  // A cursor that dies (a bug) is forgotten: the group's next contact
  // spawns it again from its stored row, as after a restart (a lease it
  // held is lost and ends as an expiry). Nothing else here notices.
  supervise(self, [self](const caf::actor_addr& src, const caf::error& why) {
    auto& st = self->state;
    for (auto* map : {&st.cursors, &st.stopping})
      for (auto it = map->begin(); it != map->end(); ++it)
        if (it->second.address() == src) {
          if (!why)
            return true;
          auto group = it->first;
          map->erase(it);
          if (map != &st.cursors)
            return true;
          note_death(st.cfg.node.metrics, "cursor",
                     st.cfg.record.name + "/" + group, why,
                     "respawned from its stored row at the next contact");
          if (!st.restarts.spend(self->clock().now())) {
            self->quit(why); // not transient: the queue takes over
            return true;
          }
          st.respawning.insert(group);
          st.barrier_pending.insert(group);
          write_then(self, st.cfg.node.writer, barrier(),
                     [self, group](std::optional<api_error> failure) {
                       // A barrier is never refused: an error means the
                       // writer or the store is gone.
                       if (failure)
                         return self->quit(caf::make_error(
                             caf::sec::runtime_error, to_string(*failure)));
                       auto& st = self->state;
                       st.barrier_pending.erase(group);
                       if (!st.staged(group))
                         st.respawning.erase(group);
                     });
          return true;
        }
    return false;
  });
  auto failed = [](const api_error& err) {
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
        if (durable) {
          self->state.log->durable(*s);
          retention_after_push(self);
        } else {
          self->state.log->failed(*s);
        }
      },
      [self, failed](pop_atom, pop_request& req) -> caf::delegated<pop_reply> {
        auto c = cursor_for(self, req.group);
        if (!c) {
          auto rp = promise_for<pop_reply>(self);
          auto r = failed(c.err());
          r.restarting = self->state.respawning.contains(req.group);
          rp.deliver(std::move(r));
          return {};
        }
        return self->delegate(*c, pop_atom::value, std::move(req),
                              view_of(*self->state.log));
      },
      [self](ack_atom, const std::string& group, std::vector<ack_request>& reqs)
          -> caf::delegated<std::vector<ack_reply>> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = promise_for<std::vector<ack_reply>>(self);
          rp.deliver(std::vector<ack_reply>(
              reqs.size(), ack_reply{ack_error::none, false, false, c.err()}));
          return {};
        }
        return self->delegate(*c, ack_atom::value, std::move(reqs),
                              view_of(*self->state.log));
      },
      [self](extend_atom, const std::string& group, const std::string& lease_id,
             std::chrono::milliseconds by) -> caf::delegated<extend_reply> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = promise_for<extend_reply>(self);
          rp.deliver(extend_reply{extend_error::not_found, std::nullopt, {}});
          return {};
        }
        return self->delegate(*c, extend_atom::value, lease_id, by);
      },
      [self](options_atom, storage::queue_options& opts) {
        auto& st = self->state;
        st.cfg.options = std::move(opts);
        // New retention rules apply from the next run, which is now.
        st.retention = core::retention_policy::from(st.cfg.options);
        if (st.retention.active())
          arm_retention(self, st.cfg.node.wall());
        auto policy = policy_of(st);
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
      [self](seed_atom, const std::string& group,
             const storage::subscription_record& sub)
          -> std::optional<storage::offset> {
        auto& st = self->state;
        auto t = st.cfg.node.store->db().read();
        if (!t)
          return std::nullopt; // seeded on first contact instead
        auto row = storage::tables::get_cursor(*t, st.cfg.record.queue,
                                               st.cfg.record.id, group);
        if (!row || *row)
          return std::nullopt; // met already
        if (auto it = st.cursors.find(group); it != st.cursors.end()) {
          // Spawned but never stored (e.g. by a late ack after the group was
          // deleted): nothing of it is durable. It ends, so the group's next
          // contact reads the seed instead of its in-memory start.
          self->send(it->second, delete_atom::value, true);
          st.cursors.erase(it);
        }
        // `new` at registration: this partition's last offset right now
        // (the walk would also take a segment stamped this very µs).
        if (sub.mode == storage::subscription_mode::new_only) {
          auto& rec = st.log->record();
          return std::max(rec.watermark, rec.next_offset) - 1;
        }
        auto at = first_contact(self, *t, group, sub);
        if (!at)
          return std::nullopt;
        return *at;
      },
      [self](delete_atom, const std::string& group,
             storage::micros active_after) {
        return on_delete_group(self, group, active_after);
      },
      [self](delete_atom, const std::string& group, bool durable) {
        auto& st = self->state;
        auto stopped = st.stopping.find(group);
        if (stopped == st.stopping.end())
          return; // the first phase stopped no cursor here
        auto c = std::move(stopped->second);
        st.stopping.erase(stopped);
        self->send(c, delete_atom::value, durable);
        if (auto it = st.cursors.find(group);
            durable && it != st.cursors.end() && it->second == c)
          st.cursors.erase(it); // the next contact is a first one
      },
      [self](purge_atom, const std::optional<storage::offset>& below) {
        auto rp = promise_for<purge_reply>(self);
        // Never past the readable end: seals in flight stay untouched.
        auto end = self->state.log->record().next_offset;
        auto through = (below ? std::min(*below, end) : end) - 1;
        delete_steps(
            self,
            [through](std::int64_t) {
              return std::vector<storage::retention_rule>{
                  through_rule(through)};
            },
            [rp](std::int64_t freed, std::size_t,
                 std::optional<api_error> err) mutable {
              purge_reply reply;
              if (err)
                reply.failure = std::move(err);
              else
                reply.partitions = freed > 0 ? 1u : 0u;
              rp.deliver(std::move(reply));
            });
        return rp.later();
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
          auto rp = promise_for<bool>(self);
          rp.deliver(false);
          return {};
        }
        return self->delegate(it->second, release_atom::value, lease_id);
      },
      [self](trim_atom, std::int64_t need) {
        auto rp = promise_for<trim_reply>(self);
        trim(self, need, rp);
        return rp.later();
      },
      [self](requeue_atom, const std::string& group,
             std::vector<storage::dlq_entry>& entries)
          -> caf::delegated<dlq_count_reply> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = promise_for<dlq_count_reply>(self);
          rp.deliver(dlq_count_reply{0, c.err()});
          return {};
        }
        return self->delegate(*c, requeue_atom::value, std::move(entries));
      },
      [self](stage_atom, const std::string& group,
             std::vector<ack_request>& reqs) -> caf::delegated<stage_reply> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = promise_for<stage_reply>(self);
          stage_reply failed;
          failed.failure = c.err();
          rp.deliver(std::move(failed));
          return {};
        }
        // Through here, not delegated: the stage is recorded until its
        // settle, so a death in between respawns after it (`respawning`).
        auto rp = promise_for<stage_reply>(self);
        self->request(*c, caf::infinite, stage_atom::value, std::move(reqs),
                      view_of(*self->state.log))
            .then(
                [self, rp, group,
                 cursor = c->address()](stage_reply& r) mutable {
                  if (r.stage_id != 0)
                    self->state.live_txns[group] = {r.stage_id, cursor};
                  rp.deliver(std::move(r));
                },
                [rp](caf::error& err) mutable {
                  stage_reply failed;
                  failed.failure = make_error(errc::unavailable,
                                              "the group's cursor here is "
                                              "restarting (",
                                              caf::to_string(err), "); retry");
                  rp.deliver(std::move(failed));
                });
        return {};
      },
      [self](retention_atom, std::uint64_t id) {
        on_retention_timer(self, id);
      },
      [self](settle_atom, const std::string& group, std::uint64_t id,
             bool commit) {
        auto& st = self->state;
        // A seek held here: its record is durable (or not); either way the
        // next contact spawns the cursor from the stored row.
        if (auto h = st.holds.find(group);
            h != st.holds.end() && h->second.seek.id == id) {
          st.holds.erase(h);
          return;
        }
        auto it = st.cursors.find(group);
        for (auto* live : {&st.live_seeks, &st.live_txns}) {
          auto l = live->find(group);
          if (l == live->end() || l->second.id != id)
            continue;
          auto staged_by = l->second.cursor;
          live->erase(l);
          // Its cursor died: the respawn waited for this settle (its row is
          // written now, or never will be).
          if (st.respawning.contains(group)
              && !st.barrier_pending.contains(group) && !st.staged(group))
            st.respawning.erase(group);
          // Only the cursor that staged it.
          if (it != st.cursors.end() && it->second.address() == staged_by)
            self->send(it->second, settle_atom::value, id, commit);
          return;
        }
      },
      [self](seek_atom, const std::string& group,
             const core::seek_target& target, bool dry_run, bool no_wait) {
        return on_seek(self, group, target, dry_run, no_wait);
      },
  };
}

} // namespace

expected<void> partition_config::validate() const {
  return node.validate("partition");
}

expected<partition_actor> spawn_partition(caf::actor_system& sys,
                                          partition_config cfg) {
  SPOOL_TRY(cfg.validate());
  return sys.spawn(partition, std::move(cfg));
}

} // namespace spool::actors
