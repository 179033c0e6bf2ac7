// A queue's seek: every partition staged, one write, answer then settle.

#include "actors/queue/queue_state.hpp"

namespace spool::actors::queue_detail {

// -- seek ---------------------------------------------------------------------

/// The partitions (`indices`, named `names`) became candidates for the
/// group's next pops again; its parked pops there are woken at once unless
/// `wake_now` is false (the caller wakes them later).
void made_candidates(queue_ptr self, const std::string& group,
                     const std::vector<std::size_t>& indices,
                     const std::vector<std::string>& names, bool wake_now) {
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

} // namespace spool::actors::queue_detail
