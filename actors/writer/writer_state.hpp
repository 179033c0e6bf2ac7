#pragma once

// The writer's state and what its two files share (writer_actor.cpp: the
// behaviour, batches queued and parts; writer_commit.cpp: the group commit,
// durability, the stall timer, the stop). Internal to the writer.

#include "actors/promise.hpp"
#include "actors/writer/writer_actor.hpp"
#include "core/queue/one_timer.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace spool::actors::writer_detail {

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
  /// The policy's decision on a group, from any thread: the slots it
  /// lost, once decided.
  struct decision {
    std::mutex mtx;
    /// Still in the policy's `committed` call: decided inline.
    bool inline_phase = true;
    std::optional<std::vector<lost_slot>> lost;
  };
  /// A committed group waiting for its durability policy.
  struct committed_group {
    std::uint64_t id = 0;
    std::vector<pending_batch> batches; ///< their mutations let go
    /// Per batch: the error of one not stored, and its numbers.
    std::vector<std::optional<api_error>> failures;
    std::vector<std::vector<storage::slot_seq>> numbers;
    std::vector<storage::slot_seq> marks;
    /// Decided by the policy: durable, but for the slots it lost.
    bool durable = false;
    std::vector<lost_slot> lost;
    std::shared_ptr<decision> decided = std::make_shared<decision>();
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
  core::one_timer<caf::actor_clock::time_point> timer;
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

inline api_error busy(auto&&... parts) {
  return make_error(errc::unavailable, parts...);
}

/// Tells each part's holder its outcome.
void tell(writer_ptr self,
          const std::vector<core::open_parts<caf::actor_addr>::closed>& parts,
          core::part_outcome outcome);

/// The answer to a batch that never reached LMDB: its parts fail with it.
write_result refused(writer_ptr self, const std::vector<core::part_id>& parts,
                     api_error err);

/// Starts the next group if none is being committed.
void kick(writer_ptr self);

/// Keeps the stall timer at the oldest waiting batch's deadline.
void arm(writer_ptr self);

/// The commit of group `id` ended (the committer's wake-up).
void committed(writer_ptr self, std::uint64_t id);

/// The durability policy decided group `id`.
void on_durable(writer_ptr self, std::uint64_t id);

void on_stall_timer(writer_ptr self, std::uint64_t id);

/// The exit handler's work: commit what waits, answer, fail the rest.
void on_stop(writer_ptr self);

} // namespace spool::actors::writer_detail
