#pragma once

/// Retention of one partition (semantics.md §7) as pure rules: which
/// segments a run may delete (`retentionSeconds`, `completedRetentionSeconds`),
/// which frames are overdue (`maxWaitTimeSeconds`), and when the next run is
/// due. No CAF, no storage access: the partition actor feeds it the wall
/// time and what it read, then plans the steps with `storage::plan_retention`
/// and tells its cursors the overdue boundary.

#include <optional>
#include <vector>

#include "storage/log.hpp"
#include "storage/records.hpp"

namespace spool::core {

/// The queue options retention obeys, in µs (0 = the rule is off).
struct retention_policy {
  bool enabled = true;           ///< `retentionEnabled`
  storage::micros retention = 0; ///< `retentionSeconds`
  storage::micros completed = 0; ///< `completedRetentionSeconds`
  storage::micros max_wait = 0;  ///< `maxWaitTimeSeconds`
  storage::micros delayed = 0;   ///< `delayedProcessing`

  static retention_policy from(const storage::queue_options& opts);

  /// Whether any of the three rules applies: `retentionEnabled=false`
  /// switches them all off here, the one switch (a partition runs retention
  /// only while its policy is active).
  bool active() const noexcept;
};

/// The bounds a retention run at `now` deletes by (`created_before` and
/// `through` of each rule; the step bounds left at their defaults), each naming
/// a prefix of the partition (created_at and offsets grow together), so a
/// segment goes when the first bound that admits it does: `retentionSeconds` up
/// to the readable end, consumed or not; `completedRetentionSeconds` only
/// through `consumed_by_all` (none: some interested group blocks, or no group
/// is interested, and nothing goes by this rule).
std::vector<storage::retention_rule>
deletion_bounds(const retention_policy& policy, storage::micros now,
                storage::offset last_readable,
                std::optional<storage::offset> consumed_by_all);

/// `maxWaitTimeSeconds`: frames created before this are overdue at `now`
/// (deliverable since `created_at + delayedProcessing` for longer than the
/// limit); none when the rule is off.
std::optional<storage::micros> overdue_before(const retention_policy& policy,
                                              storage::micros now);

/// When the next run is due (wall µs), given after this run the created_at
/// of the oldest retained frame and of the oldest frame above the overdue
/// boundary (none: no such frame, nothing to wait for until a push). Never
/// sooner than `interval` after `now`: a rule that is due but blocked (a
/// group has not consumed yet) is looked at again one interval later. None:
/// nothing can become due without a push.
std::optional<storage::micros>
next_run(const retention_policy& policy, storage::micros now,
         storage::micros interval, std::optional<storage::micros> oldest,
         std::optional<storage::micros> oldest_unjudged);

/// Where a group starts here at its first contact: the position its
/// subscription seeds (`storage::first_contact`), never below
/// `watermark - 1` and never past the readable end (a seal committed out of
/// order is not readable yet).
storage::offset clamp_first_contact(storage::offset seeded,
                                    storage::offset watermark,
                                    storage::offset next_offset);

/// What the partition knows of the groups interested in it.
struct interest {
  /// committed of every cursor row stored here.
  std::vector<storage::offset> stored;
  /// For every group registered on the queue with no cursor here (stored
  /// or live): where its first contact would seed it.
  std::vector<storage::offset> seeds;
  /// A live cursor has no stored row yet (its position is not durable).
  bool unstored_cursor = false;
  /// A seek is held here or staged by a live cursor: it may move its group
  /// back.
  bool seek_open = false;
};

/// The highest offset every interested group has consumed (semantics.md
/// §7, `completedRetentionSeconds` and `maxSize`): the lowest position
/// among them; none when nobody is interested, a live cursor has nothing
/// stored, or a seek is open (nothing counts as consumed by all until it
/// settles).
std::optional<storage::offset> consumed_by_all(const interest& groups);

} // namespace spool::core
