// Message flow: callers `request(writer, write_atom, batch)`. The writer
// queues the batch with its response promise and, if no flush is on its way,
// sends itself `flush_atom`. Mailboxes are FIFO, so every batch already in
// the mailbox is queued before the flush runs: the flush hands them all, as
// one group (one LMDB transaction, one sync), to the committer, which says
// `flush_atom(id)` when the commit ended; then each promise is delivered and
// the next group starts. Batches that arrive during a commit wait in the
// queue for the next group.
//
// Bounds (issue 11): at most `max_pending` batches wait (more are refused at
// once with `unavailable`; an empty batch, a restart's barrier, never is); a
// batch that waited `stall_timeout` without its commit starting fails with
// `unavailable`
// ("storage stalled"), and while a commit runs longer than that new batches are
// refused at once. Refused and failed batches were never handed to LMDB. A
// batch being committed is answered when its commit ends, however long that
// takes (its outcome is unknown until then). The one stall timer
// (`timeout_atom` with an id) is armed at the oldest waiting batch's deadline
// while a commit runs.
//
// Stop: the exit handler waits for the running commit, answers it, commits
// what waits (synchronously), answers that, then quits. If the store is
// broken (a failed map growth), the writer answers everything with the error
// and quits: spoold then exits non-zero.

#include "actors/writer/writer_actor.hpp"
#include "actors/promise.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "storage/group_commit.hpp"

namespace spool::actors {

namespace {

using clock_type = caf::actor_clock::clock_type;

/// Where a commit's results wait for the writer (set on the committer's
/// thread, read by the writer after its wake-up, or at its stop).
struct result_slot {
  std::mutex mtx;
  std::optional<committer::results> results;
};

struct writer_state {
  static inline const char* name = "spool.writer";
  struct pending_batch {
    storage::write_batch batch;
    actors::promise<write_result> promise;
    caf::actor_clock::time_point queued_at;
  };
  writer_config cfg;
  std::deque<pending_batch> pending;
  bool flush_scheduled = false;
  /// The group being committed, its id and start time.
  std::vector<pending_batch> in_flight;
  std::uint64_t group_id = 0;
  caf::actor_clock::time_point started_at;
  std::shared_ptr<result_slot> slot = std::make_shared<result_slot>();
  std::optional<caf::actor_clock::time_point> armed;
  std::uint64_t timer_id = 0;
  /// The stop began: no new group starts (what waits is committed by the
  /// exit handler itself).
  bool stopping = false;
  writer_state() = default;
  writer_state(const writer_state&) = delete;
  writer_state& operator=(const writer_state&) = delete;
  /// The committer reads `in_flight`'s batches: however the writer ends
  /// (its exit handler waits too), they outlive the commit.
  ~writer_state() {
    if (cfg.commits)
      cfg.commits->wait_idle();
  }
};

using writer_ptr = writer_actor::stateful_pointer<writer_state>;

api_error busy(auto&&... parts) {
  return make_error(errc::unavailable, parts...);
}

void answer(std::vector<writer_state::pending_batch>& group,
            committer::results& results) {
  for (std::size_t i = 0; i < group.size(); ++i) {
    write_result r;
    if (i >= results.size())
      r.failure = make_error(errc::internal, "writer: commit gave no result");
    else if (!results[i])
      r.failure = results[i].err();
    group[i].promise.deliver(std::move(r));
  }
  group.clear();
}

void arm(writer_ptr self);

/// Starts the next group if none is being committed.
void kick(writer_ptr self) {
  auto& st = self->state;
  if (st.stopping || !st.in_flight.empty() || st.pending.empty())
    return;
  std::size_t bytes = 0;
  while (!st.pending.empty()) {
    auto size = st.pending.front().batch.byte_size();
    if (!st.in_flight.empty() && bytes + size > st.cfg.max_group_bytes)
      break;
    bytes += size;
    st.in_flight.push_back(std::move(st.pending.front()));
    st.pending.pop_front();
  }
  std::vector<const storage::write_batch*> batches;
  batches.reserve(st.in_flight.size());
  for (auto& g : st.in_flight)
    batches.push_back(&g.batch);
  auto id = ++st.group_id;
  st.started_at = self->clock().now();
  auto handle = caf::actor_cast<writer_actor>(self);
  // Answered once the durability policy holds the group durable.
  st.cfg.commits->start(
      std::move(batches), [slot = st.slot, handle, id,
                           policy = st.cfg.durability](committer::results r) {
        policy->committed(std::move(r),
                          [slot, handle, id](committer::results durable) {
                            {
                              std::lock_guard<std::mutex> guard{slot->mtx};
                              slot->results = std::move(durable);
                            }
                            caf::anon_send(handle, flush_atom::value, id);
                          });
      });
  arm(self);
}

/// Fails every batch broken storage can no longer take, and stops.
bool stop_if_broken(writer_ptr self) {
  auto& st = self->state;
  if (!st.cfg.env->broken())
    return false;
  auto err = make_error(errc::internal,
                        "storage unusable: the LMDB map is gone after "
                        "a failed growth");
  for (auto& p : st.pending)
    p.promise.deliver(write_result{err});
  st.pending.clear();
  self->quit(caf::make_error(caf::sec::runtime_error, err.message));
  return true;
}

/// The commit of group `id` ended: answers it and starts the next one.
void committed(writer_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.group_id || st.in_flight.empty())
    return;
  committer::results results;
  {
    std::lock_guard<std::mutex> guard{st.slot->mtx};
    if (!st.slot->results)
      return; // not ended yet (a stale wake-up)
    results = std::move(*st.slot->results);
    st.slot->results.reset();
  }
  answer(st.in_flight, results);
  if (stop_if_broken(self))
    return;
  kick(self);
}

/// While a commit runs: the timer at the oldest waiting batch's deadline.
void arm(writer_ptr self) {
  auto& st = self->state;
  if (st.in_flight.empty())
    return;
  auto first = std::find_if(st.pending.begin(), st.pending.end(),
                            [](auto& p) { return !p.batch.mutations.empty(); });
  if (first == st.pending.end())
    return;
  auto due = first->queued_at + st.cfg.stall_timeout;
  if (st.armed && *st.armed <= due)
    return;
  st.armed = due;
  auto delay
      = std::max(due - self->clock().now(), clock_type::duration::zero());
  self->delayed_send(self, delay, timeout_atom::value, ++st.timer_id);
}

/// Fails the batches that waited `stall_timeout` without being started.
void on_stall_timer(writer_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.timer_id)
    return;
  st.armed.reset();
  auto now = self->clock().now();
  for (auto it = st.pending.begin(); it != st.pending.end();) {
    if (it->queued_at + st.cfg.stall_timeout > now)
      break;                           // queued in order: the rest waited less
    if (it->batch.mutations.empty()) { // a barrier waits for its turn
      ++it;
      continue;
    }
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        now - it->queued_at);
    it->promise.deliver(write_result{busy(
        "storage stalled: the write waited ", waited.count(),
        " ms for the commit in progress and was not started (nothing of it "
        "is stored)")});
    it = st.pending.erase(it);
  }
  arm(self);
}

writer_actor::behavior_type writer(writer_ptr self, writer_config cfg) {
  self->state.cfg = std::move(cfg);
  // Stopped: the running commit ends and is answered, then what waits is
  // committed and answered, before the writer quits (their flush message
  // would come after the stop).
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    st.stopping = true; // `committed` below starts no new group
    st.cfg.commits->wait_idle();
    if (!st.in_flight.empty())
      committed(self, st.group_id);
    if (!st.pending.empty() && !st.cfg.env->broken()) {
      std::vector<const storage::write_batch*> batches;
      for (auto& p : st.pending)
        batches.push_back(&p.batch);
      auto results = storage::commit_group(*st.cfg.env, batches);
      std::vector<writer_state::pending_batch> rest(
          std::make_move_iterator(st.pending.begin()),
          std::make_move_iterator(st.pending.end()));
      st.pending.clear();
      // (The local policy answers within the call, before the quit.)
      st.cfg.durability->committed(
          std::move(results),
          [&rest](committer::results durable) { answer(rest, durable); });
    }
    stop_if_broken(self);
    self->quit(std::move(msg.reason));
  });
  return {
      [self](write_atom, storage::write_batch& batch)
          -> caf::typed_response_promise<write_result> {
        auto& st = self->state;
        auto rp = promise_for<write_result>(self);
        auto now = self->clock().now();
        // An empty batch is a barrier (supervise.hpp): never refused or
        // timed out, answered after every batch sent before it.
        bool barrier = batch.mutations.empty();
        if (!barrier && st.pending.size() >= st.cfg.max_pending) {
          rp.deliver(write_result{
              busy("write queue full: ", st.pending.size(),
                   " batches wait for the disk (nothing of this one is "
                   "stored)")});
          return rp.later();
        }
        if (!barrier && !st.in_flight.empty()
            && now - st.started_at > st.cfg.stall_timeout) {
          auto running = std::chrono::duration_cast<std::chrono::milliseconds>(
              now - st.started_at);
          rp.deliver(write_result{
              busy("storage stalled: the commit in progress has run for ",
                   running.count(), " ms (nothing of this write is stored)")});
          return rp.later();
        }
        st.pending.push_back({std::move(batch), rp, now});
        if (!st.flush_scheduled) {
          st.flush_scheduled = true;
          self->send(self, flush_atom::value);
        }
        arm(self);
        return rp.later();
      },
      [self](flush_atom) {
        self->state.flush_scheduled = false;
        kick(self);
      },
      [self](flush_atom, std::uint64_t id) { committed(self, id); },
      [self](timeout_atom, std::uint64_t id) { on_stall_timer(self, id); },
  };
}

} // namespace

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
  // Threaded, the actor has a thread of its own too: queueing, answering
  // and the committer's wake-ups stay off the scheduler's workers.
  if (threaded)
    return sys.spawn<caf::detached>(writer, std::move(cfg));
  return sys.spawn(writer, std::move(cfg));
}

} // namespace spool::actors
