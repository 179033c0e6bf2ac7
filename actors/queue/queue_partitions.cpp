// A queue's partitions: created in one durable write, respawned from their
// stored records after a death (once the stages open on them settled), and
// the queue's configure (options, the Default partition).

#include "actors/queue/queue_state.hpp"
#include "core/partition/retention.hpp"

namespace spool::actors::queue_detail {

namespace {

/// Spawns the partition of `rec`, linked to this queue.
expected<partition_actor>
start_partition(queue_ptr self, const storage::partition_record& rec) {
  partition_config pc;
  pc.node = self->state.cfg.node;
  pc.record = rec;
  pc.options = self->state.cfg.record.options;
  pc.watcher = self->address();
  auto p = spawn_partition(self->system(), std::move(pc));
  if (p)
    self->link_to(*p);
  return p;
}

} // namespace

void add_partition(queue_ptr self, const storage::partition_record& rec) {
  auto& st = self->state;
  st.partitions.emplace(rec.name,
                        partition_entry{rec, partition_actor{}, st.ring.size(),
                                        rec.next_offset - 1});
  st.ring.push_back(rec.name);
  st.names_by_id.emplace(rec.id.value, rec.name);
  st.names_by_uuid.emplace(rec.uuid, rec.name);
  st.candidates.resize(st.ring.size());
  if (!st.counted)
    st.counted.emplace(st.cfg.node.metrics, &node_metrics::partitions_loaded);
  st.counted->add(1);
}

namespace {

/// Partition `entry`'s record as stored now (its actor, gone, may have
/// moved it on since the queue read it).
expected<storage::partition_record>
stored_record(queue_ptr self, const partition_entry& entry) {
  auto& st = self->state;
  auto t = st.cfg.node.store.read();
  if (!t)
    return std::move(t).err();
  auto rec = storage::tables::get_partition(*t, st.cfg.record.id, entry.rec.id);
  if (!rec)
    return std::move(rec).err();
  if (!*rec)
    return make_error(errc::internal, "partition ", entry.rec.name,
                      ": its record is gone");
  return std::move(**rec);
}

/// Spawns `entry`'s actor from its stored record; false (the queue ends)
/// if that fails.
bool spawn_entry(queue_ptr self, partition_entry& entry) {
  auto& st = self->state;
  auto fail = [self](std::string what) {
    end_queue(self, caf::make_error(caf::sec::runtime_error, std::move(what)));
    return false;
  };
  auto rec = stored_record(self, entry);
  if (!rec)
    return fail(to_string(rec.err()));
  auto p = start_partition(self, *rec);
  if (!p)
    return fail(to_string(p.err()));
  if (entry.actor)
    st.names_by_actor.erase(entry.actor.address());
  entry.rec = std::move(*rec);
  entry.actor = *p;
  entry.dead = false;
  entry.stopping = false;
  entry.touched = false;
  st.names_by_actor.emplace(p->address(), entry.rec.name);
  contacted(self, entry);
  plan_passivation(self);
  return true;
}

} // namespace

partition_actor live(queue_ptr self, partition_entry& entry) {
  // A deleted queue's rows are gone: a request still in flight to one of
  // its partitions never spawned fails as one to a dead partition does.
  if (!entry.actor) {
    if (!self->state.deleted)
      spawn_entry(self, entry);
  } else {
    contacted(self, entry);
  }
  return entry.actor;
}

void spawn_for_retention(queue_ptr self) {
  auto& st = self->state;
  if (!core::retention_policy::from(st.cfg.record.options).active())
    return;
  for (auto& name : st.ring) {
    auto& entry = st.partitions.at(name);
    if (!entry.actor && entry.rec.next_offset > entry.rec.watermark)
      live(self, entry);
  }
}

partition_entry* find_partition(queue_state& st, const partition_ref& ref) {
  const std::string* name = &ref.name;
  if (!ref.uuid.empty()) {
    auto by = st.names_by_uuid.find(ref.uuid);
    if (by == st.names_by_uuid.end())
      return nullptr;
    name = &by->second;
  }
  auto it = st.partitions.find(*name);
  return it == st.partitions.end() ? nullptr : &it->second;
}

/// Ends the queue: its parked pops are answered empty first (CAF 0.17
/// answers no promise of an actor that ends).
void end_queue(queue_ptr self, caf::error why) {
  self->state.parked.drop([](const queue_pop_request&) { return true; });
  self->quit(std::move(why));
}

namespace {

/// Spawns partition `name` again from its stored record, in the place of
/// the dead actor `dead` (unless it was deleted or replaced meanwhile).
void respawn_partition(queue_ptr self, const std::string& name,
                       const caf::actor_addr& dead) {
  auto& st = self->state;
  auto it = st.partitions.find(name);
  if (it == st.partitions.end() || it->second.actor.address() != dead)
    return; // deleted or replaced meanwhile
  spawn_entry(self, it->second);
}

} // namespace

/// The writer settled this queue's mark of a transaction staged on one of
/// its partitions: the batch is durable (or not written), so a respawn
/// waiting for it may read the rows now; a durable one may have released
/// a lease the group's parked pops wait for.
void on_stage_settled(queue_ptr self, const core::part_key& key,
                      core::part_outcome outcome) {
  auto it = self->state.names_by_id.find(key.partition);
  if (it == self->state.names_by_id.end())
    return;
  auto partition = it->second; // `stage_closed` may respawn the entry
  stage_closed(self, partition);
  if (outcome == core::part_outcome::durable)
    wake_for(self, {partition}, key.group);
}

/// A stage on partition `name` settled: a respawn waiting for it may go.
void stage_closed(queue_ptr self, const std::string& name) {
  if (auto dead = self->state.stages.closed(name))
    respawn_partition(self, name, *dead);
}

/// A partition died (a bug): spawned again from its stored record in its
/// place (same ring position, same candidates), after a write barrier and
/// after the stages open on it settled; its cursors come back from their
/// stored rows at their next contact. Requests meanwhile meet the dead
/// actor and fail.
void restart_partition(queue_ptr self, const std::string& name,
                       const caf::error& why) {
  auto& st = self->state;
  auto& entry = st.partitions.at(name);
  entry.dead = true;
  note_death(st.cfg.node.metrics, "partition",
             st.cfg.record.name + "/" + entry.rec.name, why,
             "respawned from its stored record");
  if (!st.restarts.spend(self->clock().now())) {
    end_queue(self, why); // not transient: the broker takes over
    return;
  }
  // The new one reads the record once every write the dead one sent is
  // settled (a barrier is never refused; an error means the writer or the
  // store is gone).
  auto dead = entry.actor.address();
  write_then(self, st.cfg.node.writer, no_term, barrier(),
             [self, name, dead](std::optional<api_error> failure) {
               if (failure)
                 return end_queue(self, caf::make_error(caf::sec::runtime_error,
                                                        to_string(*failure)));
               if (!self->state.stages.defer(name, dead))
                 respawn_partition(self, name, dead);
             });
}

// -- partitions ---------------------------------------------------------------

/// Creates the partitions of `names` the queue does not have yet, in one
/// durable write (one creation at a time: a concurrent first push to the
/// same name waits and then finds it), then calls `k` (with the write's
/// error, if any).
void ensure_partitions(queue_ptr self, std::vector<std::string> names,
                       std::function<void(std::optional<api_error>)> k) {
  create_missing<std::remove_pointer_t<queue_ptr>, storage::partition_record>(
      self, &self->state.gate, self->state.cfg.node.writer,
      [self](const storage::partition_record&) {
        return self->state.cfg.node.term;
      },
      std::move(names),
      [self](const std::string& n) {
        return self->state.partitions.contains(n);
      },
      [self](const std::string& n) {
        auto& st = self->state;
        return new_partition_record(st.cfg.node, st.cfg.record.id, n);
      },
      [self](const storage::partition_record& rec) -> expected<void> {
        add_partition(self, rec);
        return {};
      },
      std::move(k));
}

// -- configure ----------------------------------------------------------------

namespace {

void configure_now(queue_ptr self, configure_request& req,
                   promise<configure_reply> rp) {
  auto& st = self->state;
  auto fail = [&rp](api_error err) mutable {
    rp.deliver(failed<configure_reply>(std::move(err)));
  };
  auto opts = core::apply_options(st.cfg.record.options, req.options,
                                  st.cfg.node.encryption_keys != nullptr);
  if (!opts)
    return fail(opts.err());
  auto rec = st.cfg.record;
  rec.options = std::move(*opts);
  if (req.name_space)
    rec.name_space = *req.name_space;
  if (req.task)
    rec.task = *req.task;
  storage::write_batch batch;
  batch.mutations.emplace_back(storage::mut::update_queue{rec});
  std::optional<storage::partition_record> fresh;
  if (!st.partitions.contains(default_partition)) {
    fresh = new_partition_record(st.cfg.node, rec.id, default_partition);
    batch.mutations.emplace_back(storage::mut::create_partition{*fresh});
  }
  st.gate.enter();
  auto done = [self, rp, rec, fresh](std::optional<api_error> failure) mutable {
    auto& st = self->state;
    configure_reply reply;
    if (!failure) {
      auto old_retention = st.cfg.record.options.dlq_retention_s;
      st.cfg.record = rec;
      plan_sweep(self);
      arm(self);
      // A new dlqRetentionSeconds: the DLQ sweep re-plans at once.
      if (rec.options.dlq_retention_s != old_retention)
        arm_sweep(self, st.cfg.node.wall());
      if (fresh)
        add_partition(self, *fresh);
      // A rule turned on spawns the partitions holding frames first, so
      // they run it at once as the live ones do on `options_atom`; the
      // others take the options at their spawn.
      spawn_for_retention(self);
      for (auto& [_, p] : st.partitions)
        if (p.actor)
          self->send(p.actor, options_atom::value, rec.options);
    }
    if (failure) {
      reply.failure = std::move(failure);
    } else {
      reply.queue = rec;
      reply.default_partition_uuid
          = st.partitions.at(default_partition).rec.uuid;
    }
    rp.deliver(std::move(reply));
    st.gate.leave();
  };
  write_then(self, st.cfg.node.writer, st.cfg.node.term, std::move(batch),
             std::move(done));
}

} // namespace

caf::result<configure_reply> on_configure(queue_ptr self,
                                          configure_request& req) {
  auto rp = promise_for<configure_reply>(self);
  self->state.gate.wait([self, req = std::move(req), rp]() mutable {
    configure_now(self, req, rp);
  });
  return rp.later();
}

} // namespace spool::actors::queue_detail
