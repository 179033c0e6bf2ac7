// Slots in cluster mode (docs/cluster.md, "Serving"): the broker runs the
// queues of the slots this node serves as leader, and only those. The
// replica host says when a slot starts (its epoch start is committed: every
// entry this node holds of it is) and when it stops (deposed); between the
// two, requests of the slot meet its queues, and otherwise the directory's
// refusal (`not_leader` naming the leader, or `unavailable`).
//
// A start loads the slot's queues from the store after a write barrier,
// with the slot's id counters as stored (a follower applied another
// leader's creations). A stop ends the slot's queues at once (their parked
// pops are answered empty, as at a restart: semantics.md §12); a write one
// of them sent meanwhile is refused by the host, which no longer admits the
// slot. One node (no directory) serves every slot from the start.

#include "actors/broker/broker_state.hpp"

namespace spool::actors::broker_detail {

namespace {

api_error starting(slot_t s) {
  return make_error(errc::unavailable, "Server busy: slot ", s,
                    " is starting on this node (its queues are loading); "
                    "retry");
}

void fail(broker_ptr self, slot_t s, const api_error& err) {
  // As a queue that cannot be restarted: storage cannot be read, the node
  // ends (spoold exits non-zero and is restarted).
  self->quit(caf::make_error(caf::sec::runtime_error,
                             "cannot load slot " + std::to_string(s) + ": "
                                 + to_string(err)));
}

void load_slot(broker_ptr self, slot_t s) {
  auto& st = self->state;
  auto& store = st.cfg.node.store;
  auto cat = store.load_catalog(s);
  if (!cat)
    return fail(self, s, cat.err());
  for (auto& q : cat->queues) {
    std::vector<storage::partition_record> parts;
    for (auto& p : cat->partitions)
      if (p.queue == q.id)
        parts.push_back(p);
    if (auto ok = add_queue(self, q, std::move(parts)); !ok)
      return fail(self, s, ok.err());
  }
  for (auto q : cat->doomed) // deletions the last leader did not finish
    self->send(self, reap_atom::value, q.value);
  st.slot_runs[s] = slot_run::running;
  spdlog::info("slot {}: serving here, {} queue(s) loaded", s,
               cat->queues.size());
}

void stop_slot(broker_ptr self, slot_t s) {
  auto& st = self->state;
  std::vector<std::string> names;
  for (auto& [name, rec] : st.records)
    if (slot_of_id(rec.id.value) == s)
      names.push_back(name);
  for (auto& name : names) {
    if (auto q = st.queues.find(name); q != st.queues.end()) {
      // Its end is expected, not a death to restart (a dead one waiting
      // for its respawn has ended already: its respawn finds it gone).
      if (!st.restarting.contains(q->second.address()))
        st.retiring.push_back(q->second.address());
      self->send_exit(q->second, caf::exit_reason::user_shutdown);
      st.queues.erase(q);
    }
    forget_queue(self, name);
    st.records.erase(name);
  }
  spdlog::info("slot {}: no longer served here, {} queue(s) stopped", s,
               names.size());
}

} // namespace

std::optional<api_error> slot_refusal(broker_ptr self, slot_t s) {
  auto& st = self->state;
  if (!st.cfg.slots)
    return std::nullopt;
  if (s < st.slot_runs.size()) {
    if (st.slot_runs[s] == slot_run::running)
      return std::nullopt;
    if (st.slot_runs[s] == slot_run::loading)
      return starting(s);
  }
  auto why = st.cfg.slots->refusal(s);
  // The directory says it serves: the start is on its way here.
  return why ? why : starting(s);
}

std::optional<api_error> name_refusal(broker_ptr self,
                                      const std::string& name) {
  if (!self->state.cfg.slots)
    return std::nullopt;
  return slot_refusal(self, self->state.cfg.node.store.slot_of(name));
}

std::optional<api_error> id_refusal(broker_ptr self, const std::string& id) {
  if (!self->state.cfg.slots)
    return std::nullopt;
  auto s = slot_of_uuid(id);
  if (!s)
    return std::nullopt; // not an id of ours: the caller's not-found
  return slot_refusal(self, *s);
}

std::optional<api_error> one_slot(broker_ptr self,
                                  const std::vector<std::string>& names) {
  auto& st = self->state;
  if (!st.cfg.slots || names.empty())
    return std::nullopt;
  auto first = st.cfg.node.store.slot_of(names.front());
  for (auto& n : names)
    if (auto s = st.cfg.node.store.slot_of(n); s != first)
      return make_error(errc::cross_slot, "The request spans slots ", first,
                        " (queue ", names.front(), ") and ", s, " (queue ", n,
                        "): a cluster commits one slot at a time, so nothing "
                        "of it is stored; put its queues in one slot with a "
                        "{tag} in their names, e.g. {orders}.in and "
                        "{orders}.out");
  return slot_refusal(self, first);
}

std::vector<slot_t> served_slots(broker_ptr self) {
  auto& st = self->state;
  std::vector<slot_t> out;
  if (!st.cfg.slots) {
    for (std::uint32_t s = 0; s < st.cfg.node.store.slot_count(); ++s)
      out.push_back(static_cast<slot_t>(s));
    return out;
  }
  for (std::size_t s = 0; s < st.slot_runs.size(); ++s)
    if (st.slot_runs[s] == slot_run::running)
      out.push_back(static_cast<slot_t>(s));
  return out;
}

std::optional<api_error> scope_dlq(broker_ptr self, core::dlq_filter& f) {
  if (!self->state.cfg.slots)
    return std::nullopt;
  if (f.queue)
    return name_refusal(self, *f.queue);
  f.slots = served_slots(self);
  return std::nullopt;
}

std::uint64_t slot_term(broker_ptr self, slot_t s) {
  auto& terms = self->state.slot_terms;
  return s < terms.size() ? terms[s] : no_term;
}

void on_slot(broker_ptr self, slot_t s, std::uint64_t epoch) {
  auto& st = self->state;
  if (!st.cfg.slots || s >= st.slot_runs.size())
    return;
  auto& run = st.slot_runs[s];
  if (epoch == no_term) {
    if (run == slot_run::stopped)
      return;
    ++st.slot_turns[s]; // a load in flight is void
    // Loading too: a creation answered meanwhile added its queue.
    stop_slot(self, s);
    run = slot_run::stopped;
    return;
  }
  if (run != slot_run::stopped) {
    if (st.slot_terms[s] == epoch)
      return; // a repeat
    // A new epoch with no stop between: the old term's queues end first.
    on_slot(self, s, no_term);
  }
  run = slot_run::loading;
  st.slot_terms[s] = epoch;
  auto turn = ++st.slot_turns[s];
  // The counters first: an id minted from now on (a creation that waited
  // for the broker's gate across the stop) is above every stored one.
  if (auto ok = st.cfg.node.store.reload_slot(s); !ok)
    return fail(self, s, ok.err());
  // The barrier: every write sent before it (by this slot's queues of an
  // earlier term) is committed or refused before the store is read.
  write_then(self, st.cfg.node.writer, no_term, barrier(),
             [self, s, turn](std::optional<api_error> failure) {
               auto& st = self->state;
               if (st.slot_turns[s] != turn
                   || st.slot_runs[s] != slot_run::loading)
                 return; // stopped meanwhile
               if (failure)
                 return fail(self, s, *failure);
               load_slot(self, s);
             });
}

} // namespace spool::actors::broker_detail
