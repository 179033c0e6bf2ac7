#pragma once

/// What one cursor write does to its group's dead-letter queue (semantics.md
/// §4), as a pure rule over what the cursor gathered; the shell only reads
/// the entries and frames it is asked for and writes the batch. No CAF.
///
/// - A new dead letter becomes an entry: the frame as delivered (only its
///   offset when retention deleted it meanwhile), the error, the deliveries,
///   failed now, with a fresh id.
/// - A requeued entry returning keeps its id: it takes the new error, adds
///   the deliveries, is failed now and no longer pending requeue. Deleted
///   meanwhile: nothing (the deletion wins; the rewrite also applies only
///   while the entry is stored).
/// - A queue that keeps no dead letters (`deadLetterQueue` and
///   `dlqAfterMaxRetries` both off) drops them: nothing new is stored and a
///   returning entry is deleted; each counts as dropped.
/// - A requeue acked leaves the DLQ; entries newly pending requeue are
///   marked so retention leaves them alone.
///
/// Every entry one write makes or returns fails at the same `now` (one clock
/// read per write), so they expire together; their ids still differ.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cursor/cursor_core.hpp"
#include "storage/mutation.hpp"

namespace spool::core {

/// Whose DLQ and how: the cursor's queue, partition and group.
struct dlq_writer {
  storage::queue_id queue;
  storage::partition_id partition;
  std::string_view group;
  bool drop = false; ///< the queue keeps no dead letters
  storage::micros now = 0;
};

/// What `plan_dlq_writes` did besides its mutations.
struct dlq_written {
  /// The failure time of every entry written (the retention sweep's hint).
  std::vector<storage::micros> failed_at;
  std::size_t dropped = 0;
};

/// Appends the DLQ mutations of `changes` to `batch` by the rules above.
/// `stored(id)` is the group's stored entry `id` (none when gone),
/// `frame(off)` the delivered frame at `off` (null when retention deleted
/// it), `next_id(now)` a fresh DLQ id.
template <class Stored, class Frame, class NextId>
dlq_written plan_dlq_writes(const dlq_writer& w, const dlq_changes& changes,
                            storage::write_batch& batch, Stored&& stored,
                            Frame&& frame, NextId&& next_id) {
  namespace mut = storage::mut;
  dlq_written out;
  for (auto& d : changes.dead) {
    if (d.dlq_id) {
      std::optional<storage::dlq_entry> e = stored(*d.dlq_id);
      if (!e)
        continue;
      if (w.drop) {
        ++out.dropped;
        batch.mutations.emplace_back(
            mut::delete_dlq{w.queue, std::string{w.group}, e->id});
        continue;
      }
      e->error = d.error;
      e->deliveries += d.deliveries;
      e->failed_at = w.now;
      e->requeued = false;
      out.failed_at.push_back(e->failed_at);
      batch.mutations.emplace_back(
          mut::update_dlq{w.queue, std::string{w.group}, std::move(*e)});
      continue;
    }
    if (w.drop) {
      ++out.dropped;
      continue;
    }
    storage::dlq_entry e;
    e.failed_at = w.now;
    e.id = next_id(w.now);
    e.partition = w.partition;
    if (const storage::stored_frame* f = frame(d.off))
      e.message = *f;
    else
      e.message.off = d.off;
    e.error = d.error;
    e.deliveries = d.deliveries;
    out.failed_at.push_back(e.failed_at);
    batch.mutations.emplace_back(
        mut::put_dlq{w.queue, std::string{w.group}, std::move(e)});
  }
  for (auto id : changes.done)
    batch.mutations.emplace_back(
        mut::delete_dlq{w.queue, std::string{w.group}, id});
  for (auto id : changes.marked)
    if (std::optional<storage::dlq_entry> e = stored(id)) {
      e->requeued = true;
      batch.mutations.emplace_back(
          mut::update_dlq{w.queue, std::string{w.group}, std::move(*e)});
    }
  return out;
}

} // namespace spool::core
