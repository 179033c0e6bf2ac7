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
// ack: routed to the named partition; a released lease wakes parked pops.
// requeue: DLQ entries routed by partition to the group's cursor; answered
//   when every cursor's write is durable; wakes parked pops.
// seek: the group's cursor on each partition (or the one named) stages its
//   new record, one partition after the other in name order (the order
//   transactions stage cursors in, so the two never wait on each other);
//   the records go out as ONE write (no subscription record: the group's
//   first pop registers it); then every cursor is settled with the outcome,
//   parked pops are woken, and the seek is answered. A failed stage settles the
//   staged ones as aborted: nothing changes.
// DLQ retention: cursors report each dead letter's failure time (`dead`);
//   one sweep timer at the earliest expiry (never one per entry) scans the
//   queue's DLQ and deletes expired entries in bounded steps.

#include "actors/queue/queue_actor.hpp"
#include "actors/promise.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "actors/async_mutex.hpp"
#include "actors/create_missing.hpp"
#include "actors/fan_out.hpp"
#include "actors/parking_lot.hpp"
#include "actors/partition/partition_actor.hpp"
#include "actors/supervise.hpp"
#include "actors/write.hpp"
#include "core/dlq/dlq_core.hpp"
#include "core/limits/names.hpp"
#include "core/push/push_items.hpp"
#include "core/queue/candidates.hpp"
#include "core/queue/claim.hpp"
#include "core/queue/group_deletion.hpp"
#include "core/queue/max_size.hpp"
#include "storage/segment.hpp"
#include "storage/tables.hpp"

namespace spool::actors {

namespace {

struct partition_entry {
  storage::partition_record rec;
  partition_actor actor;
  std::size_t index = 0; ///< in `ring`
  /// The last offset of the pushes this queue settled (a lower bound of
  /// what readers may see soon; compared with empty-scan watermarks).
  storage::offset last{-1};
};

struct queue_state {
  static inline const char* name = "spool.queue";
  queue_config cfg;
  std::map<std::string, partition_entry> partitions;
  /// Partition names in creation order (the rotation ring).
  std::vector<std::string> ring;
  /// Per group: where its next wildcard pop starts in `ring`.
  core::rotation rotation;
  /// Parked long-poll pops (served in arrival order).
  parking_lot<queue_pop_request, queue_pop_reply> parked;
  /// Deleted: it lives on only to answer requests in flight; a pop that
  /// still reaches it is answered at once, empty (the queue has no
  /// partitions any more), and registers nothing.
  bool deleted = false;
  std::optional<mono_time> armed;
  std::uint64_t timer_id = 0;
  /// The DLQ sweep's timer: when it is due (wall µs) and its id.
  std::optional<storage::micros> sweep_due;
  std::uint64_t sweep_id = 0;
  bool sweeping = false;    ///< a sweep's delete is being written
  bool sweep_again = false; ///< the timer fired while sweeping
  /// Partition creations and option changes, one at a time.
  async_mutex gate;
  /// maxSize: one push at a time from its size check to its seal.
  async_mutex size_gate;
  /// When the next groupIdleSeconds sweep runs (the option is > 0).
  std::optional<mono_time> next_sweep;
  /// The subscription records of the groups registered here, as stored.
  std::unordered_map<std::string, storage::subscription_record> subs;
  /// Per group, the partitions its wildcard pops ask (empty-scan
  /// watermarks).
  core::candidate_set candidates;
  /// Per group: its registration, deletions and seeks, one at a time (none
  /// interleaves with another of the same group).
  /// (Shared: a gate stays alive while its waiters run; an idle one is
  /// dropped, so group names come and go without leaving a gate behind.)
  std::unordered_map<std::string, std::shared_ptr<async_mutex>> group_gates;
  /// Pops waiting for their group's registration, by lease id: true once
  /// cancelled (answered empty instead of served when it is done).
  std::unordered_map<std::string, bool> registering;
  /// Partition deaths allowed before the queue gives up (supervise.hpp).
  restart_budget restarts;
  /// Stages (a transaction's acks, a seek) open on each partition: staged
  /// through this queue, not settled yet. A partition that dies with one
  /// open is respawned only once they settled: their batch may be written
  /// after its barrier, and its new cursors must read the rows it writes.
  std::map<std::string, std::size_t> open_stages;
  /// The partition of each open transaction stage, by stage id.
  std::unordered_map<std::uint64_t, std::string> txn_stages;
  /// The `registered_at` stamps of this queue's registrations.
  core::registration_clock registrations;
  /// Dead partitions whose respawn waits for their open stages.
  std::map<std::string, caf::actor_addr> respawn_waiting;
};

using queue_ptr = queue_actor::stateful_pointer<queue_state>;

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

expected<void> add_partition(queue_ptr self,
                             const storage::partition_record& rec) {
  auto& st = self->state;
  partition_config pc;
  pc.node = st.cfg.node;
  pc.record = rec;
  pc.options = st.cfg.record.options;
  pc.watcher = self->address();
  auto p = spawn_partition(self->system(), std::move(pc));
  if (!p)
    return std::move(p).err();
  self->link_to(*p);
  st.partitions.emplace(
      rec.name, partition_entry{rec, *p, st.ring.size(), rec.next_offset - 1});
  st.ring.push_back(rec.name);
  st.candidates.resize(st.ring.size());
  return {};
}

/// Ends the queue: its parked pops are answered empty first (CAF 0.17
/// answers no promise of an actor that ends).
void end_queue(queue_ptr self, caf::error why) {
  self->state.parked.drop([](const queue_pop_request&) { return true; });
  self->quit(std::move(why));
}

/// A partition died (a bug): spawned again from its stored record in its
/// place (same ring position, same candidates), after a write barrier; its
/// cursors come back from their stored rows at their next contact. Requests
/// it had in flight were answered with errors by CAF.
/// Spawns partition `name` again from its stored record, in the place of
/// the dead actor `dead` (unless it was deleted or replaced meanwhile).
void respawn_partition(queue_ptr self, const std::string& name,
                       const caf::actor_addr& dead) {
  auto& st = self->state;
  auto fail = [self](std::string what) {
    end_queue(self, caf::make_error(caf::sec::runtime_error, std::move(what)));
  };
  auto it = st.partitions.find(name);
  if (it == st.partitions.end() || it->second.actor.address() != dead)
    return; // deleted or replaced meanwhile
  auto& entry = it->second;
  auto t = st.cfg.node.store->db().read();
  if (!t)
    return fail(to_string(t.err()));
  auto rec = storage::tables::get_partition(*t, st.cfg.record.id, entry.rec.id);
  if (!rec || !*rec)
    return fail(rec ? "partition record gone" : to_string(rec.err()));
  t->abort();
  partition_config pc;
  pc.node = st.cfg.node;
  pc.record = **rec;
  pc.options = st.cfg.record.options;
  pc.watcher = self->address();
  auto p = spawn_partition(self->system(), std::move(pc));
  if (!p)
    return fail(to_string(p.err()));
  self->link_to(*p);
  entry.rec = **rec;
  entry.actor = *p;
}

/// A stage was staged on partition `name` (none for id 0).
void stage_opened(queue_ptr self, const std::string& name, std::uint64_t id) {
  if (id != 0)
    ++self->state.open_stages[name];
}

/// A stage on partition `name` settled: a respawn waiting for it may go.
void stage_closed(queue_ptr self, const std::string& name) {
  auto& st = self->state;
  auto it = st.open_stages.find(name);
  if (it == st.open_stages.end() || --it->second > 0)
    return;
  st.open_stages.erase(it);
  if (auto w = st.respawn_waiting.find(name); w != st.respawn_waiting.end()) {
    auto dead = w->second;
    st.respawn_waiting.erase(w);
    respawn_partition(self, name, dead);
  }
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
  write_then(self, st.cfg.node.writer, barrier(),
             [self, name, dead](std::optional<api_error> failure) {
               if (failure)
                 return end_queue(self, caf::make_error(caf::sec::runtime_error,
                                                        to_string(*failure)));
               if (self->state.open_stages.contains(name)) {
                 self->state.respawn_waiting[name] = dead;
                 return;
               }
               respawn_partition(self, name, dead);
             });
}

// -- long poll ----------------------------------------------------------------

void arm(queue_ptr self) {
  auto& st = self->state;
  auto next = st.parked.next_due();
  if (st.next_sweep && (!next || *st.next_sweep < *next))
    next = st.next_sweep;
  if (!next)
    return;
  auto due = *next;
  if (st.armed && *st.armed <= due)
    return;
  st.armed = due;
  auto delay
      = std::max(due - self->clock().now(), mono_clock::duration::zero());
  self->delayed_send(self, delay, timeout_atom::value, ++st.timer_id);
}

void wake_for(queue_ptr self, const std::vector<std::string>& partitions,
              const std::string& group);
void sweep_idle(queue_ptr self);
void plan_sweep(queue_ptr self);

void on_timeout(queue_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.timer_id)
    return;
  st.armed.reset();
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

// -- pop ----------------------------------------------------------------------

/// One pop in progress over its candidate partitions (`core::pop_claim`).
struct pop_run {
  pop_run(queue_pop_request r, std::vector<std::string> names) :
      req(std::move(r)),
      candidates(std::move(names)),
      claim(candidates.size(), req.batch, req.partitions, req.max_bytes,
            !req.partition) {
  }
  queue_pop_request req;
  std::vector<std::string> candidates;
  core::pop_claim claim;
  queue_pop_reply reply;
  std::function<void(queue_pop_reply)> done;
};

/// Answers the pop with what it claimed (the reason and retry time of an
/// empty answer from the claim).
void finish_pop(std::shared_ptr<pop_run>& run) {
  if (run->reply.claimed.empty())
    run->reply.reason = run->claim.reason();
  run->reply.retry_at = run->claim.retry_at();
  run->done(std::move(run->reply));
}

void step(queue_ptr self, std::shared_ptr<pop_run> run) {
  auto& st = self->state;
  auto& req = run->req;
  while (auto ask = run->claim.next()) {
    auto name = run->candidates[ask->candidate];
    auto it = st.partitions.find(name);
    if (it == st.partitions.end())
      continue;
    pop_request pr;
    pr.group = req.group;
    pr.batch = ask->batch;
    pr.max_bytes = ask->max_bytes;
    pr.lease_id = req.lease_id;
    pr.auto_ack = req.auto_ack;
    auto uuid = it->second.rec.uuid;
    auto asked_at = st.candidates.generation();
    self->request(it->second.actor, caf::infinite, pop_atom::value, pr)
        .then(
            [self, run, name, uuid, asked_at](pop_reply& r) mutable {
              auto& st = self->state;
              if (r.failure && r.restarting
                  && run->claim.restarting(self->clock().now()))
                return step(self, run);
              if (r.failure) {
                if (run->claim.failure_answers())
                  run->reply.failure = r.failure;
                run->reply.retry_at = run->claim.retry_at();
                run->done(std::move(run->reply));
                return;
              }
              if (st.cfg.node.metrics)
                st.cfg.node.metrics->partition_pops += 1;
              // (Partitions are never removed from a live queue; a reply
              // for one that were would still be answered.)
              auto entry = st.partitions.find(name);
              auto known = entry != st.partitions.end();
              if (r.empty_at && known)
                st.candidates.found_empty(run->req.group, entry->second.index,
                                          *r.empty_at, entry->second.last,
                                          asked_at);
              if (r.messages.empty()) {
                run->claim.empty(r.reason, r.retry_at);
              } else {
                std::size_t bytes = 0;
                for (auto& m : r.messages)
                  bytes += m.frame.data.payload.size();
                run->claim.delivered(r.messages.size(), bytes);
                if (!run->req.partition && known)
                  st.rotation.claimed(run->req.group, entry->second.index);
                run->reply.claimed.push_back({name, uuid, std::move(r)});
              }
              step(self, run);
            },
            [run](caf::error& err) {
              if (run->claim.failure_answers()) // as a failed share, above
                run->reply.failure = unreachable(err);
              run->reply.retry_at = run->claim.retry_at();
              run->done(std::move(run->reply));
            });
    return; // continue in the response handler
  }
  finish_pop(run);
}

/// Runs one pop over its candidates; `done` gets the reply.
void run_pop(queue_ptr self, const queue_pop_request& req,
             std::function<void(queue_pop_reply)> done) {
  auto& st = self->state;
  std::vector<std::string> names;
  if (req.partition) {
    names.push_back(*req.partition);
  } else {
    // Only the partitions that may have something for the group.
    for (auto i : st.candidates.order(req.group, st.rotation.start(req.group)))
      names.push_back(st.ring[i]);
  }
  auto run = std::make_shared<pop_run>(req, std::move(names));
  run->done = std::move(done);
  step(self, run);
}

/// New frames on `partitions`: wakes the parked pops that name one of them
/// or none (wildcard); a pop parked on another partition stays parked.
void wake_for(queue_ptr self, const std::vector<std::string>& partitions) {
  self->state.parked.wake(partitions,
                          [](const queue_pop_request&) { return true; });
}

/// Something changed for `group` on `partitions` only (a released lease, a
/// settled transaction): wakes that group's pops naming one of them or none.
void wake_for(queue_ptr self, const std::vector<std::string>& partitions,
              const std::string& group) {
  self->state.parked.wake(
      partitions, [&](const queue_pop_request& r) { return r.group == group; });
}

std::vector<partition_actor> all_partitions(queue_ptr self);

/// Registers `group` on this queue (semantics.md §5) unless it is: its
/// subscription record and the seeds of every partition it has no cursor
/// on, in one durable write; then calls `k` (with the write's error, if
/// any). Partitions created later seed from the stored record on the
/// group's first contact.
void register_group(queue_ptr self, const std::string& group,
                    const core::subscription_params& params,
                    std::function<void(std::optional<api_error>)> k) {
  group_gate(self, group)
      .wait([self, group, params, k = std::move(k)]() mutable {
        auto& st = self->state;
        if (st.subs.contains(group))
          return k(std::nullopt); // registered while this one waited
        group_gate(self, group).enter();
        // Registrations are told apart by `registered_at` (a subscription
        // update applies only to the one it read): never two equal here,
        // even within one microsecond or with the clock stepping back.
        auto at = st.registrations.next(st.cfg.node.wall());
        auto rec = core::registration(group, params,
                                      st.cfg.node.default_subscription, at);
        auto parts = all_partitions(self);
        fan_out<std::optional<storage::offset>>(
            self, parts,
            [self, group, rec,
             k](std::vector<fanned<std::optional<storage::offset>>>
                    seeds) mutable {
              auto& st = self->state;
              auto q = st.cfg.record.id;
              storage::write_batch batch;
              batch.mutations.emplace_back(
                  storage::mut::put_subscription{q, group, rec});
              for (std::size_t i = 0; i < seeds.size(); ++i)
                if (seeds[i].reply && *seeds[i].reply) {
                  storage::cursor_record c;
                  c.committed = **seeds[i].reply;
                  batch.mutations.emplace_back(storage::mut::put_cursor{
                      q, st.partitions.at(st.ring[i]).rec.id, group, c});
                }
              auto done = [self, group, rec,
                           k](std::optional<api_error> failure) mutable {
                if (!failure)
                  self->state.subs[group] = rec;
                leave_group_gate(self, group);
                k(std::move(failure));
              };
              write_then(self, st.cfg.node.writer, std::move(batch),
                         std::move(done));
            },
            seed_atom::value, group, rec);
      });
}

caf::typed_response_promise<queue_pop_reply> on_pop(queue_ptr self,
                                                    queue_pop_request& req) {
  auto rp = promise_for<queue_pop_reply>(self);
  if (self->state.deleted) {
    queue_pop_reply gone;
    gone.reason = empty_reason::no_partition;
    rp.deliver(std::move(gone));
    return rp.later();
  }
  auto deadline = self->clock().now() + req.timeout;
  auto submit = [self, rp, deadline](queue_pop_request req) mutable {
    bool may_park = req.wait && req.timeout.count() > 0;
    self->state.parked.submit(std::move(req), rp, deadline, may_park);
  };
  if (self->state.subs.contains(req.group)) {
    submit(std::move(req));
    return rp.later();
  }
  // The group's first pop here: registered before it claims or waits.
  auto group = req.group;
  auto params = req.subscription;
  self->state.registering[req.lease_id] = false;
  register_group(self, group, params,
                 [self, rp, submit, req = std::move(req)](
                     std::optional<api_error> failure) mutable {
                   auto& waiting = self->state.registering;
                   bool cancelled = false;
                   if (auto it = waiting.find(req.lease_id);
                       it != waiting.end()) {
                     cancelled = it->second;
                     waiting.erase(it);
                   }
                   if (!failure && !cancelled)
                     return submit(std::move(req));
                   queue_pop_reply reply; // the client left: nothing claimed
                   reply.failure = std::move(failure);
                   rp.deliver(std::move(reply));
                 });
  return rp.later();
}

// -- partitions ---------------------------------------------------------------

/// Creates the partitions of `names` the queue does not have yet, in one
/// durable write (one creation at a time: a concurrent first push to the
/// same name waits and then finds it), then calls `k` (with the write's
/// error, if any).
void ensure_partitions(queue_ptr self, std::vector<std::string> names,
                       std::function<void(std::optional<api_error>)> k) {
  create_missing<std::remove_pointer_t<queue_ptr>, storage::partition_record>(
      self, &self->state.gate, self->state.cfg.node.writer, std::move(names),
      [self](const std::string& n) {
        return self->state.partitions.contains(n);
      },
      [self](const std::string& n) {
        auto& st = self->state;
        return new_partition_record(st.cfg.node, st.cfg.record.id, n);
      },
      [self](const storage::partition_record& rec) {
        return add_partition(self, rec);
      },
      std::move(k));
}

// -- configure ----------------------------------------------------------------

/// (DLQ retention, below.)
void arm_sweep(queue_ptr self, storage::micros due);

void configure_now(queue_ptr self, configure_request& req,
                   promise<configure_reply> rp) {
  auto& st = self->state;
  auto fail = [&rp](api_error err) mutable {
    configure_reply reply;
    reply.failure = std::move(err);
    rp.deliver(std::move(reply));
  };
  auto opts = core::apply_options(st.cfg.record.options, req.options);
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
        if (auto ok = add_partition(self, *fresh); !ok)
          failure = ok.err();
      for (auto& [_, p] : st.partitions)
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
  write_then(self, st.cfg.node.writer, std::move(batch), std::move(done));
}

caf::typed_response_promise<configure_reply>
on_configure(queue_ptr self, configure_request& req) {
  auto rp = promise_for<configure_reply>(self);
  self->state.gate.wait([self, req = std::move(req), rp]() mutable {
    configure_now(self, req, rp);
  });
  return rp.later();
}

// -- administration -----------------------------------------------------------

/// Every partition actor, in ring (creation) order.
std::vector<partition_actor> all_partitions(queue_ptr self) {
  std::vector<partition_actor> out;
  for (auto& name : self->state.ring)
    out.push_back(self->state.partitions.at(name).actor);
  return out;
}

/// Answers the pops `which` selects empty: parked ones now, running ones
/// when their run ends (so none of them parks again).
template <class Pred>
void answer_parked(queue_ptr self, Pred which) {
  self->state.parked.cancel_if(which);
}

caf::typed_response_promise<groups_reply> on_groups(queue_ptr self,
                                                    const groups_request& req) {
  auto rp = promise_for<groups_reply>(self);
  fan_out<std::vector<cursor_info>>(
      self, all_partitions(self),
      [rp, queue = self->state.cfg.record.name](
          std::vector<fanned<std::vector<cursor_info>>> slots) mutable {
        groups_reply reply;
        for (auto& s : slots) {
          if (!s.reply) {
            if (!reply.failure) // the first failure wins, as in fold_replies
              reply.failure = unreachable(s.error, "partition");
            continue;
          }
          for (auto& c : *s.reply) {
            c.queue = queue;
            reply.cursors.push_back(std::move(c));
          }
        }
        rp.deliver(std::move(reply));
      },
      groups_atom::value, req.group);
  return rp.later();
}

void delete_group_now(queue_ptr self, const delete_group_request& req,
                      std::function<void(delete_group_reply)> done);

/// Deletes a group's cursors (and records) on this queue in one write, then
/// answers its parked pops empty; `done` gets the outcome. One deletion,
/// registration or seek of the group at a time, so two never stop and
/// resume the same cursors.
void delete_group(queue_ptr self, const delete_group_request& req,
                  std::function<void(delete_group_reply)> done) {
  group_gate(self, req.group)
      .wait([self, req, done = std::move(done)]() mutable {
        group_gate(self, req.group).enter();
        delete_group_now(self, req,
                         [self, group = req.group,
                          done = std::move(done)](delete_group_reply r) {
                           leave_group_gate(self, group);
                           done(std::move(r));
                         });
      });
}

void delete_group_now(queue_ptr self, const delete_group_request& req,
                      std::function<void(delete_group_reply)> done) {
  auto parts = all_partitions(self);
  fan_out<delete_vote>(
      self, parts,
      [self, done, req, parts](std::vector<fanned<delete_vote>> votes) mutable {
        auto& st = self->state;
        auto q = st.cfg.record.id;
        // A partition that died with a stage open cannot vote, and that
        // stage may still write the group's row there: restarting.
        std::vector<std::optional<delete_vote>> answers;
        std::vector<bool> open;
        for (std::size_t i = 0; i < votes.size(); ++i) {
          answers.push_back(std::move(votes[i].reply));
          open.push_back(st.open_stages.contains(st.ring[i]));
        }
        auto verdict = core::fold_votes(answers, open);
        using outcome = core::deletion_verdict::outcome;
        if (verdict.result != outcome::go) { // the idle sweep's guard
          for (auto& p : parts)
            self->send(p, delete_atom::value, req.group, false);
          done(delete_group_reply{
              0, false,
              verdict.result == outcome::restarting
                  ? make_error(errc::unavailable, "Consumer group ", req.group,
                               " is restarting on queue ", st.cfg.record.name,
                               "; retry")
                  : make_error(errc::unavailable, "Consumer group ", req.group,
                               " is active on queue ", st.cfg.record.name)});
          return;
        }
        storage::write_batch batch;
        delete_group_reply reply;
        reply.deleted_partitions = verdict.rows.size();
        for (auto i : verdict.rows)
          batch.mutations.emplace_back(storage::mut::delete_cursor{
              q, st.partitions.at(st.ring[i]).rec.id, req.group});
        if (req.delete_metadata) {
          reply.metadata_deleted = true; // unless known to be absent
          if (auto t = st.cfg.node.store->db().read())
            if (auto sub = storage::tables::get_subscription(*t, q, req.group))
              reply.metadata_deleted = sub->has_value();
          if (reply.metadata_deleted)
            batch.mutations.emplace_back(
                storage::mut::delete_subscription{q, req.group});
        }
        // The group's DLQ entries stay, but requeues pending in its deleted
        // cursors are forgotten: unmark them, so retention applies again.
        // At most `max_requeued` per cursor are pending, so the write stays
        // bounded; the scan decodes summaries only, whole entries only for
        // those pending.
        if (!batch.mutations.empty())
          if (auto t = st.cfg.node.store->db().read()) {
            std::vector<std::uint64_t> pending;
            (void)storage::tables::scan_dlq_summaries(
                *t, q, std::string_view{req.group},
                [&](std::string_view, const storage::tables::dlq_summary& e) {
                  if (e.requeued)
                    pending.push_back(e.id);
                  return true;
                });
            for (auto id : pending)
              if (auto e = storage::tables::get_dlq(*t, q, req.group, id);
                  e && *e) {
                auto unmarked = std::move(**e);
                unmarked.requeued = false;
                batch.mutations.emplace_back(
                    storage::mut::update_dlq{q, req.group, unmarked});
              }
          }
        auto settle = [self, done, req, parts,
                       reply](std::optional<api_error> failure) mutable {
          for (auto& p : parts)
            self->send(p, delete_atom::value, req.group, !failure);
          if (failure) {
            done(delete_group_reply{0, false, std::move(failure)});
            return;
          }
          self->state.rotation.forget(req.group);
          self->state.candidates.forget(req.group);
          if (req.delete_metadata)
            self->state.subs.erase(req.group); // the next pop registers
          answer_parked(self, [&](const queue_pop_request& r) {
            return r.group == req.group;
          });
          done(reply);
        };
        if (batch.mutations.empty())
          return settle(std::nullopt);
        write_then(self, st.cfg.node.writer, std::move(batch),
                   std::move(settle));
      },
      delete_atom::value, req.group, req.active_after);
}

caf::typed_response_promise<delete_group_reply>
on_delete_group(queue_ptr self, const delete_group_request& req) {
  auto rp = promise_for<delete_group_reply>(self);
  delete_group(self, req, [rp](delete_group_reply r) mutable {
    rp.deliver(std::move(r));
  });
  return rp.later();
}

// -- groupIdleSeconds
// ----------------------------------------------------------

/// Schedules the next idle sweep (or none when the option is 0).
void plan_sweep(queue_ptr self) {
  auto& st = self->state;
  auto idle = st.cfg.record.options.group_idle_s;
  if (idle <= 0) {
    st.next_sweep.reset();
    return;
  }
  auto at = self->clock().now() + core::idle_sweep_interval(idle);
  if (!st.next_sweep || at < *st.next_sweep)
    st.next_sweep = at;
}

/// Deletes (records included) every group on this queue without activity
/// for `groupIdleSeconds`, without a live lease and without a parked pop.
void sweep_idle(queue_ptr self) {
  auto& st = self->state;
  auto idle_us = st.cfg.record.options.group_idle_s * 1'000'000;
  if (idle_us <= 0)
    return;
  fan_out<std::vector<cursor_info>>(
      self, all_partitions(self),
      [self, idle_us](std::vector<fanned<std::vector<cursor_info>>> slots) {
        auto& st = self->state;
        core::idle_sweep sweep;
        for (auto& s : slots) {
          if (!s.reply)
            return; // a partition did not answer: judge nobody this time
          for (auto& c : *s.reply)
            sweep.saw(c.group, c.last_activity, c.lease.has_value());
        }
        st.parked.for_each(
            [&](const queue_pop_request& req) { sweep.parked(req.group); });
        for (auto& [name, last] : sweep.idle(st.cfg.node.wall(), idle_us)) {
          // Judged on what the fan-out saw: a cursor used since refuses.
          delete_group(self, {name, st.cfg.record.name, true, last},
                       [self, name](delete_group_reply r) {
                         if (r.failure && r.failure->code == errc::unavailable)
                           spdlog::debug("queue {}: idle group {} active "
                                         "again, kept",
                                         self->state.cfg.record.name, name);
                         else if (r.failure)
                           spdlog::warn("queue {}: idle group {} not deleted: "
                                        "{}",
                                        self->state.cfg.record.name, name,
                                        to_string(*r.failure));
                         else
                           spdlog::info("queue {}: group {} idle for "
                                        "groupIdleSeconds, deleted",
                                        self->state.cfg.record.name, name);
                       });
        }
      },
      groups_atom::value, std::optional<std::string>{});
}

/// How long a deleted queue lives on to answer requests in flight.
constexpr auto deleted_queue_grace = std::chrono::seconds{30};

caf::typed_response_promise<delete_queue_reply>
on_delete_queue(queue_ptr self) {
  auto rp = promise_for<delete_queue_reply>(self);
  self->state.gate.wait([self, rp]() mutable {
    auto& st = self->state;
    st.gate.enter(); // nothing else is created or configured meanwhile
    storage::write_batch batch;
    batch.mutations.emplace_back(storage::mut::delete_queue{st.cfg.record.id});
    auto done = [self, rp](std::optional<api_error> failure) mutable {
      self->state.gate.leave();
      if (failure) {
        rp.deliver(delete_queue_reply{false, std::move(failure)});
        return;
      }
      self->state.deleted = true;
      answer_parked(self, [](const queue_pop_request&) { return true; });
      rp.deliver(delete_queue_reply{true, std::nullopt});
      // The broker sends nothing more here. Requests still in flight finish
      // (their writes now fail: the queue is gone) and are answered; after
      // a grace period the queue quits, and its linked partitions and
      // cursors with it.
      self->delayed_send(self, deleted_queue_grace, delete_atom::value,
                         std::uint64_t{0});
    };
    write_then(self, st.cfg.node.writer, std::move(batch), std::move(done));
  });
  return rp.later();
}

caf::typed_response_promise<purge_reply> on_purge(queue_ptr self,
                                                  const purge_request& req) {
  auto rp = promise_for<purge_reply>(self);
  std::vector<partition_actor> parts;
  if (req.partition) {
    auto it = self->state.partitions.find(*req.partition);
    if (it == self->state.partitions.end()) {
      rp.deliver(
          purge_reply{0, make_error(errc::not_found, "Partition not found")});
      return rp.later();
    }
    parts.push_back(it->second.actor);
  } else {
    parts = all_partitions(self);
  }
  fan_out<purge_reply>(
      self, parts,
      [rp](std::vector<fanned<purge_reply>> slots) mutable {
        // A partition whose purge failed counts 0 partitions purged.
        rp.deliver(fold_replies(
            slots,
            [](purge_reply& out, const purge_reply& part) {
              out.partitions += part.partitions;
            },
            "partition"));
      },
      purge_atom::value, req.below);
  return rp.later();
}

// -- push ---------------------------------------------------------------------

struct push_run {
  std::vector<std::string> names;              ///< partitions, first-seen order
  std::vector<std::vector<std::size_t>> items; ///< item indices per partition
  std::vector<std::vector<storage::frame>> frames;
  std::vector<sealed_ptr> seals;
  std::optional<api_error> failure;
  std::size_t item_count = 0;
  /// Called once every partition sealed (or the push failed before).
  std::function<void(std::shared_ptr<push_run>)> prepared;
};

/// Calls the run's `prepared` once and lets go of it: the run travels to
/// the broker as the push's token, and must not carry this queue's
/// promises there.
void done_preparing(const std::shared_ptr<push_run>& run) {
  auto prepared = std::move(run->prepared);
  run->prepared = nullptr;
  prepared(run);
}

void settle_all(queue_ptr self, push_run& run, bool durable) {
  for (std::size_t k = 0; k < run.seals.size(); ++k)
    if (run.seals[k])
      self->send(self->state.partitions.at(run.names[k]).actor,
                 settle_atom::value, run.seals[k], durable);
}

/// Every sealed mutation of the push, as one batch. The mutations move out
/// of the seals: settling needs only their offsets and ids, not the bytes.
storage::write_batch batch_of(push_run& run) {
  storage::write_batch batch;
  for (auto& s : run.seals)
    for (auto& m : s->mutations)
      batch.mutations.push_back(std::move(m));
  return batch;
}

/// The answer of a sealed push, should its batch be durable.
queue_push_reply results_of(queue_ptr self, push_run& run) {
  queue_push_reply reply;
  reply.results.resize(run.item_count);
  reply.targets.reserve(run.names.size());
  for (std::size_t k = 0; k < run.names.size(); ++k) {
    auto& entry = self->state.partitions.at(run.names[k]);
    reply.created_at = std::max(reply.created_at, run.seals[k]->created_at);
    reply.targets.push_back(
        push_target{self->state.cfg.record.name, run.names[k], entry.rec.uuid});
    auto target = static_cast<std::uint32_t>(k);
    for (std::size_t j = 0; j < run.items[k].size(); ++j)
      reply.results[run.items[k][j]]
          = push_item_result{target, run.seals[k]->results[j]};
  }
  return reply;
}

/// Settles every seal with the batch's outcome and builds the answer.
queue_push_reply finish(queue_ptr self, push_run& run,
                        std::optional<api_error> failure) {
  settle_all(self, run, !failure);
  if (failure)
    return push_failed(std::move(failure));
  auto reply = results_of(self, run);
  std::vector<std::string> grown;
  for (std::size_t k = 0; k < run.seals.size(); ++k) {
    auto& s = run.seals[k];
    if (!s || s->next <= s->first)
      continue; // only duplicates
    auto& entry = self->state.partitions.at(run.names[k]);
    entry.last = std::max(entry.last, s->next - 1);
    self->state.candidates.pushed(entry.index, entry.last);
    grown.push_back(run.names[k]);
  }
  wake_for(self, grown);
  return reply;
}

/// Seals every partition's frames (at most `gather_window` seals in flight,
/// so a push to thousands of partitions stays linear), then calls
/// `prepared`.
void seal_all(queue_ptr self, std::shared_ptr<push_run> run) {
  gather<seal_reply>(
      run->names.size(),
      [self, run](std::size_t k) {
        auto& actor = self->state.partitions.at(run->names[k]).actor;
        return self->request(actor, caf::infinite, seal_atom::value,
                             std::move(run->frames[k]));
      },
      [run](std::vector<fanned<seal_reply>> slots) {
        run->seals.resize(slots.size());
        for (std::size_t k = 0; k < slots.size(); ++k) {
          auto& s = slots[k];
          if (!s.reply) {
            if (!run->failure)
              run->failure = unreachable(s.error);
            continue;
          }
          if (s.reply->failure && !run->failure)
            run->failure = s.reply->failure;
          run->seals[k] = s.reply->sealed;
        }
        done_preparing(run);
      });
}

/// maxSize (semantics.md §2): calls `go` if the push fits the queue's
/// retained frames, after deleting segments every interested group has
/// committed past if needed; otherwise fails the push with "Queue <name> is
/// full" and nothing of it stored, or with the error of a trim step that
/// failed (the room might have been made: a retry may fit).
void fit(queue_ptr self, std::shared_ptr<push_run> run,
         std::function<void()> go) {
  auto& st = self->state;
  auto max = st.cfg.record.options.max_size;
  auto incoming = static_cast<std::int64_t>(run->item_count);
  auto fail = [run](api_error err) {
    run->failure = std::move(err);
    done_preparing(run);
  };
  if (incoming > max)
    return fail(core::queue_full(st.cfg.record.name));
  auto parts = all_partitions(self);
  fan_out<std::int64_t>(
      self, parts,
      [self, run, parts, max, incoming, go,
       fail](std::vector<fanned<std::int64_t>> sizes) {
        std::int64_t total = 0;
        for (auto& s : sizes)
          total += s.reply.value_or(0);
        using outcome = core::room_check::outcome;
        auto room = core::check_room(max, total, incoming);
        if (room.result == outcome::fits)
          return go();
        if (room.result == outcome::full)
          return fail(core::queue_full(self->state.cfg.record.name));
        fan_out<trim_reply>(
            self, parts,
            [self, total, max, incoming, go,
             fail](std::vector<fanned<trim_reply>> trims) {
              std::vector<core::trim_share> shares;
              for (auto& t : trims)
                shares.push_back(t.reply ? std::move(*t.reply)
                                         : trim_reply{0, unreachable(t.error)});
              if (auto err = core::after_trims(self->state.cfg.record.name, max,
                                               total, incoming, shares))
                return fail(std::move(*err));
              go();
            },
            trim_atom::value, room.need);
      },
      size_atom::value);
}

/// Validates the items, creates missing partitions (durably), seals every
/// partition's frames, then calls `prepared` (also on failure, with
/// `run->failure` set and nothing sealed left unsettled by the caller).
void prepare(queue_ptr self, std::vector<push_item>& items,
             std::function<void(std::shared_ptr<push_run>)> prepared) {
  auto& st = self->state;
  auto run = std::make_shared<push_run>();
  run->item_count = items.size();
  run->prepared = std::move(prepared);
  auto fail = [&](api_error err) {
    run->failure = std::move(err);
    done_preparing(run);
  };
  // Every item is validated before anything is created or sealed, so a
  // bad item leaves no trace (not even a new partition).
  for (std::size_t i = 0; i < items.size(); ++i)
    if (auto ok = core::check_push_item(i, nullptr, items[i].partition,
                                        items[i].frame, st.cfg.node.frames);
        !ok)
      return fail(ok.err());
  auto groups = core::group_by_name(
      items.size(),
      [&](std::size_t i) -> const std::string& { return items[i].partition; });
  run->frames = core::distribute<storage::frame>(
      groups, [&](std::size_t i) { return std::move(items[i].frame); });
  run->names = std::move(groups.names);
  run->items = std::move(groups.items);
  if (run->names.empty())
    return done_preparing(run);
  // Partitions met for the first time are created durably first.
  auto go = [self, run] {
    ensure_partitions(self, run->names,
                      [self, run](std::optional<api_error> failure) {
                        if (failure) {
                          run->failure = std::move(failure);
                          return done_preparing(run);
                        }
                        seal_all(self, run);
                      });
  };
  if (st.cfg.record.options.max_size <= 0)
    return go();
  // maxSize: pushes pass one at a time from the size check to the end of
  // sealing (sealing reserves their offsets, so the next check counts them).
  auto inner = std::move(run->prepared);
  run->prepared = [self, inner](std::shared_ptr<push_run> r) {
    self->state.size_gate.leave();
    inner(std::move(r));
  };
  st.size_gate.wait([self, run, go] {
    self->state.size_gate.enter();
    fit(self, run, go);
  });
}

caf::typed_response_promise<queue_push_reply>
on_push(queue_ptr self, std::vector<push_item>& items) {
  auto rp = promise_for<queue_push_reply>(self);
  prepare(self, items, [self, rp](std::shared_ptr<push_run> run) mutable {
    if (run->failure) {
      rp.deliver(finish(self, *run, run->failure));
      return;
    }
    auto batch = batch_of(*run);
    if (batch.mutations.empty()) { // only duplicates of stored frames
      rp.deliver(finish(self, *run, std::nullopt));
      return;
    }
    write_then(self, self->state.cfg.node.writer, std::move(batch),
               [self, rp, run](std::optional<api_error> failure) mutable {
                 rp.deliver(finish(self, *run, std::move(failure)));
               });
  });
  return rp.later();
}

caf::typed_response_promise<prepared_push>
on_prepare(queue_ptr self, std::vector<push_item>& items) {
  auto rp = promise_for<prepared_push>(self);
  prepare(self, items, [self, rp](std::shared_ptr<push_run> run) mutable {
    if (run->failure) {
      auto failure = run->failure;
      (void)finish(self, *run, failure); // settles what was sealed
      rp.deliver(prepared_push{nullptr, {}, failure, {}, {}});
      return;
    }
    auto outcome = results_of(self, *run);
    rp.deliver(prepared_push{run, batch_of(*run), std::nullopt,
                             std::move(outcome.results),
                             std::move(outcome.targets)});
  });
  return rp.later();
}

// -- ack ----------------------------------------------------------------------

caf::typed_response_promise<std::vector<ack_reply>>
on_ack(queue_ptr self, const std::string& partition, const std::string& group,
       std::vector<ack_request>& reqs) {
  auto rp = promise_for<std::vector<ack_reply>>(self);
  auto it = self->state.partitions.find(partition);
  if (it == self->state.partitions.end()) {
    rp.deliver(std::vector<ack_reply>(
        reqs.size(), ack_reply{ack_error::not_found, false, false, {}}));
    return rp.later();
  }
  auto n = reqs.size();
  self->request(it->second.actor, caf::infinite, ack_atom::value, group,
                std::move(reqs))
      .then(
          [self, rp, partition, group](std::vector<ack_reply>& rs) mutable {
            bool released = std::any_of(
                rs.begin(), rs.end(), [](auto& r) { return r.lease_released; });
            rp.deliver(std::move(rs));
            if (released)
              wake_for(self, {partition}, group);
          },
          [rp, n](caf::error& err) mutable {
            rp.deliver(std::vector<ack_reply>(
                n, ack_reply{ack_error::none, false, false, unreachable(err)}));
          });
  return rp.later();
}

// -- seek ---------------------------------------------------------------------

/// The partitions (`indices`, named `names`) became candidates for the
/// group's next pops again; its parked pops there are woken at once unless
/// `wake_now` is false (the caller wakes them later).
void made_candidates(queue_ptr self, const std::string& group,
                     const std::vector<std::size_t>& indices,
                     const std::vector<std::string>& names,
                     bool wake_now = true) {
  for (auto i : indices)
    self->state.candidates.add(group, i);
  if (wake_now)
    wake_for(self, names, group);
}

/// One seek in progress: its partitions staged one after the other.
struct seek_run {
  seek_request req;
  std::vector<std::string> names;   ///< by name
  std::vector<std::size_t> indices; ///< the candidate-set index of each
  std::vector<partition_actor> parts;
  std::vector<seek_stage> staged; ///< per partition, as far as staged
  promise<seek_reply> rp;
  bool gated = false; ///< holds the queue's group gate
};

/// Answers the seek (unless answered already) and lets the next group
/// operation of the queue run.
void answer_seek(queue_ptr self, seek_run& run, seek_reply reply) {
  if (run.rp.pending())
    run.rp.deliver(std::move(reply));
  if (run.gated) {
    run.gated = false;
    leave_group_gate(self, run.req.group);
  }
}

/// Settles every stage of the run, commit or abort: straight to the cursor
/// that staged, or to the partition that held the seek for a group without
/// a live cursor (it passes the settle on if a cursor spawned meanwhile).
void settle_seek(queue_ptr self, seek_run& run, bool commit) {
  for (std::size_t i = 0; i < run.staged.size(); ++i) {
    auto& stage = run.staged[i];
    if (stage.stage_id == 0)
      continue;
    // Through the partition (which forwards to the cursor): it tracks the
    // staged seeks that keep completedRetention and maxSize away.
    self->send(run.parts[i], settle_atom::value, run.req.group, stage.stage_id,
               commit);
    stage.stage_id = 0; // settled once
    stage_closed(self, run.names[i]);
  }
}

void fail_seek(queue_ptr self, seek_run& run, api_error err) {
  settle_seek(self, run, false);
  seek_reply reply;
  reply.failure = std::move(err);
  answer_seek(self, run, std::move(reply));
}

/// Every partition is staged: writes the records in one batch (nothing for
/// a dry run), settles, wakes parked pops and answers.
void commit_seek(queue_ptr self, std::shared_ptr<seek_run> run) {
  auto& st = self->state;
  seek_reply reply;
  storage::write_batch batch;
  reply.positions.reserve(run->names.size());
  batch.mutations.reserve(run->names.size() + 1);
  for (std::size_t i = 0; i < run->names.size(); ++i) {
    auto& stage = run->staged[i];
    reply.positions.push_back({run->names[i], stage.before, stage.after});
    if (stage.record)
      batch.mutations.emplace_back(std::move(*stage.record));
  }
  if (run->req.dry_run)
    return answer_seek(self, *run, std::move(reply));
  // No subscription record (semantics.md §6): registration belongs to the
  // group's first pop, with its mode; it seeds only the partitions without
  // a row, so those the seek wrote keep the seek's position.
  reply.partitions_updated = run->names.size();
  auto done = [self, run, reply](std::optional<api_error> failure) mutable {
    if (failure) {
      reply = seek_reply{};
      reply.failure = std::move(failure);
    } else {
      made_candidates(self, run->req.group, run->indices, run->names, false);
    }
    // Answered before the settles are sent: the seek is durable, and any
    // pop that follows reaches each cursor after its settle (the queue
    // sends them all before it handles another message; a cursor defers
    // the rest while staged). Parked pops are woken after the settles,
    // for the same reason.
    run->rp.deliver(std::move(reply));
    settle_seek(self, *run, !failure);
    if (!failure)
      wake_for(self, run->names, run->req.group);
    answer_seek(self, *run, {});
  };
  write_then(self, st.cfg.node.writer, std::move(batch), std::move(done));
}

/// Stages the next partition of the run, or commits when all are staged.
void seek_step(queue_ptr self, std::shared_ptr<seek_run> run) {
  auto i = run->staged.size();
  if (i == run->parts.size())
    return commit_seek(self, run);
  self->request(run->parts[i], caf::infinite, seek_atom::value, run->req.group,
                run->req.target, run->req.dry_run, false)
      .then(
          [self, run](seek_stage& stage) {
            auto failure = std::move(stage.failure);
            stage_opened(self, run->names[run->staged.size()], stage.stage_id);
            run->staged.push_back(std::move(stage));
            if (failure)
              return fail_seek(self, *run, std::move(*failure));
            seek_step(self, run);
          },
          [self, run](caf::error& err) {
            fail_seek(self, *run, unreachable(err));
          });
}

/// First attempt: every partition staged in parallel (64 in flight, the
/// fan-out window), none waiting for a cursor another transaction or seek
/// holds. A partition not asked yet keeps serving pops from the old
/// position meanwhile; the seek then ends those leases like any other. If a
/// cursor is held, everything staged is released and the seek stages one
/// partition after the other in name order instead (`seek_step`), the
/// order transactions use, so the two never wait for each other in a cycle.
void seek_all(queue_ptr self, std::shared_ptr<seek_run> run) {
  fan_out<seek_stage>(
      self, run->parts,
      [self, run](std::vector<fanned<seek_stage>> stages) {
        std::optional<api_error> failure;
        bool busy = false;
        run->staged.clear();
        run->staged.reserve(stages.size());
        for (auto& s : stages) {
          if (!s.reply) {
            if (!failure)
              failure = unreachable(s.error);
            run->staged.emplace_back();
            continue;
          }
          busy = busy || s.reply->busy;
          if (s.reply->failure && !failure)
            failure = s.reply->failure;
          stage_opened(self, run->names[run->staged.size()], s.reply->stage_id);
          run->staged.push_back(std::move(*s.reply));
        }
        if (failure)
          return fail_seek(self, *run, std::move(*failure));
        if (busy) {
          settle_seek(self, *run, false);
          run->staged.clear();
          return seek_step(self, run);
        }
        commit_seek(self, run);
      },
      seek_atom::value, run->req.group, run->req.target, run->req.dry_run,
      true);
}

caf::typed_response_promise<seek_reply> on_seek(queue_ptr self,
                                                seek_request& req) {
  auto& st = self->state;
  auto run = std::make_shared<seek_run>();
  run->rp = promise_for<seek_reply>(self);
  if (auto rule = core::seek_rule_of(req.target); !rule) {
    fail_seek(self, *run, rule.err());
    return run->rp;
  }
  for (auto& [name, p] : st.partitions)
    if (!req.partition || name == *req.partition) {
      run->names.push_back(name);
      run->indices.push_back(p.index);
      run->parts.push_back(p.actor);
    }
  if (run->parts.empty()) {
    fail_seek(self, *run,
              req.partition
                  ? make_error(errc::not_found, "Partition not found")
                  : make_error(errc::not_found,
                               "Queue not found or has no partitions"));
    return run->rp;
  }
  run->req = std::move(req);
  // A group's seeks, registration and deletions on this queue run one at a
  // time: a registration never overwrites the record a seek wrote.
  group_gate(self, run->req.group).wait([self, run] {
    group_gate(self, run->req.group).enter();
    run->gated = true;
    seek_all(self, run);
  });
  return run->rp;
}

// -- DLQ requeue and retention ------------------------------------------------

caf::typed_response_promise<dlq_count_reply>
on_requeue(queue_ptr self, const std::string& group,
           std::vector<storage::dlq_entry>& entries) {
  auto& st = self->state;
  auto rp = promise_for<dlq_count_reply>(self);
  // Every entry's partition is resolved before anything is sent.
  std::map<std::uint64_t,
           std::pair<partition_actor, std::vector<storage::dlq_entry>>>
      parts;
  std::vector<std::size_t> indices;
  std::vector<std::string> names;
  // Partitions by id, once: a requeue of many entries is one pass.
  std::unordered_map<std::uint64_t, decltype(st.partitions.begin())> by_id;
  for (auto it = st.partitions.begin(); it != st.partitions.end(); ++it)
    by_id.emplace(it->second.rec.id.value, it);
  for (auto& e : entries) {
    auto found = by_id.find(e.partition.value);
    auto it = found == by_id.end() ? st.partitions.end() : found->second;
    if (it == st.partitions.end()) {
      rp.deliver(dlq_count_reply{
          0, make_error(errc::not_found,
                        "Partition not found: ", e.partition.value)});
      return rp.later();
    }
    auto& slot = parts[e.partition.value];
    if (slot.second.empty()) { // each partition once
      indices.push_back(it->second.index);
      names.push_back(it->first);
    }
    slot.first = it->second.actor;
    slot.second.push_back(std::move(e));
  }
  if (parts.empty()) {
    rp.deliver(dlq_count_reply{});
    return rp.later();
  }
  std::vector<std::pair<partition_actor, std::vector<storage::dlq_entry>>> asks;
  for (auto& [_, slot] : parts)
    asks.push_back(std::move(slot));
  auto n = asks.size();
  gather<dlq_count_reply>(
      n,
      [self, group, asks = std::move(asks)](std::size_t i) mutable {
        return self->request(asks[i].first, caf::infinite, requeue_atom::value,
                             group, std::move(asks[i].second));
      },
      [self, rp, group, indices,
       names](std::vector<fanned<dlq_count_reply>> slots) mutable {
        rp.deliver(total_of(slots));
        made_candidates(self, group, indices, names); // requeued ones are due
      });
  return rp.later();
}

/// Keeps the one sweep timer at the earliest due time (wall µs).
void arm_sweep(queue_ptr self, storage::micros due) {
  auto& st = self->state;
  if (st.sweep_due && *st.sweep_due <= due)
    return;
  st.sweep_due = due;
  auto delay = due - st.cfg.node.wall();
  if (delay <= 0) // due now: a message, not a timer
    self->send(self, dlq_sweep_atom::value, ++st.sweep_id);
  else
    self->delayed_send(self, std::chrono::microseconds{delay},
                       dlq_sweep_atom::value, ++st.sweep_id);
}

void on_sweep(queue_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.sweep_id)
    return;
  st.sweep_due.reset();
  if (st.sweeping) {
    st.sweep_again = true;
    return;
  }
  core::dlq_sweeper sweep(st.cfg.node.wall(),
                          st.cfg.record.options.dlq_retention_s,
                          st.cfg.dlq_sweep_step, st.cfg.dlq_sweep_gap);
  {
    auto t = st.cfg.node.store->db().read();
    if (!t)
      return;
    auto scanned = storage::tables::scan_queue_dlq(
        *t, st.cfg.record.id, [&](std::string_view g, auto& e) {
          sweep.see(g, e);
          return true;
        });
    if (!scanned)
      return;
  }
  auto next = sweep.next();
  if (sweep.expired().empty()) {
    if (next)
      arm_sweep(self, *next);
    return;
  }
  storage::write_batch b;
  for (auto& [group, dlq_id] : sweep.expired())
    b.mutations.emplace_back(
        storage::mut::delete_dlq{st.cfg.record.id, group, dlq_id});
  auto n = sweep.expired().size();
  st.sweeping = true;
  // The next sweep is armed once this one's delete is durable.
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                std::move(b))
      .then(
          [self, n, next](write_result& r) {
            auto& st = self->state;
            st.sweeping = false;
            if (r.ok() && st.cfg.node.metrics)
              st.cfg.node.metrics->dead_letters_expired += n;
            if (std::exchange(st.sweep_again, false))
              arm_sweep(self, st.cfg.node.wall());
            else if (next)
              arm_sweep(self, *next);
          },
          [self](caf::error&) {
            self->state.sweeping = false;
            self->state.sweep_again = false;
          });
}

queue_actor::behavior_type queue(queue_ptr self, queue_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  for (auto& rec : st.cfg.partitions)
    if (auto ok = add_partition(self, rec); !ok)
      self->quit(caf::make_error(caf::sec::runtime_error, to_string(ok.err())));
  supervise(
      self,
      [self](const caf::actor_addr& src, const caf::error& why) {
        for (auto& [name, entry] : self->state.partitions)
          if (entry.actor.address() == src) {
            if (why)
              restart_partition(self, std::string{name}, why);
            return true;
          }
        return false;
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
       .rearm = [self] { arm(self); }});
  if (auto t = st.cfg.node.store->db().read()) {
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
  st.sweep_due = st.cfg.node.wall();
  self->send(self, dlq_sweep_atom::value, ++st.sweep_id);
  plan_sweep(self);
  arm(self);
  return {
      [self](push_atom, std::vector<push_item>& items) {
        return on_push(self, items);
      },
      [self](seal_atom, std::vector<push_item>& items) {
        return on_prepare(self, items);
      },
      [self](settle_atom, const push_token& token,
             std::optional<api_error>& failure) {
        auto run = std::static_pointer_cast<push_run>(token);
        return finish(self, *run, std::move(failure));
      },
      [self](pop_atom, queue_pop_request& req) { return on_pop(self, req); },
      [self](ack_atom, const std::string& partition, const std::string& group,
             std::vector<ack_request>& reqs) {
        return on_ack(self, partition, group, reqs);
      },
      [self](timeout_atom, std::uint64_t id) { on_timeout(self, id); },
      [self](requeue_atom, const std::string& group,
             std::vector<storage::dlq_entry>& entries) {
        return on_requeue(self, group, entries);
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
      [self](browse_atom, browse_request& req) -> caf::delegated<browse_reply> {
        auto it = self->state.partitions.find(req.partition);
        if (it == self->state.partitions.end()) {
          auto rp = promise_for<browse_reply>(self);
          browse_reply reply;
          reply.failure = make_error(errc::not_found, "Partition not found");
          rp.deliver(std::move(reply));
          return {};
        }
        return self->delegate(it->second.actor, browse_atom::value,
                              std::move(req));
      },
      [self](groups_atom, const groups_request& req) {
        return on_groups(self, req);
      },
      [self](delete_atom, const delete_group_request& req) {
        return on_delete_group(self, req);
      },
      [self](delete_atom) { return on_delete_queue(self); },
      [self](delete_atom, std::uint64_t) {
        end_queue(self, caf::make_error(caf::exit_reason::user_shutdown));
      },
      [self](purge_atom, const purge_request& req) {
        return on_purge(self, req);
      },
      [self](release_atom, const std::string& partition,
             const std::string& group, const std::string& lease_id) {
        auto rp = promise_for<bool>(self);
        auto it = self->state.partitions.find(partition);
        if (it == self->state.partitions.end()) {
          rp.deliver(false);
          return rp.later();
        }
        self->request(it->second.actor, caf::infinite, release_atom::value,
                      group, lease_id)
            .then(
                [self, rp, partition, group](bool released) mutable {
                  rp.deliver(released);
                  if (released)
                    wake_for(self, {partition}, group);
                },
                [rp](caf::error&) mutable { rp.deliver(false); });
        return rp.later();
      },
      [self](sub_update_atom, const std::string& group) {
        self->state.candidates.forget(group);
        self->state.parked.wake_if(
            [&](const queue_pop_request& r) { return r.group == group; });
      },
      [self](cancel_atom, const std::string& lease_id) {
        if (auto it = self->state.registering.find(lease_id);
            it != self->state.registering.end())
          it->second = true; // answered once its registration is done
        self->state.parked.cancel(lease_id);
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
      [self](stage_atom, const std::string& partition, const std::string& group,
             std::vector<ack_request>& reqs) -> caf::delegated<stage_reply> {
        auto it = self->state.partitions.find(partition);
        if (it == self->state.partitions.end()) {
          auto rp = promise_for<stage_reply>(self);
          stage_reply refused;
          refused.refused
              = core::stage_refusal{0, to_string(ack_error::not_found)};
          rp.deliver(std::move(refused));
          return {};
        }
        // Through here, not delegated: the stage is recorded until its
        // settle (`open_stages`).
        auto rp = promise_for<stage_reply>(self);
        self->request(it->second.actor, caf::infinite, stage_atom::value, group,
                      std::move(reqs))
            .then(
                [self, rp, partition](stage_reply& r) mutable {
                  if (r.stage_id != 0) {
                    stage_opened(self, partition, r.stage_id);
                    self->state.txn_stages[r.stage_id] = partition;
                  }
                  rp.deliver(std::move(r));
                },
                [rp](caf::error& err) mutable {
                  stage_reply failed;
                  failed.failure = unreachable(err, "partition");
                  rp.deliver(std::move(failed));
                });
        return {};
      },
      [self](settle_atom, const std::string& partition,
             const std::string& group, std::uint64_t id, bool commit) {
        auto& st = self->state;
        auto it = st.partitions.find(partition);
        if (it != st.partitions.end())
          self->send(it->second.actor, settle_atom::value, group, id, commit);
        // The batch is durable (or not written): a respawn waiting for this
        // stage may read the rows now.
        if (auto open = st.txn_stages.find(id); open != st.txn_stages.end()) {
          auto name = open->second;
          st.txn_stages.erase(open);
          stage_closed(self, name);
        }
        if (it == st.partitions.end())
          return;
        if (commit) // a released lease may serve the group's parked pops
          wake_for(self, {partition}, group);
      },
      [self](seek_atom, seek_request& req) { return on_seek(self, req); },
  };
}

} // namespace

storage::partition_record new_partition_record(const node_context& node,
                                               storage::queue_id queue,
                                               std::string name) {
  storage::partition_record rec;
  rec.queue = queue;
  rec.id = node.store->next_partition_id();
  rec.name = std::move(name);
  rec.uuid = node.store->make_uuid();
  rec.created_at = node.wall();
  return rec;
}

expected<void> queue_config::validate() const {
  return node.validate("queue");
}

expected<queue_actor> spawn_queue(caf::actor_system& sys, queue_config cfg) {
  SPOOL_TRY(cfg.validate());
  return sys.spawn(queue, std::move(cfg));
}

} // namespace spool::actors
