#pragma once

/// Deleting a consumer group from a queue (semantics.md §8) and
/// `groupIdleSeconds`: the votes of the queue's partitions folded into one
/// verdict, and which groups an idle sweep deletes. Pure: the queue actor
/// gathers the votes and cursor listings and writes what this decides.

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "storage/mutation.hpp"
#include "vocab/time.hpp"

namespace spool::core {

/// A partition's answer to the first phase of a group deletion.
struct delete_vote {
  bool had = false;    ///< the group had state here (its record is deleted)
  bool active = false; ///< refused: active after the cutoff or leased
  /// Refused because the group's cursor here is restarting with a stage
  /// open (retry later), not because it is in use.
  bool restarting = false;
};

/// What the votes decide.
struct deletion_verdict {
  enum class outcome : std::uint8_t {
    go,         ///< delete the rows below
    active,     ///< refused: "Consumer group g is active on queue q"
    restarting, ///< refused: "… is restarting on queue q; retry"
  };
  outcome result = outcome::go;
  /// With `go`: the partitions (by index) whose cursor row is deleted: those
  /// where the group had state, and those that did not answer (a row they
  /// hold goes too; deleting an absent row is harmless).
  std::vector<std::size_t> rows;
};

/// Folds the votes (none: the partition did not answer). A partition that
/// did not answer while a stage is open on it (`stage_open[i]`) may still
/// write the group's row there: the deletion is refused as restarting.
deletion_verdict fold_votes(std::span<const std::optional<delete_vote>> votes,
                            const std::vector<bool>& stage_open);

/// What deleting `group` from queue `q` writes once the votes said go
/// (semantics.md §8): the cursor rows of `partitions` (the verdict's rows),
/// its stored record when `delete_record`, and, when that deletes anything,
/// its dead letters whose requeue was pending, unmarked: the deleted cursors
/// forgot them, so retention applies to them again. The entries stay. Read
/// in `t` (summaries only; whole entries just for the pending ones, at most
/// `max_requeued` per cursor, so the batch stays bounded). A read that
/// fails, or a dead letter of the group that does not decode, fails it:
/// the deletion is refused with the storage error (as the DLQ's list and
/// requeue are), not done with requeue marks left behind.
storage::expected<std::vector<storage::mutation>> deletion_mutations(
    storage::txn& t, storage::queue_id q, const std::string& group,
    std::span<const storage::partition_id> partitions, bool delete_record);

/// `groupIdleSeconds`: how often a queue looks for idle groups (the option,
/// within 1..60 s).
mono_clock::duration idle_sweep_interval(std::int64_t group_idle_s);

/// One idle sweep's view of the groups of a queue.
class idle_sweep {
public:
  /// A cursor of `group` was last used at `last_activity` (wall µs);
  /// `leased`: it holds a live lease.
  void saw(const std::string& group, micros last_activity, bool leased);
  /// `group` has a pop parked on the queue.
  void parked(const std::string& group);

  struct idle_group {
    std::string group;
    /// Its last activity: the deletion's cutoff (a cursor used after it
    /// refuses, so a group active again since the sweep looked is kept).
    micros last = 0;
  };

  /// The groups without activity for `idle` µs at `now`, without a live
  /// lease and without a parked pop, by name.
  std::vector<idle_group> idle(micros now, micros idle) const;

private:
  struct seen {
    micros last = 0;
    bool busy = false;
  };
  std::map<std::string, seen> groups_;
};

} // namespace spool::core
