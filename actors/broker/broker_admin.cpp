// The broker's administration: configure, listings, group and queue deletion
// (with the bounded reaping of a deleted queue's rows); seek routing and the
// subscription update (purge is routed in broker_actor.cpp's behaviour).

#include "actors/broker/broker_state.hpp"
#include "actors/durable.hpp"
#include "actors/promise.hpp"

namespace spool::actors::broker_detail {

// -- configure ----------------------------------------------------------------

namespace {

void configure_now(broker_ptr self, configure_request& req,
                   promise<configure_reply> rp) {
  auto& st = self->state;
  auto fail = [&rp](api_error err) mutable {
    rp.deliver(failed<configure_reply>(std::move(err)));
  };
  // Again after the gate: the slot may have stopped (or be loading) since.
  if (auto why = name_refusal(self, req.queue))
    return fail(*why);
  if (auto it = st.queues.find(req.queue); it != st.queues.end()) {
    self->request(it->second, caf::infinite, configure_atom::value,
                  std::move(req))
        .then(
            [self, rp](configure_reply& r) mutable {
              auto name = r.queue.name;
              bool ok = !r.failure;
              if (ok)
                self->state.records[name] = r.queue;
              rp.deliver(std::move(r));
              if (ok) // it may now be in the namespace of a parked pop
                wake(self, {name});
            },
            [rp](caf::error& err) mutable {
              rp.deliver(failed<configure_reply>(unreachable(err)));
            });
    return;
  }
  auto opts = core::apply_options(storage::queue_options{}, req.options,
                                  st.cfg.node.encryption_keys != nullptr);
  if (!opts)
    return fail(opts.err());
  auto rec = new_queue_record(self, req.queue);
  rec.options = std::move(*opts);
  if (req.name_space)
    rec.name_space = *req.name_space;
  if (req.task)
    rec.task = *req.task;
  auto part = new_partition_record(st.cfg.node, rec.id, default_partition);
  storage::write_batch batch;
  batch.mutations.emplace_back(storage::mut::create_queue{rec});
  batch.mutations.emplace_back(storage::mut::create_partition{part});
  st.gate.enter();
  auto term = slot_term(self, slot_of_id(rec.id.value));
  auto done = [self, rp, rec, part](std::optional<api_error> failure) mutable {
    if (!failure)
      if (auto ok = add_queue(self, rec, {part}); !ok)
        failure = ok.err();
    configure_reply reply;
    if (failure) {
      reply.failure = std::move(failure);
    } else {
      reply.queue = rec;
      reply.default_partition_uuid = part.uuid;
      reply.created = true;
    }
    rp.deliver(std::move(reply));
    self->state.gate.leave();
  };
  write_then(self, st.cfg.node.writer, term, std::move(batch), std::move(done));
}

/// The queue actors a request names (one, or all when none is named).
std::vector<queue_actor> queues_named(broker_ptr self,
                                      const std::optional<std::string>& only) {
  std::vector<queue_actor> out;
  for (auto& [name, q] : self->state.queues)
    if (!only || name == *only)
      out.push_back(q);
  return out;
}

} // namespace

caf::result<configure_reply> on_configure(broker_ptr self,
                                          configure_request& req) {
  if (auto ok = core::check_name(core::name_kind::queue, req.queue); !ok)
    return failed<configure_reply>(ok.err());
  if (auto why = name_refusal(self, req.queue))
    return failed<configure_reply>(*why);
  auto rp = promise_for<configure_reply>(self);
  self->state.gate.wait([self, req = std::move(req), rp]() mutable {
    configure_now(self, req, rp);
  });
  return rp.later();
}

// -- administration -----------------------------------------------------------

queues_reply describe(broker_ptr self, const std::optional<std::string>& only) {
  queues_reply reply;
  if (only)
    if (auto why = name_refusal(self, *only)) {
      reply.failure = std::move(why);
      return reply;
    }
  auto served = served_slots(self); // a cluster node lists what it leads
  auto t = self->state.cfg.node.store.read();
  if (!t) {
    reply.failure = t.err();
    return reply;
  }
  auto qs = storage::tables::all_queues(*t);
  auto ps = storage::tables::all_partitions(*t);
  if (!qs || !ps) {
    reply.failure = !qs ? qs.err() : ps.err();
    return reply;
  }
  for (auto& q : *qs) {
    if ((only && q.name != *only)
        || !std::binary_search(served.begin(), served.end(),
                               slot_of_id(q.id.value)))
      continue;
    queue_info info{q, {}};
    for (auto& p : *ps)
      if (p.queue == q.id)
        info.partitions.push_back(p);
    std::sort(info.partitions.begin(), info.partitions.end(),
              [](auto& a, auto& b) { return a.id.value < b.id.value; });
    reply.queues.push_back(std::move(info));
  }
  std::sort(reply.queues.begin(), reply.queues.end(),
            [](auto& a, auto& b) { return a.record.name < b.record.name; });
  if (only && reply.queues.empty())
    reply.failure = queue_not_found();
  return reply;
}

caf::result<groups_reply> on_groups(broker_ptr self,
                                    const groups_request& req) {
  if (req.queue && !self->state.queues.contains(*req.queue))
    if (auto why = name_refusal(self, *req.queue))
      return failed<groups_reply>(*why);
  auto rp = promise_for<groups_reply>(self);
  fan_out<groups_reply>(
      self, queues_named(self, req.queue),
      [rp](std::vector<fanned<groups_reply>> slots) mutable {
        rp.deliver(
            fold_replies(slots, [](groups_reply& out, groups_reply& part) {
              for (auto& c : part.cursors)
                out.cursors.push_back(std::move(c));
            }));
      },
      groups_atom::value, req);
  return rp.later();
}

caf::result<delete_group_reply>
on_delete_group(broker_ptr self, const delete_group_request& req) {
  if (auto ok = core::check_name(core::name_kind::group, req.group); !ok)
    return failed<delete_group_reply>(ok.err());
  if (req.queue && !self->state.queues.contains(*req.queue))
    if (auto why = name_refusal(self, *req.queue))
      return failed<delete_group_reply>(*why);
  auto rp = promise_for<delete_group_reply>(self);
  fan_out<delete_group_reply>(
      self, queues_named(self, req.queue),
      [rp](std::vector<fanned<delete_group_reply>> slots) mutable {
        rp.deliver(fold_replies(slots, [](delete_group_reply& out,
                                          const delete_group_reply& part) {
          out.deleted_partitions += part.deleted_partitions;
          out.metadata_deleted = out.metadata_deleted || part.metadata_deleted;
        }));
      },
      delete_atom::value, req);
  return rp.later();
}

/// One bounded step of removing deleted queue `q`'s rows (one write;
/// other writes go between steps); the next step follows until the queue's
/// doomed mark is gone. A failed step changes nothing and is retried after
/// `reap_retry`; a restart resumes from the doomed marks.
constexpr auto reap_retry = std::chrono::seconds{1};

void reap(broker_ptr self, storage::queue_id q) {
  // A slot no longer served here: its next leader resumes from the doomed
  // mark.
  if (slot_refusal(self, slot_of_id(q.value)))
    return;
  auto& node = self->state.cfg.node;
  storage::write_batch batch;
  batch.mutations.emplace_back(storage::mut::sweep_queue{q, node.sweep_step});
  write_then(
      self, node.writer, slot_term(self, slot_of_id(q.value)), std::move(batch),
      [self, q](std::optional<api_error> failure) {
        auto again = [self, q] {
          self->delayed_send(self, reap_retry, reap_atom::value, q.value);
        };
        if (failure) {
          spdlog::warn("removing the rows of deleted queue {}: {} "
                       "(retried)",
                       q.value, to_string(*failure));
          return again();
        }
        auto t = self->state.cfg.node.store.read();
        if (!t)
          return again();
        auto doomed = storage::tables::is_doomed(*t, q);
        if (!doomed)
          return again();
        if (*doomed) // more rows: the next step, after what waits
          self->send(self, reap_atom::value, q.value);
        else
          spdlog::info("deleted queue {}: every row of it is removed", q.value);
      });
}

caf::result<delete_queue_reply> on_delete_queue(broker_ptr self,
                                                const std::string& name) {
  auto rp = promise_for<delete_queue_reply>(self);
  // One at a time with queue creations: a push waiting to create the name
  // finds it gone and creates a new queue.
  self->state.gate.wait([self, rp, name]() mutable {
    auto& st = self->state;
    auto it = st.queues.find(name);
    if (it == st.queues.end()) {
      rp.deliver(delete_queue_reply{false, name_refusal(self, name)});
      return;
    }
    auto q = it->second;
    st.gate.enter();
    // The queue quits after its grace once deleted: it stays linked (the
    // broker's end ends it, so a stopping node does not wait for the grace)
    // and its own end is expected (`retiring`).
    self->request(q, caf::infinite, delete_atom::value)
        .then(
            [self, rp, name, q](delete_queue_reply& r) mutable {
              auto& st = self->state;
              auto now = st.queues.find(name);
              // Still the queue it deleted (its slot was not stopped and
              // loaded again meanwhile: then the stop retired it).
              if (!r.failure && now != st.queues.end() && now->second == q) {
                st.retiring.push_back(q.address());
                st.queues.erase(name);
                forget_queue(self, name);
                if (auto rec = st.records.find(name); rec != st.records.end()) {
                  reap(self, rec->second.id); // its rows, in bounded steps
                  st.records.erase(rec);
                }
              }
              rp.deliver(std::move(r));
              st.gate.leave();
            },
            [self, rp](caf::error& err) mutable {
              rp.deliver(delete_queue_reply{false, unreachable(err)});
              self->state.gate.leave();
            });
  });
  return rp.later();
}

// -- replay: seek and subscription update -------------------------------------

caf::result<seek_reply> on_seek(broker_ptr self, const std::string& queue,
                                seek_request& req) {
  if (auto rule = core::seek_rule_of(req.target); !rule)
    return failed<seek_reply>(rule.err());
  if (auto ok = core::check_name(core::name_kind::group, req.group); !ok)
    return failed<seek_reply>(ok.err());
  if (req.partition)
    if (auto ok = core::check_name(core::name_kind::partition, *req.partition);
        !ok)
      return failed<seek_reply>(ok.err());
  auto it = self->state.queues.find(queue);
  if (it == self->state.queues.end())
    return failed<seek_reply>(
        name_refusal(self, queue)
            .value_or(make_error(errc::not_found,
                                 "Queue not found or has no partitions")));
  return via_queue<seek_reply>(
      self, queue, it->second,
      [](const seek_reply& r) { return r.partitions_updated > 0; },
      [](caf::error& err) {
        seek_reply reply;
        reply.failure = unreachable(err);
        return reply;
      },
      seek_atom::value, std::move(req));
}

/// Sets mode `timestamp` and `ts` on every subscription record of `group`
/// (semantics.md §6), in one write, all or nothing: each queue gives its
/// record's part (queue_admin.cpp) and, once the write's outcome is known,
/// takes it (and clears the group's empty-scan watermarks) or drops it.
caf::result<sub_update_reply>
on_sub_update(broker_ptr self, const std::string& group, storage::micros ts) {
  auto& st = self->state;
  if (group.empty() || group == queue_mode_group)
    return failed<sub_update_reply>(
        make_error(errc::invalid_argument, "Queue mode has no subscription"));
  if (auto ok = core::check_name(core::name_kind::group, group); !ok)
    return failed<sub_update_reply>(ok.err());
  // Each queue owns its records: it gives its part, the broker submits
  // every part in one batch, and the writer settles each.
  std::vector<queue_actor> queues;
  std::vector<std::string> names;
  for (auto& [name, q] : st.queues) {
    queues.push_back(q);
    names.push_back(name);
  }
  auto rp = promise_for<sub_update_reply>(self);
  fan_out<sub_update_part>(
      self, queues,
      [self, rp, queues,
       names](std::vector<fanned<sub_update_part>> parts) mutable {
        std::optional<api_error> failure;
        // One batch on one node; one per slot in a cluster (semantics.md
        // §12: each slot's part is atomic, the whole is not).
        auto& st = self->state;
        std::map<slot_t, submission> subs;
        for (std::size_t i = 0; i < parts.size(); ++i) {
          auto& p = parts[i];
          if (!p.reply) {
            failure = failure.value_or(unreachable(p.error, "queue"));
            continue;
          }
          if (p.reply->failure)
            failure = failure.value_or(*p.reply->failure);
          if (p.reply->mutation) {
            // A part from a queue that died or was replaced since is stale:
            // the queue now live would not hold it.
            if (!serving(self, names[i], queues[i]))
              failure = failure.value_or(
                  make_error(errc::unavailable, "Server busy: queue ", names[i],
                             " restarted; retry"));
            slot_t key = st.cfg.slots ? st.cfg.node.store.slot_of(names[i])
                                      : slot_t{0};
            auto& sub = subs[key];
            sub.batch.mutations.emplace_back(std::move(*p.reply->mutation));
            if (p.reply->part)
              sub.parts.push_back(std::move(*p.reply->part));
          }
        }
        auto& writer = st.cfg.node.writer;
        if (failure || subs.empty()) {
          for (auto& [_, sub] : subs)
            abort_parts(self, writer, std::move(sub.parts));
          rp.deliver(sub_update_reply{0, std::move(failure)});
          return;
        }
        struct tally {
          promise<sub_update_reply> rp;
          std::size_t left = 0;
          sub_update_reply out;
        };
        auto t = std::make_shared<tally>(tally{rp, subs.size(), {}});
        bool sliced = subs.size() > 1;
        for (auto& [slot, sub] : subs) {
          auto rows = sub.batch.mutations.size();
          // Its queues' parts were checked current above: their term.
          propose_then(
              self, writer, slot_term(self, slot), std::move(sub),
              [t, rows, slot, sliced](std::optional<api_error> failure) {
                if (!failure)
                  t->out.rows_updated += rows;
                else if (!t->out.failure) {
                  t->out.failure = std::move(failure);
                  if (sliced) // which part to retry
                    t->out.failure->message = "slot " + std::to_string(slot)
                                              + ": " + t->out.failure->message;
                }
                if (--t->left == 0)
                  t->rp.deliver(std::move(t->out));
              });
        }
      },
      sub_update_atom::value, group, ts);
  return rp.later();
}

} // namespace spool::actors::broker_detail
