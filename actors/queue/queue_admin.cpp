// A queue's administration: listings, group deletion, groupIdleSeconds, queue
// deletion, purge and the subscription update.

#include "actors/queue/queue_state.hpp"

namespace spool::actors::queue_detail {

// -- administration -----------------------------------------------------------

/// Every partition actor, in ring (creation) order.
std::vector<partition_actor> all_partitions(queue_ptr self) {
  std::vector<partition_actor> out;
  for (auto& name : self->state.ring)
    out.push_back(live(self, self->state.partitions.at(name)));
  return out;
}

caf::result<groups_reply> on_groups(queue_ptr self, const groups_request& req) {
  auto rp = promise_for<groups_reply>(self);
  std::vector<partition_actor> asked;
  if (req.partition) {
    if (auto it = self->state.partitions.find(*req.partition);
        it != self->state.partitions.end())
      asked.push_back(live(self, it->second));
  } else {
    asked = all_partitions(self);
  }
  fan_out<std::vector<cursor_info>>(
      self, std::move(asked),
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

namespace {

void delete_group_now(queue_ptr self, const delete_group_request& req,
                      std::function<void(delete_group_reply)> done) {
  fan_out<vote_reply>(
      self, all_partitions(self),
      [self, done, req](std::vector<fanned<vote_reply>> votes) mutable {
        auto& st = self->state;
        auto q = st.cfg.record.id;
        // A partition that died with a stage open cannot vote, and that
        // stage may still write the group's row there: restarting. The
        // cursors the votes stopped are parts of the deletion's batch.
        std::vector<std::optional<delete_vote>> answers;
        std::vector<bool> open;
        submission sub;
        for (std::size_t i = 0; i < votes.size(); ++i) {
          auto& v = votes[i].reply;
          answers.push_back(v ? std::optional{v->vote} : std::nullopt);
          open.push_back(st.stages.is_open(st.ring[i]));
          if (v && v->part)
            sub.parts.push_back(std::move(*v->part));
        }
        auto verdict = core::fold_votes(answers, open);
        using outcome = core::deletion_verdict::outcome;
        auto& writer = st.cfg.node.writer;
        if (verdict.result != outcome::go) { // the idle sweep's guard
          abort_parts(self, writer, std::move(sub.parts)); // they serve again
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
        delete_group_reply reply;
        reply.deleted_partitions = verdict.rows.size();
        // The queue holds its groups' records as stored (behind the
        // group's gate, as here).
        reply.metadata_deleted
            = req.delete_metadata && st.subs.contains(req.group);
        std::vector<storage::partition_id> rows;
        for (auto i : verdict.rows)
          rows.push_back(st.partitions.at(st.ring[i]).rec.id);
        auto muts = [&]() -> storage::expected<std::vector<storage::mutation>> {
          if (rows.empty() && !reply.metadata_deleted)
            return std::vector<storage::mutation>{}; // nothing to read
          auto t = st.cfg.node.store.read();
          if (!t)
            return std::move(t).err();
          return core::deletion_mutations(*t, q, req.group, rows,
                                          reply.metadata_deleted);
        }();
        if (!muts) {
          abort_parts(self, writer, std::move(sub.parts)); // they serve again
          done(delete_group_reply{0, false, storage::to_api(muts.err())});
          return;
        }
        auto& batch = sub.batch;
        batch.mutations = std::move(*muts);
        auto settle = [self, done, req,
                       reply](std::optional<api_error> failure) mutable {
          if (failure) {
            done(delete_group_reply{0, false, std::move(failure)});
            return;
          }
          self->state.rotation.forget(req.group);
          self->state.candidates.forget(req.group);
          if (req.delete_metadata)
            self->state.subs.erase(req.group); // the next pop registers
          // Its pops are answered empty: parked ones now, running ones
          // when their run ends (so none of them parks again).
          self->state.parked.cancel_if(
              [&](const queue_pop_request& r) { return r.group == req.group; });
          done(reply);
        };
        // Nothing to write and no cursor stopped: done. Stopped cursors
        // with no row still end once the (empty) batch is settled.
        if (batch.mutations.empty() && sub.parts.empty())
          return settle(std::nullopt);
        propose_then(self, writer, self->state.cfg.node.term, std::move(sub),
                     std::move(settle));
      },
      vote_atom::value, req.group, req.active_after);
}

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

} // namespace

caf::result<delete_group_reply>
on_delete_group(queue_ptr self, const delete_group_request& req) {
  auto rp = promise_for<delete_group_reply>(self);
  delete_group(self, req, [rp](delete_group_reply r) mutable {
    rp.deliver(std::move(r));
  });
  return rp.later();
}

// -- groupIdleSeconds ---------------------------------------------------------

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

caf::result<delete_queue_reply> on_delete_queue(queue_ptr self) {
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
      self->state.parked.cancel_if(
          [](const queue_pop_request&) { return true; }); // answered empty
      rp.deliver(delete_queue_reply{true, std::nullopt});
      // The broker sends nothing more here. Requests still in flight finish
      // (their writes now fail: the queue is gone) and are answered; after
      // a grace period the queue quits, and its linked partitions and
      // cursors with it.
      self->delayed_send(self, deleted_queue_grace, grace_atom::value,
                         std::uint64_t{0});
    };
    write_then(self, st.cfg.node.writer, st.cfg.node.term, std::move(batch),
               std::move(done));
  });
  return rp.later();
}

caf::result<purge_reply> on_purge(queue_ptr self, const purge_request& req) {
  std::vector<partition_actor> parts;
  if (req.partition) {
    auto it = self->state.partitions.find(*req.partition);
    if (it == self->state.partitions.end())
      return failed<purge_reply>(
          make_error(errc::not_found, "Partition not found"));
    parts.push_back(live(self, it->second));
  } else {
    parts = all_partitions(self);
  }
  auto rp = promise_for<purge_reply>(self);
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

// -- subscription update ------------------------------------------------------

/// The queue owns its subscription records: a subscription update (which
/// spans every queue of the group, in one write) asks each queue for its
/// part, under the group's gate (no registration, deletion or seek of the
/// group interleaves); the writer settles it with the write's outcome.
caf::result<sub_update_part>
on_sub_update(queue_ptr self, const std::string& group, storage::micros ts) {
  auto rp = promise_for<sub_update_part>(self);
  group_gate(self, group).wait([self, group, ts, rp]() mutable {
    auto& st = self->state;
    auto held = st.subs.find(group);
    if (st.deleted || held == st.subs.end())
      return rp.deliver(sub_update_part{}); // no record here
    // The queue's copy equals the stored record: it changes only once a
    // write of it is durable, behind this gate.
    auto rec = held->second;
    rec.mode = storage::subscription_mode::timestamp;
    rec.timestamp = ts;
    group_gate(self, group).enter(); // until settled
    st.sub_updates[group] = rec;
    part_ref part{self->address(),
                  {st.cfg.record.id.value, 0, group, core::part_key::sub_part}};
    self->send(st.cfg.node.writer, hold_atom::value, part);
    rp.deliver(sub_update_part{
        storage::mut::update_subscription{st.cfg.record.id, group, rec},
        std::move(part), std::nullopt});
  });
  return rp.later();
}

void settle_sub_update(queue_ptr self, const std::string& group, bool durable) {
  auto& st = self->state;
  auto it = st.sub_updates.find(group);
  if (it == st.sub_updates.end())
    return; // not held here (this incarnation's)
  auto rec = std::move(it->second);
  st.sub_updates.erase(it);
  if (durable) {
    st.subs[group] = std::move(rec);
    // Its next wildcard pops consider every partition again.
    st.candidates.forget(group);
    st.parked.wake_if(
        [&](const queue_pop_request& r) { return r.group == group; });
  }
  leave_group_gate(self, group);
}

} // namespace spool::actors::queue_detail
