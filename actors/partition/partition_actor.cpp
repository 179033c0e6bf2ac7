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

#include "actors/partition/partition_state.hpp"

namespace spool::actors {

namespace partition_detail {

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
              const std::optional<storage::subscription_record>& known) {
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
  ++st.contacts;
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
    auto t = st.cfg.node.store.read();
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
  cc.term = st.cfg.node.term;
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
  cc.encryption_keys = st.cfg.node.encryption_keys;
  auto c = spawn_cursor(self, std::move(cc), std::move(pos.row), held);
  if (!c)
    return c;
  st.cursors.emplace(group, *c);
  if (held) // the held seek is the new cursor's staged one until it settles
    st.live_seeks[group] = {c->address(), true, 1};
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
  ++st.contacts;
  for (auto& [_, c] : st.cursors)
    self->send(c, retention_atom::value, view_of(*st.log), st.overdue);
}

partition_actor::behavior_type partition(partition_ptr self,
                                         partition_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.counted.emplace(st.cfg.node.metrics, &node_metrics::partition_actors);
  st.counted->add(1);
  st.log = std::make_unique<storage::partition_log>(
      st.cfg.record, st.cfg.node.segments, st.cfg.node.frames);
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
          write_then(self, st.cfg.node.writer, no_term, barrier(),
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
  return {
      [self](seal_atom, const std::vector<storage::frame>& frames) {
        return on_seal(self, frames);
      },
      [self](settled_atom, const core::part_key& key,
             core::part_outcome outcome) { on_settled(self, key, outcome); },
      [self](pop_atom, pop_request& req) -> caf::result<pop_reply> {
        auto c = cursor_for(self, req.group);
        if (!c) {
          auto r = failed<pop_reply>(c.err());
          r.restarting = self->state.respawning.contains(req.group);
          return r;
        }
        return self->delegate(*c, pop_atom::value, std::move(req),
                              view_of(*self->state.log));
      },
      [self](ack_atom, const std::string& group, std::vector<ack_request>& reqs)
          -> caf::result<std::vector<ack_reply>> {
        auto c = cursor_for(self, group);
        if (!c)
          return std::vector<ack_reply>(
              reqs.size(),
              ack_reply{ack_error::none, false, false, c.err(), {}});
        return self->delegate(*c, ack_atom::value, std::move(reqs),
                              view_of(*self->state.log));
      },
      [self](extend_atom, const std::string& group, const std::string& lease_id,
             std::chrono::milliseconds by) -> caf::result<extend_reply> {
        auto c = cursor_for(self, group);
        if (!c)
          return extend_reply{extend_error::not_found, std::nullopt, {}};
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
        ++st.contacts;
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
        auto t = st.cfg.node.store.read();
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
          ++st.contacts;
          self->send(it->second, verdict_atom::value, true);
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
      [self](vote_atom, const std::string& group,
             storage::micros active_after) {
        return on_delete_group(self, group, active_after);
      },
      [self](purge_atom, const std::optional<storage::offset>& below) {
        auto rp = promise_for<purge_reply>(self);
        // Never past the readable end: seals in flight stay untouched.
        auto end = self->state.log->record().next_offset;
        auto through = (below ? std::min(*below, end) : end) - 1;
        delete_steps(
            self,
            [through](std::int64_t)
                -> expected<std::vector<storage::retention_rule>> {
              return std::vector<storage::retention_rule>{{.through = through}};
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
             const std::string& lease_id) -> caf::result<bool> {
        auto it = self->state.cursors.find(group);
        if (it == self->state.cursors.end()) // no live cursor, no lease
          return false;
        ++self->state.contacts;
        return self->delegate(it->second, release_atom::value, lease_id);
      },
      [self](passivate_atom) { return on_passivate(self); },
      [self](quit_atom) { self->quit(); },
      [self](trim_atom, std::int64_t need) {
        auto rp = promise_for<trim_reply>(self);
        trim(self, need, rp);
        return rp.later();
      },
      [self](requeue_atom, const std::string& group,
             std::vector<storage::dlq_entry>& entries)
          -> caf::result<dlq_count_reply> {
        auto c = cursor_for(self, group);
        if (!c)
          return dlq_count_reply{0, c.err()};
        return self->delegate(*c, requeue_atom::value, std::move(entries));
      },
      [self](retention_atom, std::uint64_t id) {
        on_retention_timer(self, id);
      },
      [self](stage_atom, const std::string& group,
             std::vector<ack_request>& reqs) {
        return on_stage(self, group, reqs);
      },
      [self](claim_atom, std::int64_t first, const pop_request& req,
             std::vector<storage::stored_frame>& frames) {
        return on_claim(self, first, req, frames);
      },
      [self](seek_atom, const std::string& group,
             const core::seek_target& target, bool dry_run, bool no_wait) {
        return on_seek(self, group, target, dry_run, no_wait);
      },
  };
}

} // namespace partition_detail

expected<void> partition_config::validate() const {
  return node.validate("partition");
}

expected<partition_actor> spawn_partition(caf::actor_system& sys,
                                          partition_config cfg) {
  SPOOL_TRY(cfg.validate());
  return sys.spawn(partition_detail::partition, std::move(cfg));
}

} // namespace spool::actors
