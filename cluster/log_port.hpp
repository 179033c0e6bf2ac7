#pragma once

/// What a replica's core reads of its slot's log, and the writes its shell
/// carries out for it (docs/cluster.md, "Shell"). One implementation over
/// the LMDB slot log, one in the simulation. Reads see every write the
/// shell has carried out, synced or not.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "cluster/types.hpp"

namespace spool::cluster {

/// One step's writes, carried out in this order and all or nothing:
/// the hard state, the truncation, the staged piece, the install, the
/// appends.
struct writes {
  std::optional<hard_state> hard;
  /// Forget (and undo) every entry after this seq.
  std::optional<seq_t> truncate_after;
  /// Stage this piece of a snapshot after those staged before (its index
  /// 0: instead of them).
  std::optional<snapshot_piece> stage;
  /// Replace the state and the log with the staged pieces, a copy through
  /// this position (none staged after).
  std::optional<log_pos> install;
  std::vector<entry> append;

  bool empty() const noexcept {
    return !hard && !truncate_after && !stage && !install && append.empty();
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
  /// Opens copy `id` of the applied state through `last()`, read in
  /// pieces while it stays open, and answers its position; none when the
  /// node has as many copies open as it may (try later). Reading one keeps
  /// a view of the store open: close it when done.
  virtual std::optional<log_pos> open_copy(std::uint64_t id) const = 0;
  /// The piece of copy `id` from `from` (empty: its start; else the last
  /// piece's `next`): at least one row when one is left, then as many as
  /// fit about `max_bytes`. The same `from` and `max_bytes` give the same
  /// piece. None when the copy is not open (closed, or ended by the store:
  /// open another).
  virtual std::optional<copy_read> read_copy(std::uint64_t id,
                                             const std::string& from,
                                             std::size_t max_bytes) const = 0;
  virtual void close_copy(std::uint64_t id) const = 0;
  /// Carries out `w` (not yet synced).
  virtual write_result write(const writes& w) = 0;
  /// Makes every write carried out so far durable; false when it failed
  /// (then nothing that waits for it may leave: the shell drops the
  /// `after_sync` messages and calls `write_failed`).
  virtual bool sync() = 0;
};

} // namespace spool::cluster
