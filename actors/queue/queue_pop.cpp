// A queue's pops: the wildcard claim over its candidates (core::pop_claim),
// the wake-ups of parked pops, and a group's registration on its first pop.

#include "actors/queue/queue_state.hpp"

namespace spool::actors::queue_detail {

// -- pop ----------------------------------------------------------------------

namespace {

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
  while (auto ask = run->claim.next()) {
    auto name = run->candidates[ask->candidate];
    auto it = st.partitions.find(name);
    if (it == st.partitions.end())
      continue; // a named partition the queue does not have
    auto asked_at = st.candidates.generation();
    // A failed share ends the pop (answered with the failure unless
    // something was claimed).
    auto fail = [run](api_error err) {
      if (run->claim.failure_answers())
        run->reply.failure = std::move(err);
      run->reply.retry_at = run->claim.retry_at();
      run->done(std::move(run->reply));
    };
    self->request(live(self, it->second), caf::infinite, pop_atom::value,
                  share_of(run->req, ask->batch, ask->max_bytes))
        .then(
            [self, run, name, asked_at, fail](pop_reply& r) {
              auto& st = self->state;
              if (r.failure && r.restarting
                  && run->claim.restarting(self->clock().now()))
                return step(self, run);
              if (r.failure)
                return fail(std::move(*r.failure));
              if (st.cfg.node.metrics)
                st.cfg.node.metrics->partition_pops += 1;
              auto& entry = st.partitions.at(name); // never removed
              if (r.empty_at)
                st.candidates.found_empty(run->req.group, entry.index,
                                          *r.empty_at, entry.last, asked_at);
              if (r.messages.empty()) {
                run->claim.empty(r.reason, r.retry_at);
              } else {
                std::size_t bytes = 0;
                for (auto& m : r.messages)
                  bytes += m.frame.data.payload.size();
                run->claim.delivered(r.messages.size(), bytes);
                run->reply.claimed.push_back(
                    note_claim(self, run->req, name, std::move(r)));
              }
              step(self, run);
            },
            [fail](caf::error& err) { fail(unreachable(err)); });
    return; // continue in the response handler
  }
  finish_pop(run);
}

} // namespace

partition_delivery note_claim(queue_ptr self, const queue_pop_request& req,
                              const std::string& name, pop_reply reply) {
  auto& entry = self->state.partitions.at(name);
  if (!req.partition)
    self->state.rotation.claimed(req.group, entry.index);
  if (reply.lease)
    lease_granted(self, reply.lease->id, req.group, name, reply.lease->expires);
  return {name, entry.rec.uuid, std::move(reply)};
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

namespace {

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
              write_then(self, st.cfg.node.writer, st.cfg.node.term,
                         std::move(batch), std::move(done));
            },
            seed_atom::value, group, rec);
      });
}

} // namespace

caf::result<queue_pop_reply> on_pop(queue_ptr self, queue_pop_request& req) {
  // The token becomes the lease id, carrying this queue's id.
  req.lease_id = lease_id_of(self->state.cfg.record.id.value, req.lease_id);
  if (self->state.deleted) {
    queue_pop_reply gone;
    gone.reason = empty_reason::no_partition;
    return gone;
  }
  auto rp = promise_for<queue_pop_reply>(self);
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

} // namespace spool::actors::queue_detail
