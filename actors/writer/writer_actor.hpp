#pragma once

/// The store writer as an actor: group commit without a thread of its own.
/// Spawn it `detached` in production (it blocks in fsync); under the test
/// coordinator it runs like any actor, deterministically.

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"
#include "storage/lmdb.hpp"

namespace spool::actors {

struct writer_config {
  storage::env* env = nullptr;
  /// A commit group stops taking batches at this many bytes.
  std::size_t max_group_bytes = std::size_t{64} << 20;

  storage::expected<void> validate() const;
};

/// Validates `cfg` and spawns the writer; `detached` gives it a thread of
/// its own.
storage::expected<writer_actor> spawn_writer(caf::actor_system& sys,
                                             writer_config cfg, bool detached);

} // namespace spool::actors
