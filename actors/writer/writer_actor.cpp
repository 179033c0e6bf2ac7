// Message flow: callers `request(writer, write_atom, batch)`. The writer
// queues the batch with its response promise; when no commit runs it starts
// one at once with everything queued (one LMDB transaction, one sync), on the
// committer, which says `flush_atom(id)` when the commit ended. Batches that
// arrive during a commit wait in the queue and form the next group, started
// as soon as the commit ends.
//
// Durability (issue 35): a committed group is handed to the durability
// policy with the highest seq it numbered in each slot, and the writer starts
// the next commit without waiting for it. The group's answers are released
// once the policy says it is durable (`durable_atom(id)`, or at once when the
// policy answers inline, as the local one does), in commit order, so answers
// leave in seq order per slot; then `marks` is raised, and readers waiting
// for a seq (`durable_atom(slot, seq)`) are answered.
//
// Bounds (issue 11): at most `max_pending` batches wait for the disk or for
// durability (more are refused at once with `unavailable`; an empty batch, a
// restart's barrier, never is); a batch that waited `stall_timeout` without
// its commit starting fails with `unavailable` ("storage stalled"), and while
// a commit runs longer than that new batches are refused at once. Refused and
// failed batches were never handed to LMDB. A batch being committed is
// answered when its commit ends and is durable, however long that takes (its
// outcome is unknown until then). The one stall timer (`timeout_atom` with an
// id) is armed at the oldest waiting batch's deadline while a commit runs.
//
// Parts (core/writer/open_parts.hpp): a holder tells the writer of a part it
// staged (`hold_atom`); the coordinator submits it with its batch
// (`propose_atom`) or gives it up (`abort_atom`, having settled it itself).
// When the batch's answer is released, every part is settled first
// (`settled_atom` to its holder: durable, or failed with the batch), so a
// message the coordinator sends after the answer reaches each holder after
// its settle. A batch naming a part that is not open (given up, or
// submitted before) is refused whole. A batch refused, timed out or failed
// before its commit settles its parts failed; one whose outcome the stop
// leaves unknown settles them `unknown`.
//
// Stop: the exit handler waits for the running commit, commits what waits
// (synchronously), answers every group the policy holds durable and fails the
// rest as of unknown outcome, then quits. If the store is broken (a failed
// map growth), the writer answers everything with the error and quits:
// spoold then exits non-zero.

#include "actors/writer/writer_state.hpp"

#include <caf/typed_response_promise.hpp>

namespace spool::actors {

namespace writer_detail {

/// Queues `batch` (with the parts it settles) for the next commit, or
/// refuses it at once when the queue is full or the storage stalled.
caf::result<write_result> enqueue(writer_ptr self, storage::write_batch batch,
                                  std::vector<core::part_id> parts) {
  auto& st = self->state;
  auto queued_at = self->clock().now();
  // An empty batch is a barrier (supervise.hpp): never refused or timed
  // out, answered after every batch sent before it.
  bool barrier = batch.mutations.empty();
  auto waiting = st.pending.size() + st.committed_batches;
  if (!barrier && waiting >= st.cfg.max_pending)
    return refused(self, parts,
                   busy("write queue full: ", waiting,
                        " batches wait for the disk or for durability "
                        "(nothing of this one is stored)"));
  if (!barrier && !st.in_flight.empty()
      && queued_at - st.started_at > st.cfg.stall_timeout) {
    auto running = std::chrono::duration_cast<std::chrono::milliseconds>(
        queued_at - st.started_at);
    return refused(self, parts,
                   busy("storage stalled: the commit in progress has run for ",
                        running.count(),
                        " ms (nothing of this write is stored)"));
  }
  auto rp = promise_for<write_result>(self);
  st.pending.push_back({std::move(batch), rp, queued_at, std::move(parts)});
  kick(self); // at once when no commit runs
  arm(self);
  return rp.later();
}

std::vector<core::part_id> ids_of(const std::vector<part_ref>& parts) {
  std::vector<core::part_id> ids;
  ids.reserve(parts.size());
  for (auto& p : parts)
    ids.push_back(p.id());
  return ids;
}

writer_actor::behavior_type writer(writer_ptr self, writer_config cfg) {
  self->state.cfg = std::move(cfg);
  self->set_exit_handler([self](caf::exit_msg& msg) {
    on_stop(self);
    self->quit(std::move(msg.reason));
  });

  return {
      [self](write_atom, storage::write_batch& batch) {
        return enqueue(self, std::move(batch), {});
      },
      [self](hold_atom, part_ref& part) {
        self->state.parts.hold(part.id(), part.holder);
      },
      [self](propose_atom, submission& s) -> caf::result<write_result> {
        auto ids = ids_of(s.parts);
        if (!self->state.parts.submit(ids)) {
          // Only the parts open and not submitted fail with it: one that
          // another batch carries is that batch's to settle.
          tell(self, self->state.parts.drop(ids), core::part_outcome::failed);
          return write_result{make_error(
              errc::internal, "writer: a part of this write is not open (given "
                              "up, or submitted before); nothing of it is "
                              "stored")};
        }
        return enqueue(self, std::move(s.batch), std::move(ids));
      },
      [self](abort_atom, const std::vector<part_ref>& parts) {
        self->state.parts.drop(
            ids_of(parts)); // settled by the one giving them up
      },
      [self](durable_atom, std::uint16_t slot,
             std::uint64_t seq) -> caf::result<write_result> {
        auto& st = self->state;
        storage::slot_seq mark{slot, seq};
        if (slot >= st.cfg.marks->slots())
          return write_result{make_error(errc::internal, "writer: no slot ",
                                         slot, " in this store")};
        if (st.cfg.marks->covers(mark))
          return write_result{};
        if (st.readers.size() >= st.cfg.max_pending)
          return write_result{busy("too many answers wait for durability (",
                                   st.readers.size(), "): retry")};
        auto rp = promise_for<write_result>(self);
        st.readers.push_back({mark, rp});
        return rp.later();
      },
      [self](flush_atom) { kick(self); },
      [self](flush_atom, std::uint64_t id) { committed(self, id); },
      [self](durable_atom, std::uint64_t id) { on_durable(self, id); },
      [self](timeout_atom, std::uint64_t id) { on_stall_timer(self, id); },
  };
}

} // namespace writer_detail

expected<void> writer_config::validate() const {
  if (env == nullptr)
    return make_error(errc::invalid_argument, "writer: no storage environment");
  if (max_group_bytes == 0)
    return make_error(errc::invalid_argument,
                      "writer: max_group_bytes must be positive");
  if (max_pending == 0)
    return make_error(errc::invalid_argument,
                      "writer: max_pending must be positive");
  if (stall_timeout.count() <= 0)
    return make_error(errc::invalid_argument,
                      "writer: stall_timeout must be positive");
  return {};
}

expected<writer_actor> spawn_writer(caf::actor_system& sys, writer_config cfg,
                                    bool threaded) {
  if (auto ok = cfg.validate(); !ok)
    return std::move(ok).err();
  if (!cfg.commits)
    cfg.commits
        = threaded ? thread_committer(*cfg.env) : inline_committer(*cfg.env);
  if (!cfg.durability)
    cfg.durability = local_durability();
  if (!cfg.marks) {
    auto marks = durable_marks::of(*cfg.env);
    if (!marks)
      return make_error(errc::internal, "writer: ", marks.err().message);
    cfg.marks = std::move(*marks);
  }
  // Threaded, the actor has a thread of its own too: queueing, answering
  // and the committer's wake-ups stay off the scheduler's workers.
  if (threaded)
    return sys.spawn<caf::detached>(writer_detail::writer, std::move(cfg));
  return sys.spawn(writer_detail::writer, std::move(cfg));
}

} // namespace spool::actors
