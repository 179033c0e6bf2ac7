#pragma once

/// The store writer as an actor: group commit with a bounded queue. The
/// actor never blocks: it hands one commit group at a time to a `committer`
/// (a thread of its own in production; inline under the test coordinator,
/// deterministically) and queues what arrives meanwhile, so it can refuse
/// batches past `max_pending` at once and fail batches that waited longer
/// than `stall_timeout` (a hung sync) with a clear error instead of hanging.
/// A failed or refused batch was never started: nothing of it is stored.

#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "actors/interfaces.hpp"
#include "core/writer/committer.hpp"
#include "core/writer/durability.hpp"
#include "core/writer/durable_marks.hpp"
#include "storage/lmdb.hpp"

namespace spool::actors {

struct writer_config {
  storage::env* env = nullptr;
  /// A commit group stops taking batches at this many bytes.
  std::size_t max_group_bytes = std::size_t{64} << 20;
  /// Batches waiting for the disk beyond this are refused at once
  /// (`unavailable`, "write queue full").
  std::size_t max_pending = 8192;
  /// A batch that waited this long without its commit starting fails
  /// (`unavailable`, "storage stalled"); while a commit runs longer than this,
  /// new batches are refused at once.
  std::chrono::milliseconds stall_timeout{10'000};
  /// Who commits (none: `thread_committer` when spawned with `threaded`,
  /// else `inline_committer`).
  std::shared_ptr<committer> commits{};
  /// When a committed group counts as durable (none: `local_durability`).
  std::shared_ptr<durability_policy> durability{};
  /// How far each slot is durable, raised as answers are released; shared
  /// with the readers (`node_context::durable`). None: the writer reads
  /// them from the store.
  std::shared_ptr<durable_marks> marks{};

  expected<void> validate() const;
};

/// Validates `cfg` and spawns the writer; `threaded` gives its commits a
/// thread of their own.
expected<writer_actor> spawn_writer(caf::actor_system& sys, writer_config cfg,
                                    bool threaded);

} // namespace spool::actors
