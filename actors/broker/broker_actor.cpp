// Message flow.
//
// push: items grouped by queue; queues met for the first time are created in
//   one durable write, then every queue prepares its part (partitions
//   created, frames sealed); the broker writes all parts as ONE batch and
//   settles each queue with the outcome, answering in input order. A push
//   for a single queue goes to it directly (it commits its own batch).
// pop: routed to the queue by name; ack: by the queue id its partition
//   uuid carries (broker_node.cpp).
// DLQ: listing and delete read the store directly (one short read
//   transaction; deletes go through the writer, answered when durable);
//   requeue resolves the entries, then each queue routes them to the
//   entries' group cursors (see queue_actor).
// txn: run by `run_transaction` (broker_txn.cpp).
// seek: routed to the queue (which writes every partition in one batch).
// subscription update: the group's records on every queue, read directly
//   and rewritten in one durable write.

#include "actors/broker/broker_state.hpp"

namespace spool::actors {

namespace broker_detail {

api_error queue_not_found() {
  return make_error(errc::not_found, "Queue not found");
}

broker_actor::behavior_type broker(broker_ptr self, broker_config cfg,
                                   storage::catalog cat) {
  self->state.cfg = std::move(cfg);
  if (auto& m = self->state.cfg.node.metrics) // the node's gauge is the count
    self->state.parked_total
        = std::shared_ptr<std::atomic<std::size_t>>(m, &m->pops_parked);
  supervise(
      self,
      [self](const caf::actor_addr& src, const caf::error& why) {
        auto& retiring = self->state.retiring;
        if (auto it = std::find(retiring.begin(), retiring.end(), src);
            it != retiring.end()) {
          retiring.erase(it); // a deleted queue's grace ended
          return true;
        }
        for (auto& [name, q] : self->state.queues)
          if (q.address() == src) {
            if (why)
              restart_queue(self, std::string{name}, why);
            return true;
          }
        return false;
      },
      // Stopped (SIGTERM): parked namespace pops are answered empty (each
      // queue answers its own).
      [self] {
        self->state.parked.drop(
            [](const namespace_pop_request&) { return true; });
      });
  self->state.parked.setup(
      self->state.parked_total, self->state.cfg.pop.max_parked,
      {.attempt =
           [self](const namespace_pop_request& req,
                  std::function<void(namespace_pop_reply)> k) {
             try_namespace(self, req, std::move(k));
           },
       .nothing =
           [](const namespace_pop_reply& r) {
             return decltype(self->state.parked)::nothing_claimed(r.reply);
           },
       .key = [](const namespace_pop_request& r) { return r.pop.lease_id; },
       .topic = [](const namespace_pop_request& r)
           -> std::optional<std::string> { return r.name_space; },
       .busy =
           [](namespace_pop_reply r) {
             r.reply.failure = make_error(errc::unavailable,
                                          "Server busy: too many parked pops");
             return r;
           },
       .now = [self] { return self->clock().now(); },
       .rearm = [self] { arm(self); }});
  if (auto& dir = self->state.cfg.slots) { // cluster mode: slot by slot
    self->state.slot_runs.assign(dir->slots(), slot_run::stopped);
    self->state.slot_turns.assign(dir->slots(), 0);
    self->state.slot_terms.assign(dir->slots(), no_term);
  }
  for (auto& q : cat.queues) {
    std::vector<storage::partition_record> parts;
    for (auto& p : cat.partitions)
      if (p.queue == q.id)
        parts.push_back(p);
    if (auto ok = add_queue(self, q, std::move(parts)); !ok)
      self->quit(caf::make_error(caf::sec::runtime_error, to_string(ok.err())));
  }
  for (auto q : cat.doomed) // deletions a stop interrupted
    self->send(self, reap_atom::value, q.value);
  return {
      [self](push_atom, std::vector<broker_push_item>& items) {
        return on_push(self, items);
      },
      [self](reap_atom, std::uint64_t q) { reap(self, storage::queue_id{q}); },
      [self](pop_atom, const std::string& queue,
             queue_pop_request& req) -> caf::result<queue_pop_reply> {
        if (auto ok = check_pop(self->state.cfg.pop, req); !ok)
          return failed<queue_pop_reply>(ok.err());
        auto it = self->state.queues.find(queue);
        if (it != self->state.queues.end())
          return self->delegate(it->second, pop_atom::value, std::move(req));
        if (auto why = name_refusal(self, queue))
          return failed<queue_pop_reply>(*why);
        // A pop on a queue that does not exist yet registers the group
        // there (semantics.md §5), so the queue is created as a push would.
        if (auto ok = core::check_name(core::name_kind::queue, queue); !ok)
          return failed<queue_pop_reply>(ok.err());
        auto rp = promise_for<queue_pop_reply>(self);
        self->state.creating[req.lease_id] = false;
        ensure_queues(
            self, {queue},
            [self, rp, queue,
             req = std::move(req)](std::optional<api_error> failure) mutable {
              auto& creating = self->state.creating;
              bool cancelled = false;
              if (auto c = creating.find(req.lease_id); c != creating.end()) {
                cancelled = c->second;
                creating.erase(c);
              }
              if (cancelled && !failure) {
                rp.deliver(queue_pop_reply{}); // the client left
                return;
              }
              auto it = self->state.queues.find(queue);
              if (failure || it == self->state.queues.end()) {
                queue_pop_reply bad;
                bad.failure = failure.value_or(make_error(
                    errc::internal, "Queue ", queue, " not created"));
                rp.deliver(std::move(bad));
                return;
              }
              rp.delegate(it->second, pop_atom::value, std::move(req));
            });
        return rp.later();
      },
      [self](configure_atom, configure_request& req) {
        return on_configure(self, req);
      },
      [self](pop_atom, namespace_pop_request& req) {
        return on_namespace_pop(self, req);
      },
      [self](timeout_atom, std::uint64_t id) { on_timeout(self, id); },
      [self](cancel_atom, const std::string& token,
             const std::optional<std::string>& queue) {
        on_cancel(self, token, queue);
      },
      [self](ack_atom, std::vector<located_ack>& acks) {
        return on_located_ack(self, acks);
      },
      [self](extend_atom, const std::string& id, std::chrono::milliseconds by) {
        return on_extend_lease(self, id, by);
      },
      [self](release_atom, const std::string& id) {
        return on_release_lease(self, id);
      },
      [self](push_atom, const std::string& queue) {
        wake(self, std::vector<std::string>{queue});
      },
      [self](info_atom, const std::optional<std::string>& queue) {
        return describe(self, queue);
      },
      [self](browse_atom, const std::string& queue,
             browse_request& req) -> caf::result<browse_reply> {
        auto it = self->state.queues.find(queue);
        if (it == self->state.queues.end())
          return failed<browse_reply>(
              name_refusal(self, queue).value_or(queue_not_found()));
        // Bounded like a pop: at most pop.maxBytes of payload decoded.
        req.max_bytes = std::min<std::size_t>(req.max_bytes,
                                              self->state.cfg.pop.max_bytes);
        return self->delegate(it->second, browse_atom::value, std::move(req));
      },
      [self](browse_atom, const find_request& req) {
        return on_find(self, req);
      },
      [self](trace_atom, trace_put_request& req) {
        return on_trace_put(self, req);
      },
      [self](trace_atom, const find_request& req) {
        return on_trace_list(self, req);
      },
      [self](trace_atom, const trace_named_request& req) {
        return on_trace_named(self, req);
      },
      [self](trace_atom, const trace_names_request& req) {
        return on_trace_names(self, req);
      },
      [self](usage_atom) {
        usage_reply r;
        auto u = self->state.cfg.node.store.usage();
        if (u)
          r.usage = *u;
        else
          r.failure = u.err();
        return r;
      },
      [self](groups_atom, const groups_request& req) {
        return on_groups(self, req);
      },
      [self](delete_atom, const delete_group_request& req) {
        return on_delete_group(self, req);
      },
      [self](delete_atom, const std::string& queue) {
        return on_delete_queue(self, queue);
      },
      [self](purge_atom, const std::string& queue,
             purge_request& req) -> caf::result<purge_reply> {
        auto it = self->state.queues.find(queue);
        if (req.below && req.below->value < 0)
          return failed<purge_reply>(
              make_error(errc::invalid_argument, "purge: offset must be >= 0"));
        if (it == self->state.queues.end())
          return failed<purge_reply>(
              name_refusal(self, queue).value_or(queue_not_found()));
        return self->delegate(it->second, purge_atom::value, std::move(req));
      },
      [self](list_atom) {
        std::vector<std::string> names;
        for (auto& [name, _] : self->state.queues)
          names.push_back(name);
        return names;
      },
      [self](dlq_list_atom, const core::dlq_query& q) {
        return on_dlq_list(self, q);
      },
      [self](requeue_atom, const core::dlq_filter& f) {
        return on_requeue(self, f);
      },
      [self](dlq_del_atom, const core::dlq_filter& f) {
        return on_dlq_delete(self, f);
      },
      [self](txn_atom, core::txn_request& req) -> caf::result<txn_reply> {
        if (auto unknown = locate_txn_acks(self, req))
          return txn_reply{std::move(*unknown), std::nullopt};
        if (auto why = txn_slot(self, req))
          return failed<txn_reply>(*why);
        return run_transaction(self, std::move(req));
      },
      [self](seek_atom, const std::string& queue, seek_request& req) {
        return on_seek(self, queue, req);
      },
      [self](sub_update_atom, const std::string& group, storage::micros ts) {
        return on_sub_update(self, group, ts);
      },
      [self](slot_atom, std::uint16_t s, std::uint64_t epoch) {
        on_slot(self, s, epoch);
      },
  };
}

} // namespace broker_detail

expected<void> check_pop(const config::pop_limits& limits,
                         queue_pop_request& req) {
  auto bytes = core::check_pop(
      limits, {.group = req.group,
               .partition = req.partition ? &*req.partition : nullptr,
               .batch = req.batch,
               .partitions = req.partitions,
               .wait = req.wait,
               .timeout = req.timeout,
               .max_bytes = req.max_bytes});
  if (!bytes)
    return std::move(bytes).err();
  req.max_bytes = *bytes;
  return {};
}

expected<void> broker_config::validate() const {
  return node.validate("broker");
}

expected<broker_actor> spawn_broker(caf::actor_system& sys, broker_config cfg) {
  SPOOL_TRY(cfg.validate());
  if (cfg.slots && cfg.slots->slots() != cfg.node.store.slot_count())
    return make_error(errc::invalid_argument, "broker: the store has ",
                      cfg.node.store.slot_count(), " slots, the cluster ",
                      cfg.slots->slots());
  if (cfg.slots) // loaded slot by slot as this node starts serving them
    return sys.spawn(broker_detail::broker, std::move(cfg), storage::catalog{});
  auto cat = cfg.node.store.load_catalog();
  if (!cat)
    return std::move(cat).err();
  return sys.spawn(broker_detail::broker, std::move(cfg), std::move(*cat));
}

} // namespace spool::actors
