#pragma once

/// The simulation's disk for one replica of one slot: a `log_port` that
/// keeps the slot's whole history (what a snapshot or the trimmed part of
/// the log holds, then the kept entries) and loses every write not synced
/// when its node crashes. It keeps at most `keep` entries, as the slot log
/// keeps a window: a truncation below it fails, as `slot_log::truncate`
/// refuses one.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "cluster/log_port.hpp"

namespace spool::cluster::sim {

class sim_disk : public log_port {
public:
  /// `max_copies`: how many copies may be open at once (a node's bound,
  /// here one replica's).
  explicit sim_disk(std::size_t keep, std::size_t max_copies = 2) :
      keep_(keep), max_copies_(max_copies) {
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
  std::optional<log_pos> open_copy(std::uint64_t id) const override;
  std::optional<copy_read> read_copy(std::uint64_t id, const std::string& from,
                                     std::size_t max_bytes) const override;
  void close_copy(std::uint64_t id) const override {
    copies_.erase(id);
  }
  write_result write(const writes& w) override;
  bool sync() override {
    if (fail_sync) {
      fail_sync = false;
      return false; // what was written stays, not durable
    }
    synced_ = now_;
    return true;
  }

  /// The node crashed: what was not synced is gone, and so are its open
  /// copies and what it staged (as spoold's store drops them at start).
  void crash() {
    now_ = synced_;
    now_.staged.clear();
    synced_.staged.clear();
    copies_.clear();
  }
  /// Ends every open copy, as a growth of spoold's map does.
  void end_copies() {
    copies_.clear();
  }
  /// Writes fail with `disk_full` while set.
  bool full = false;
  /// Copies opened, and those refused (as many open as it may).
  mutable std::size_t copies_opened = 0;
  mutable std::size_t copies_refused = 0;
  std::size_t copies_open() const noexcept {
    return copies_.size();
  }
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
    /// A snapshot's pieces staged so far: the history they hold.
    std::vector<entry> staged;
  };
  std::size_t keep_;
  std::size_t max_copies_;
  /// Open copies: the history each one reads.
  mutable std::map<std::uint64_t, std::vector<entry>> copies_;
  image now_;
  image synced_;
};

/// A snapshot piece's bytes: the part of the history it covers.
std::string encode_history(const std::vector<entry>& h);
std::vector<entry> decode_history(const std::string& s);

} // namespace spool::cluster::sim
