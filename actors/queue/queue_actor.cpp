// Message flow.
//
// push: items are grouped by partition (request order kept per partition).
//   Missing partitions are created first (one durable batch), then every
//   partition seals its frames (seal_atom); the coordinator concatenates the
//   sealed mutations into ONE write batch (all or nothing across
//   partitions), sends it to the writer, settles each seal with the outcome,
//   answers, and wakes parked pops.
// pop: a named partition, or the wildcard: partitions in rotating order from
//   the group's position after its last claim; each asked in turn with what
//   is left of `batch`, until `partitions` claimed. Nothing delivered and
//   `wait`: the pop parks (ordered by arrival) until a push wakes it or the
//   queue's one timer reaches its deadline.
// ack: routed to the partition its uuid names; a released lease wakes
//   parked pops.
// requeue: DLQ entries routed by partition to the group's cursor; answered
//   when every cursor's write is durable; wakes parked pops.
// seek: the group's cursor on each partition (or the one named) stages its
//   new record, all at once, or one partition after the other in uuid order
//   if a cursor is held (the order transactions stage cursors in, so the two
//   never wait on each other); the records go out as ONE write (no
//   subscription record: the group's first pop registers it); then every
//   cursor is settled with the outcome, parked pops are woken, and the seek
//   is answered. A failed stage settles the staged ones as aborted: nothing
//   changes.
// DLQ retention: cursors report each dead letter's failure time (`dead`);
//   one sweep timer at the earliest expiry (never one per entry) scans the
//   queue's DLQ and deletes expired entries in bounded steps.

#include "actors/queue/queue_state.hpp"

namespace spool::actors {

namespace queue_detail {

/// The gate of `group` (made on first use).
async_mutex& group_gate(queue_ptr self, const std::string& group) {
  auto& gate = self->state.group_gates[group];
  if (!gate)
    gate = std::make_shared<async_mutex>();
  return *gate;
}

/// Ends what `group`'s gate had in flight; drops the gate once idle.
void leave_group_gate(queue_ptr self, const std::string& group) {
  auto& gates = self->state.group_gates;
  auto it = gates.find(group);
  if (it == gates.end())
    return;
  auto gate = it->second; // alive while its waiters run
  gate->leave();
  if (gate->idle())
    if (auto again = gates.find(group);
        again != gates.end() && again->second == gate)
      gates.erase(again);
}

// -- long poll ----------------------------------------------------------------

void arm(queue_ptr self) {
  auto& st = self->state;
  auto next = st.parked.next_due();
  if (st.next_sweep && (!next || *st.next_sweep < *next))
    next = st.next_sweep;
  if (!next)
    return;
  if (auto id = st.timer.arm(*next))
    self->delayed_send(
        self,
        std::max(*next - self->clock().now(), mono_clock::duration::zero()),
        timeout_atom::value, *id);
}

namespace {

void on_timeout(queue_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (!st.timer.fire(id))
    return;
  auto now = self->clock().now();
  // Deadlines answer empty; a lease expiry, retry delay or visibility
  // deadline passed: the pops it concerns try again (no polling: only at
  // the time their partitions named).
  st.parked.expire(now);
  if (st.next_sweep && *st.next_sweep <= now) {
    st.next_sweep.reset();
    sweep_idle(self);
    plan_sweep(self);
  }
  arm(self);
}

queue_actor::behavior_type queue(queue_ptr self, queue_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  for (auto& rec : st.cfg.partitions)
    add_partition(self, rec);
  supervise(
      self,
      [self](const caf::actor_addr& src, const caf::error& why) {
        auto& st = self->state;
        auto it = st.names_by_actor.find(src);
        if (it == st.names_by_actor.end())
          return false;
        if (why) // a death (there is no other way to end but the queue's)
          restart_partition(self, std::string{it->second}, why);
        return true;
      },
      // Stopped (SIGTERM): parked pops are answered empty.
      [self] {
        self->state.parked.drop([](const queue_pop_request&) { return true; });
      });
  st.parked.setup(
      st.cfg.parked_total, st.cfg.max_parked,
      {.attempt =
           [self](const queue_pop_request& req,
                  std::function<void(queue_pop_reply)> k) {
             run_pop(self, req, std::move(k));
           },
       .nothing = &decltype(st.parked)::nothing_claimed<queue_pop_reply>,
       .key = [](const queue_pop_request& r) { return r.lease_id; },
       .topic = [](const queue_pop_request& r) { return r.partition; },
       .busy =
           [](queue_pop_reply r) {
             r.failure = make_error(errc::unavailable,
                                    "Server busy: too many parked pops");
             return r;
           },
       .now = [self] { return self->clock().now(); },
       .rearm = [self] { arm(self); },
       // (names are 1..255 bytes without control characters: the key
       // cannot be ambiguous)
       .chain =
           [](const queue_pop_request& r) {
             return r.group + '\x1f' + r.partition.value_or("");
           }});
  if (auto t = st.cfg.node.store.read()) {
    auto subs = storage::tables::subscriptions_of(*t, st.cfg.record.id);
    if (!subs)
      self->quit(
          caf::make_error(caf::sec::runtime_error, to_string(subs.err())));
    else
      for (auto& [group, rec] : *subs) {
        st.registrations.saw(rec.registered_at);
        st.subs.emplace(group, rec);
      }
  } else {
    self->quit(caf::make_error(caf::sec::runtime_error, to_string(t.err())));
  }
  // Entries stored before a restart: the first sweep finds their expiry.
  arm_sweep(self, st.cfg.node.wall());
  plan_sweep(self);
  arm(self);
  spawn_for_retention(self);
  return {
      [self](push_atom, std::vector<push_item>& items) {
        return on_push(self, items);
      },
      [self](seal_atom, std::vector<push_item>& items) {
        return on_prepare(self, items);
      },
      [self](settled_atom, const core::part_key& key,
             core::part_outcome outcome) {
        if (key.first == core::part_key::sub_part)
          settle_sub_update(self, key.group,
                            outcome == core::part_outcome::durable);
        else if (key.group.empty())
          on_prepared_settled(self, key, outcome);
        else
          on_stage_settled(self, key, outcome);
      },
      [self](pop_atom, queue_pop_request& req) { return on_pop(self, req); },
      [self](ack_atom, std::vector<located_ack>& acks) {
        return on_located_ack(self, acks);
      },
      [self](timeout_atom, std::uint64_t id) { on_timeout(self, id); },
      [self](passivate_atom, std::uint64_t id) {
        on_passivation_tick(self, id);
      },
      [self](requeue_atom, const std::string& group,
             std::vector<storage::dlq_entry>& entries) {
        return on_requeue(self, group, entries);
      },
      [self](delete_atom, const dlq_delete_request& req) {
        return on_dlq_delete(self, req);
      },
      [self](dead_atom, storage::micros failed_at) {
        auto& st = self->state;
        auto retention = st.cfg.record.options.dlq_retention_s;
        if (retention > 0)
          arm_sweep(self, failed_at + retention * 1'000'000);
      },
      [self](dlq_sweep_atom, std::uint64_t id) { on_sweep(self, id); },
      [self](configure_atom, configure_request& req) {
        return on_configure(self, req);
      },
      [self](browse_atom, browse_request& req) -> caf::result<browse_reply> {
        auto* part
            = find_partition(self->state, {req.partition, req.partition_uuid});
        if (part == nullptr)
          return failed<browse_reply>(
              make_error(errc::not_found, "Partition not found"));
        // A delegation to no actor is dropped unanswered (CAF 0.17).
        auto p = live(self, *part);
        if (!p)
          return failed<browse_reply>(
              make_error(errc::not_found, "Partition not found"));
        return self->delegate(p, browse_atom::value, std::move(req));
      },
      [self](groups_atom, const groups_request& req) {
        return on_groups(self, req);
      },
      [self](delete_atom, const delete_group_request& req) {
        return on_delete_group(self, req);
      },
      [self](delete_atom) { return on_delete_queue(self); },
      [self](grace_atom, std::uint64_t) {
        end_queue(self, caf::make_error(caf::exit_reason::user_shutdown));
      },
      [self](purge_atom, const purge_request& req) {
        return on_purge(self, req);
      },
      [self](sub_update_atom, const std::string& group, storage::micros ts) {
        return on_sub_update(self, group, ts);
      },
      [self](extend_atom, const std::string& id, std::chrono::milliseconds by) {
        return on_extend(self, id, by);
      },
      [self](release_atom, const std::string& id) {
        return on_release(self, id);
      },
      [self](cancel_atom, const std::string& token) {
        auto id = lease_id_of(self->state.cfg.record.id.value, token);
        if (auto it = self->state.registering.find(id);
            it != self->state.registering.end())
          it->second = true; // answered once its registration is done
        self->state.parked.cancel(id);
      },
      [self](oldest_atom, const std::string& group) {
        auto rp = promise_for<storage::micros>(self);
        fan_out<storage::micros>(
            self, all_partitions(self),
            [rp](std::vector<fanned<storage::micros>> slots) mutable {
              storage::micros oldest = 0;
              for (auto& s : slots)
                if (s.reply && *s.reply > 0
                    && (oldest == 0 || *s.reply < oldest))
                  oldest = *s.reply;
              rp.deliver(oldest);
            },
            oldest_atom::value, group);
        return rp.later();
      },
      [self](stage_atom, const partition_ref& ref, const std::string& group,
             std::vector<ack_request>& reqs) -> caf::result<stage_reply> {
        auto* part = find_partition(self->state, ref);
        if (part == nullptr) {
          stage_reply refused;
          refused.refused
              = core::stage_refusal{0, to_string(ack_error::not_found)};
          return refused;
        }
        // Through here, not delegated: the stage is recorded until its
        // settle (`open_stages`).
        auto rp = promise_for<stage_reply>(self);
        self->request(live(self, *part), caf::infinite, stage_atom::value,
                      group, std::move(reqs))
            .then(
                [self, rp, partition = part->rec.name](stage_reply& r) mutable {
                  if (!r.parts.empty()) { // open until the writer settles
                    self->state.stages.opened(partition); // this queue's mark
                    part_ref mark{self->address(), r.parts.front().key};
                    self->send(self->state.cfg.node.writer, hold_atom::value,
                               mark);
                    r.parts.push_back(std::move(mark));
                  }
                  rp.deliver(std::move(r));
                },
                [rp](caf::error& err) mutable {
                  stage_reply failed;
                  failed.failure = unreachable(err, "partition");
                  rp.deliver(std::move(failed));
                });
        return rp.later();
      },
      [self](seek_atom, seek_request& req) { return on_seek(self, req); },
  };
}

} // namespace

} // namespace queue_detail

storage::partition_record new_partition_record(const node_context& node,
                                               storage::queue_id queue,
                                               std::string name) {
  storage::partition_record rec;
  rec.queue = queue;
  rec.id = node.store.next_partition_id(queue);
  rec.name = std::move(name);
  rec.uuid = node.store.make_partition_uuid(queue, rec.id);
  rec.created_at = node.wall();
  return rec;
}

expected<void> queue_config::validate() const {
  return node.validate("queue");
}

expected<queue_actor> spawn_queue(caf::actor_system& sys, queue_config cfg) {
  SPOOL_TRY(cfg.validate());
  return sys.spawn(queue_detail::queue, std::move(cfg));
}

} // namespace spool::actors
