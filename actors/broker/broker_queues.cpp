// The broker's queue directory: queues added (at recovery and on first
// push, created in one durable write), restarted from their stored records
// after a death (once the transaction stages open on them settled).

#include "actors/broker/broker_state.hpp"

namespace spool::actors::broker_detail {

expected<void> add_queue(broker_ptr self, const storage::queue_record& rec,
                         std::vector<storage::partition_record> partitions) {
  auto& st = self->state;
  if (st.cfg.slots) { // a cluster node runs the queues of its served slots
    auto s = slot_of_id(rec.id.value);
    if (s >= st.slot_runs.size() || st.slot_runs[s] == slot_run::stopped)
      return slot_refusal(self, s).value_or(make_error(
          errc::unavailable, "Server busy: slot ", s, " is not served here"));
    if (st.queues.contains(rec.name))
      return {}; // created while its slot's queues loaded
  }
  queue_config qc;
  qc.node = st.cfg.node;
  qc.node.term = slot_term(self, slot_of_id(rec.id.value));
  qc.record = rec;
  qc.partitions = std::move(partitions);
  qc.max_parked = st.cfg.pop.max_parked;
  qc.parked_total = st.parked_total;
  qc.watcher = self->address();
  auto q = spawn_queue(self->system(), std::move(qc));
  if (!q)
    return std::move(q).err();
  self->link_to(*q);
  st.queues.emplace(rec.name, *q);
  st.records[rec.name] = rec;
  st.name_of_id[rec.id.value] = rec.name;
  return {};
}

/// A queue died (a bug): spawned again from its stored record and
/// partitions in its place, after a write barrier; other queues never
/// notice. A second exit of the same dead queue (a link to it again) is
/// ignored. If storage cannot be read, the broker ends (spoold then exits
/// non-zero).
void restart_queue(broker_ptr self, const std::string& name,
                   const caf::error& why) {
  auto& st = self->state;
  auto dead = st.queues.at(name).address();
  if (!st.restarting.insert(dead).second)
    return; // its death was seen already (a link to the dead handle again)
  note_death(st.cfg.node.metrics, "queue", name, why,
             "respawned from its stored record");
  if (!st.restarts.spend(self->clock().now())) {
    self->quit(why); // not transient: spoold exits and is restarted
    return;
  }
  auto id = st.records.at(name).id;
  // Until the respawn, requests meet the dead queue's handle and fail (the
  // name stays taken: no push creates a second queue of that name); the
  // respawn reads storage once every write the dead queue sent is settled.
  auto fail = [self](const api_error& err) {
    self->quit(caf::make_error(caf::sec::runtime_error,
                               "cannot restart a queue: " + to_string(err)));
  };
  auto respawn = [self, name, id, dead, fail] {
    auto& st = self->state;
    // Dead until here (also while waiting for open stages): a push it
    // sealed must not commit, and a second exit of it is ignored.
    st.restarting.erase(dead);
    if (auto it = st.queues.find(name);
        it == st.queues.end() || it->second.address() != dead)
      return; // deleted or replaced meanwhile
    auto t = st.cfg.node.store.read();
    if (!t)
      return fail(t.err());
    auto rec = storage::tables::get_queue(*t, id);
    if (!rec)
      return fail(rec.err());
    st.queues.erase(name);
    forget_queue(self, name);
    if (!*rec) { // deleted meanwhile (it died before it answered): its
      st.records.erase(name); // rows go in bounded steps, as a deletion's
      t->abort();
      return reap(self, id);
    }
    auto parts = storage::tables::partitions_of(*t, id);
    if (!parts)
      return fail(parts.err());
    t->abort();
    if (auto ok = add_queue(self, **rec, std::move(*parts)); !ok)
      return fail(ok.err());
  };
  write_then(self, st.cfg.node.writer, no_term, barrier(),
             [self, name, fail, respawn](std::optional<api_error> failure) {
               auto& st = self->state;
               // A barrier is never refused: an error means the writer or
               // the store is gone.
               if (failure)
                 return fail(*failure);
               if (!st.stages.defer(name, respawn))
                 respawn();
             });
}

/// A new queue's record: fresh id, default options, namespace and task
/// derived from the name.
storage::queue_record new_queue_record(broker_ptr self,
                                       const std::string& name) {
  auto& node = self->state.cfg.node;
  storage::queue_record rec;
  rec.id = node.store.next_queue_id(name);
  rec.name = name;
  std::tie(rec.name_space, rec.task) = core::namespace_and_task(name);
  rec.created_at = node.wall();
  return rec;
}

/// Creates the queues of `names` the broker does not have yet, in one
/// durable write (one creation at a time: a concurrent first push to the
/// same name waits and then finds it), then calls `k` (with the write's
/// error, if any).
void ensure_queues(broker_ptr self, std::vector<std::string> names,
                   std::function<void(std::optional<api_error>)> k) {
  create_missing<std::remove_pointer_t<broker_ptr>, storage::queue_record>(
      self, &self->state.gate, self->state.cfg.node.writer,
      [self](const storage::queue_record& rec) {
        // Read as its id is minted: the slot runs (`refuse` passed).
        return slot_term(self, slot_of_id(rec.id.value));
      },
      std::move(names),
      [self](const std::string& n) { return self->state.queues.contains(n); },
      [self](const std::string& n) { return new_queue_record(self, n); },
      [self](const storage::queue_record& rec) {
        return add_queue(self, rec, {});
      },
      std::move(k),
      // A cluster node mints a slot's ids only while it runs the slot (not
      // while its queues load: the name may be among them).
      [self](const std::string& n) { return name_refusal(self, n); });
}

std::optional<queue_actor> find_queue(broker_ptr self,
                                      const std::string& name) {
  auto& qs = self->state.queues;
  if (auto it = qs.find(name); it != qs.end())
    return it->second;
  return std::nullopt;
}

std::optional<storage::queue_id> queue_id_of(broker_ptr self,
                                             const std::string& name) {
  auto& rs = self->state.records;
  if (auto it = rs.find(name); it != rs.end())
    return it->second.id;
  return std::nullopt;
}

void stage_closed(broker_ptr self, const std::string& name) {
  // After the settle was sent: the batch is durable or void.
  if (auto respawn = self->state.stages.closed(name))
    (*respawn)();
}

} // namespace spool::actors::broker_detail
