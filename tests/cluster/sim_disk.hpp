#pragma once

/// The simulation's disk for one replica of one slot: a `log_port` that
/// keeps the slot's whole history (what a snapshot or the trimmed part of
/// the log holds, then the kept entries) and loses every write not synced
/// when its node crashes. It keeps at most `keep` entries, as the slot log
/// keeps a window: a truncation below it fails, as `slot_log::truncate`
/// refuses one.

#include <cstddef>
#include <vector>

#include "cluster/log_port.hpp"

namespace spool::cluster::sim {

class sim_disk : public log_port {
public:
  explicit sim_disk(std::size_t keep) : keep_(keep) {
  }

  hard_state hard() const override {
    return now_.hard;
  }
  log_pos base() const override {
    return now_.base;
  }
  log_pos last() const override;
  std::optional<epoch_t> epoch_at(seq_t seq) const override;
  std::vector<entry> read(seq_t from, std::size_t max_count,
                          std::size_t max_bytes) const override;
  std::optional<snapshot> take_snapshot(std::size_t max_bytes) const override;
  write_result write(const writes& w) override;
  bool sync() override {
    if (fail_sync) {
      fail_sync = false;
      return false; // what was written stays, not durable
    }
    synced_ = now_;
    return true;
  }

  /// The node crashed: what was not synced is gone.
  void crash() {
    now_ = synced_;
  }
  /// Writes fail with `disk_full` while set.
  bool full = false;
  /// Snapshots taken (too large ones included).
  mutable std::size_t snapshots_taken = 0;
  /// The next write fails as an apply that went wrong.
  bool fail_next = false;
  /// The next sync fails.
  bool fail_sync = false;
  /// The entry at `seq` as synced (what a crash would leave).
  const entry* synced_at(seq_t seq) const {
    if (seq == 0 || seq > synced_.history.size())
      return nullptr;
    return &synced_.history[seq - 1];
  }

  /// Damaged now, or after a crash (the synced hard state).
  bool damaged_or_may_be() const noexcept {
    return now_.hard.damaged || synced_.hard.damaged || fail_next;
  }
  /// Every entry through `last()`, the snapshotted and trimmed ones too.
  const std::vector<entry>& history() const noexcept {
    return now_.history;
  }
  /// The entry at `seq`, kept or not; none past the end.
  const entry* at(seq_t seq) const;

private:
  struct image {
    hard_state hard;
    log_pos base;
    /// history[i] is seq i + 1; entries after base.seq are the kept log.
    std::vector<entry> history;
  };
  std::size_t keep_;
  image now_;
  image synced_;
};

/// A snapshot's bytes: the history it covers.
std::string encode_history(const std::vector<entry>& h);
std::vector<entry> decode_history(const std::string& s);

} // namespace spool::cluster::sim
