// A queue's seek: every partition staged (each stage a part the writer
// settles), one write, then the answer.

#include "actors/queue/queue_state.hpp"

#include <algorithm>

namespace spool::actors::queue_detail {

// -- seek ---------------------------------------------------------------------

namespace {

/// One seek in progress: its partitions staged one after the other.
struct seek_run {
  seek_request req;
  std::vector<std::string> names; ///< by partition uuid (`on_seek`)
  std::vector<partition_actor> parts;
  std::vector<seek_stage> staged; ///< per partition, as far as staged
  std::vector<bool> opened;       ///< per stage: open (`stages`)
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

/// Ends every stage of the run: gives up the parts not submitted (the
/// cursors and partitions hear `failed` now; submitted ones the writer
/// settled before its answer) and closes the stages counted here.
void close_seek(queue_ptr self, seek_run& run) {
  for (std::size_t i = 0; i < run.staged.size(); ++i)
    if (run.opened[i]) {
      abort_parts(self, self->state.cfg.node.writer,
                  std::exchange(run.staged[i].parts, {}));
      run.opened[i] = false; // closed once
      stage_closed(self, run.names[i]);
    }
}

/// The stage of partition `i` arrived: counted open here until closed.
void opened(queue_ptr self, seek_run& run, seek_stage stage) {
  auto i = run.staged.size();
  run.opened.push_back(!stage.parts.empty());
  if (!stage.parts.empty())
    self->state.stages.opened(run.names[i]);
  run.staged.push_back(std::move(stage));
}

void fail_seek(queue_ptr self, seek_run& run, api_error err) {
  close_seek(self, run);
  seek_reply reply;
  reply.failure = std::move(err);
  answer_seek(self, run, std::move(reply));
}

/// Every partition is staged: writes the records in one batch (nothing for
/// a dry run), settles, wakes parked pops and answers.
void commit_seek(queue_ptr self, std::shared_ptr<seek_run> run) {
  auto& st = self->state;
  seek_reply reply;
  submission sub;
  auto& batch = sub.batch;
  reply.positions.reserve(run->names.size());
  batch.mutations.reserve(run->names.size() + 1);
  for (std::size_t i = 0; i < run->names.size(); ++i) {
    auto& stage = run->staged[i];
    reply.positions.push_back({run->names[i], stage.before, stage.after});
    if (stage.record)
      batch.mutations.emplace_back(std::move(*stage.record));
    for (auto& p : std::exchange(stage.parts, {}))
      sub.parts.push_back(std::move(p));
  }
  std::sort(reply.positions.begin(), reply.positions.end(),
            [](auto& a, auto& b) { return a.partition < b.partition; });
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
    } else { // candidates again for the group's next pops
      for (auto& name : run->names)
        self->state.candidates.add(run->req.group,
                                   self->state.partitions.at(name).index);
    }
    // The writer settled every cursor and partition before this answer:
    // any pop that follows reaches each cursor after its settle, and so do
    // the wakes of parked pops.
    close_seek(self, *run);
    if (!failure)
      wake_for(self, run->names, run->req.group);
    answer_seek(self, *run, std::move(reply));
  };
  propose_then(self, st.cfg.node.writer, st.cfg.node.term, std::move(sub),
               std::move(done));
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
            opened(self, *run, std::move(stage));
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
/// partition after the other in uuid order instead (`seek_step`), the
/// order transactions use, so the two never wait for each other in a cycle.
void seek_all(queue_ptr self, std::shared_ptr<seek_run> run) {
  fan_out<seek_stage>(
      self, run->parts,
      [self, run](std::vector<fanned<seek_stage>> stages) {
        std::optional<api_error> failure;
        bool busy = false;
        run->staged.clear();
        run->opened.clear();
        run->staged.reserve(stages.size());
        for (auto& s : stages) {
          auto stage = or_failed(s);
          busy = busy || stage.busy;
          if (stage.failure && !failure)
            failure = stage.failure;
          opened(self, *run, std::move(stage));
        }
        if (failure)
          return fail_seek(self, *run, std::move(*failure));
        if (busy) {
          close_seek(self, *run);
          run->staged.clear();
          run->opened.clear();
          return seek_step(self, run);
        }
        commit_seek(self, run);
      },
      seek_atom::value, run->req.group, run->req.target, run->req.dry_run,
      true);
}

} // namespace

caf::result<seek_reply> on_seek(queue_ptr self, seek_request& req) {
  auto& st = self->state;
  if (auto rule = core::seek_rule_of(req.target); !rule)
    return failed<seek_reply>(rule.err());
  auto run = std::make_shared<seek_run>();
  std::vector<partition_entry*> chosen;
  for (auto& [name, p] : st.partitions)
    if (!req.partition || name == *req.partition)
      chosen.push_back(&p);
  // In uuid order: the order a transaction stages a queue's cursors in
  // (core::plan_txn; the wire names its partitions by uuid).
  std::sort(chosen.begin(), chosen.end(),
            [](auto* a, auto* b) { return a->rec.uuid < b->rec.uuid; });
  for (auto* p : chosen) {
    run->names.push_back(p->rec.name);
    run->parts.push_back(live(self, *p));
  }
  if (run->parts.empty())
    return failed<seek_reply>(
        req.partition ? make_error(errc::not_found, "Partition not found")
                      : make_error(errc::not_found,
                                   "Queue not found or has no partitions"));
  run->rp = promise_for<seek_reply>(self);
  run->req = std::move(req);
  // A group's seeks, registration and deletions on this queue run one at a
  // time: a registration never overwrites the record a seek wrote.
  group_gate(self, run->req.group).wait([self, run] {
    group_gate(self, run->req.group).enter();
    run->gated = true;
    seek_all(self, run);
  });
  return run->rp.later();
}

} // namespace spool::actors::queue_detail
