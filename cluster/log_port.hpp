#pragma once

/// What a replica's core reads of its slot's log, and the writes its shell
/// carries out for it (docs/cluster.md, "Shell"). One implementation over
/// the LMDB slot log, one in the simulation. Reads see every write the
/// shell has carried out, synced or not.

#include <cstddef>
#include <optional>
#include <vector>

#include "cluster/types.hpp"

namespace spool::cluster {

/// One step's writes, carried out in this order and all or nothing:
/// the hard state, the truncation, the snapshot, the appends.
struct writes {
  std::optional<hard_state> hard;
  /// Forget (and undo) every entry after this seq.
  std::optional<seq_t> truncate_after;
  std::optional<snapshot> install;
  std::vector<entry> append;

  bool empty() const noexcept {
    return !hard && !truncate_after && !install && append.empty();
  }
};

enum class write_result : std::uint8_t {
  ok = 0,
  /// The disk is full: nothing of the step was written.
  disk_full,
  /// Applying an entry failed (or a truncation reached below what the log
  /// keeps): nothing of the step was written.
  failed,
};

class log_port {
public:
  virtual ~log_port() = default;
  virtual hard_state hard() const = 0;
  /// The position before the first entry kept: the snapshot's, or (0, 0).
  virtual log_pos base() const = 0;
  /// The last entry's position (`base()` when no entry is kept).
  virtual log_pos last() const = 0;
  /// The epoch of the entry at `seq` (`base().epoch` at `base().seq`);
  /// none outside what is kept.
  virtual std::optional<epoch_t> epoch_at(seq_t seq) const = 0;
  /// The entries from `from` on, at least one when there is one, then as
  /// many as fit `max_bytes` of payload, at most `max_count`.
  virtual std::vector<entry> read(seq_t from, std::size_t max_count,
                                  std::size_t max_bytes) const = 0;
  /// A copy of the applied state through `last()`; none when its data
  /// would be over `max_bytes` (then it read about that much, no more).
  virtual std::optional<snapshot>
  take_snapshot(std::size_t max_bytes) const = 0;
  /// Carries out `w` (not yet synced).
  virtual write_result write(const writes& w) = 0;
  /// Makes every write carried out so far durable; false when it failed
  /// (then nothing that waits for it may leave: the shell drops the
  /// `after_sync` messages and calls `write_failed`).
  virtual bool sync() = 0;
};

} // namespace spool::cluster
