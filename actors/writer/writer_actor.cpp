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

/// Where a commit's report waits for the writer (set on the committer's
/// thread, read by the writer after its wake-up, or at its stop).
struct report_slot {
  std::mutex mtx;
  std::optional<commit_report> report;
};

struct writer_state {
  static inline const char* name = "spool.writer";
  struct pending_batch {
    storage::write_batch batch;
    actors::promise<write_result> promise;
    caf::actor_clock::time_point queued_at;
    std::vector<core::part_id> parts;
  };
  /// A committed group waiting for its durability policy.
  struct committed_group {
    std::uint64_t id = 0;
    std::vector<actors::promise<write_result>> promises;
    std::vector<std::vector<core::part_id>> parts; ///< per batch
    std::vector<storage::expected<void>> results;
    std::vector<storage::slot_seq> marks;
    bool durable = false;
  };
  /// A reader waiting for seq `mark.seq` of a slot.
  struct reader {
    storage::slot_seq mark;
    actors::promise<write_result> promise;
  };
  writer_config cfg;
  std::deque<pending_batch> pending;
  /// The group being committed, its id and start time.
  std::vector<pending_batch> in_flight;
  std::uint64_t group_id = 0;
  caf::actor_clock::time_point started_at;
  std::shared_ptr<report_slot> slot = std::make_shared<report_slot>();
  /// Committed groups not yet answered, in commit order, and their batches.
  std::deque<committed_group> committed;
  std::size_t committed_batches = 0;
  std::vector<reader> readers;
  /// Parts held open until settled.
  core::open_parts<caf::actor_addr> parts;
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

void arm(writer_ptr self);

/// Sends each part's holder the outcome.
void tell(writer_ptr self,
          const std::vector<core::open_parts<caf::actor_addr>::closed>& parts,
          core::part_outcome outcome) {
  for (auto& p : parts)
    if (auto h = caf::actor_cast<part_holder>(p.holder))
      self->send(h, settled_atom::value, p.id.key, outcome);
}

/// Settles the parts of a batch (those still open) with `outcome`.
void settle(writer_ptr self, const std::vector<core::part_id>& parts,
            core::part_outcome outcome) {
  if (!parts.empty())
    tell(self, self->state.parts.close(parts), outcome);
}

/// The answer to a batch that never reached LMDB: its parts fail with it.
write_result refused(writer_ptr self, const std::vector<core::part_id>& parts,
                     api_error err) {
  settle(self, parts, core::part_outcome::failed);
  return write_result{std::move(err)};
}

/// Answers a batch that never reached LMDB: its parts fail with it.
void refuse(writer_ptr self, writer_state::pending_batch& b, api_error err) {
  b.promise.deliver(refused(self, b.parts, std::move(err)));
}

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
  st.cfg.commits->start(std::move(batches),
                        [slot = st.slot, handle, id](commit_report r) {
                          {
                            std::lock_guard<std::mutex> guard{slot->mtx};
                            slot->report = std::move(r);
                          }
                          caf::anon_send(handle, flush_atom::value, id);
                        });
  arm(self);
}

/// Answers the committed groups the policy holds durable, oldest first, up
/// to the first that is not; raises the marks and answers the readers they
/// now cover.
void release(writer_ptr self) {
  auto& st = self->state;
  while (!st.committed.empty() && st.committed.front().durable) {
    auto g = std::move(st.committed.front());
    st.committed.pop_front();
    st.committed_batches -= g.promises.size();
    st.cfg.marks->raise(g.marks);
    for (std::size_t i = 0; i < g.promises.size(); ++i) {
      write_result r;
      if (i >= g.results.size())
        r.failure = make_error(errc::internal, "writer: commit gave no result");
      else if (!g.results[i])
        r.failure = g.results[i].err();
      settle(self, g.parts[i],
             r.ok() ? core::part_outcome::durable : core::part_outcome::failed);
      g.promises[i].deliver(std::move(r));
    }
  }
  std::erase_if(st.readers, [&](writer_state::reader& r) {
    if (!st.cfg.marks->covers(r.mark))
      return false;
    r.promise.deliver(write_result{});
    return true;
  });
}

/// Group `id` is durable.
void on_durable(writer_ptr self, std::uint64_t id) {
  for (auto& g : self->state.committed)
    if (g.id == id)
      g.durable = true;
  release(self);
}

/// Hands the ended commit `id` of `group` to the durability policy, which
/// may declare it durable inline (the local one) or later, by message.
void hand_to_policy(writer_ptr self, std::uint64_t id,
                    std::vector<writer_state::pending_batch> group,
                    commit_report report) {
  auto& st = self->state;
  writer_state::committed_group g{
      id, {}, {}, std::move(report.results), report.marks(), false};
  g.promises.reserve(group.size());
  g.parts.reserve(group.size());
  for (auto& b : group) {
    g.promises.push_back(std::move(b.promise));
    g.parts.push_back(std::move(b.parts));
  }
  st.committed_batches += g.promises.size();
  auto marks = g.marks;
  st.committed.push_back(std::move(g));
  // 0: undecided, 1: the policy answered inline, 2: it will send.
  auto phase = std::make_shared<std::atomic<int>>(0);
  auto handle = caf::actor_cast<writer_actor>(self);
  st.cfg.durability->committed(std::move(marks), [phase, handle, id] {
    int expected = 0;
    if (!phase->compare_exchange_strong(expected, 1))
      caf::anon_send(handle, durable_atom::value, id);
  });
  int expected = 0;
  if (!phase->compare_exchange_strong(expected, 2))
    on_durable(self, id);
}

/// Answers every batch and reader still waiting with `err`.
void fail_waiting(writer_ptr self, const api_error& err) {
  auto& st = self->state;
  for (auto& p : st.pending) // never started
    refuse(self, p, err);
  st.pending.clear();
  for (auto& g : st.committed) // committed, perhaps stored
    for (std::size_t i = 0; i < g.promises.size(); ++i) {
      settle(self, g.parts[i], core::part_outcome::unknown);
      g.promises[i].deliver(write_result{err});
    }
  st.committed.clear();
  st.committed_batches = 0;
  for (auto& r : st.readers)
    r.promise.deliver(write_result{err});
  st.readers.clear();
}

/// Fails every batch broken storage can no longer take, and stops.
bool stop_if_broken(writer_ptr self) {
  auto& st = self->state;
  if (!st.cfg.env->broken())
    return false;
  fail_waiting(self, make_error(errc::internal,
                                "storage unusable: the LMDB map is gone after "
                                "a failed growth"));
  self->quit(caf::make_error(caf::sec::runtime_error, "storage unusable"));
  return true;
}

/// The commit of group `id` ended: hands it to the durability policy (the
/// local one answers it inline), then starts the next group, which never
/// waits for this one's durability.
void committed(writer_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.group_id || st.in_flight.empty())
    return;
  commit_report report;
  {
    std::lock_guard<std::mutex> guard{st.slot->mtx};
    if (!st.slot->report)
      return; // not ended yet (a stale wake-up)
    report = std::move(*st.slot->report);
    st.slot->report.reset();
  }
  auto group = std::move(st.in_flight);
  st.in_flight.clear();
  // Handed over first: its answers (its batches' own errors, when the map
  // broke) come before the failure of what waits behind it.
  hand_to_policy(self, id, std::move(group), std::move(report));
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
    refuse(self, *it,
           busy("storage stalled: the write waited ", waited.count(),
                " ms for the commit in progress and was not started (nothing "
                "of it is stored)"));
    it = st.pending.erase(it);
  }
  arm(self);
}

/// The stop: ends the running commit, commits what waits, answers what is
/// durable and fails the rest as of unknown outcome.
void on_stop(writer_ptr self) {
  auto& st = self->state;
  st.stopping = true; // `committed` below starts no new group
  st.cfg.commits->wait_idle();
  if (!st.in_flight.empty())
    committed(self, st.group_id);
  if (!st.pending.empty() && !st.cfg.env->broken()) {
    std::vector<const storage::write_batch*> batches;
    for (auto& p : st.pending)
      batches.push_back(&p.batch);
    commit_report report;
    report.results
        = storage::commit_group(*st.cfg.env, batches, &report.numbers);
    std::vector<writer_state::pending_batch> rest(
        std::make_move_iterator(st.pending.begin()),
        std::make_move_iterator(st.pending.end()));
    st.pending.clear();
    hand_to_policy(self, ++st.group_id, std::move(rest), std::move(report));
  }
  if (st.cfg.env->broken())
    fail_waiting(self, make_error(errc::internal,
                                  "storage unusable: the LMDB map is gone "
                                  "after a failed growth"));
  fail_waiting(self, busy("the node stopped before the write was durable: "
                          "its outcome is unknown"));
}

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
        std::vector<core::part_id> ids;
        ids.reserve(s.parts.size());
        for (auto& p : s.parts)
          ids.push_back(p.id());
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
        std::vector<core::part_id> ids;
        for (auto& p : parts)
          ids.push_back(p.id());
        self->state.parts.drop(ids); // settled by the one giving them up
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
  if (!cfg.marks) {
    auto marks = durable_marks::of(*cfg.env);
    if (!marks)
      return make_error(errc::internal, "writer: ", marks.err().message);
    cfg.marks = std::move(*marks);
  }
  // Threaded, the actor has a thread of its own too: queueing, answering
  // and the committer's wake-ups stay off the scheduler's workers.
  if (threaded)
    return sys.spawn<caf::detached>(writer, std::move(cfg));
  return sys.spawn(writer, std::move(cfg));
}

} // namespace spool::actors
