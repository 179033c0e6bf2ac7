#pragma once

/// One slot's log in the node's LMDB store, as the replication core reads
/// and writes it (`cluster::log_port`, docs/cluster.md). An entry on the
/// wire is the slot log's entry: its mutations (segment bytes put back) as
/// the payload, its epoch and seq; an `epoch_start` entry has no mutation.
/// A follower applies an entry with `slot_log::apply_entry`, so it ends with
/// the leader's rows byte for byte; a truncation is `slot_log::truncate`; a
/// snapshot is the slot's whole key range, read in pieces from one held
/// read transaction (`env::hold_read`, `slot_log::read_piece`), staged on
/// the follower and installed with its last piece
/// (`slot_log::install_staged`).
///
/// Writes run in one write transaction each: call `write` where the node's
/// single writer runs. Each read opens one short read transaction. A failed
/// read answers as if nothing were stored there, which the core must not
/// act on (a hard state read as empty would grant any fence): the shell
/// takes the error (`take_error`) after each step, before carrying out its
/// `ready`, and stops the node on one, as on a failed sync.

#include <map>
#include <optional>
#include <utility>

#include "cluster/log_port.hpp"
#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "vocab/slot.hpp"

namespace spool::core {

class slot_port final : public cluster::log_port {
public:
  /// `max_copies`: the node's bound on copies open at once, all slots'.
  slot_port(storage::env& env, slot_t slot, std::size_t max_copies = 8) :
      env_(env), slot_(slot), max_copies_(max_copies) {
  }
  ~slot_port() override;
  slot_port(const slot_port&) = delete;
  slot_port& operator=(const slot_port&) = delete;

  cluster::hard_state hard() const override;
  cluster::log_pos base() const override;
  cluster::log_pos last() const override;
  std::optional<cluster::epoch_t> epoch_at(cluster::seq_t seq) const override;
  std::vector<cluster::entry> read(cluster::seq_t from, std::size_t max_count,
                                   std::size_t max_bytes) const override;
  std::optional<cluster::log_pos> open_copy(std::uint64_t id) const override;
  std::optional<cluster::copy_read>
  read_copy(std::uint64_t id, const std::string& from,
            std::size_t max_bytes) const override;
  void close_copy(std::uint64_t id) const override;
  cluster::write_result write(const cluster::writes& w) override;
  bool sync() override;

  /// The first read or write that failed since the last call, with its
  /// reason; clears it.
  std::optional<storage::error> take_error() {
    return std::exchange(error_, std::nullopt);
  }

private:
  struct log_ends {
    cluster::log_pos base;
    cluster::log_pos last;
  };
  /// Where the log starts and ends, in one read transaction (none: the
  /// read failed, and `error_` says why).
  std::optional<log_ends> read_ends() const;
  static storage::expected<log_ends> ends_in(storage::txn& t, slot_t s);

  storage::env& env_;
  slot_t slot_;
  std::size_t max_copies_;
  /// Open copies: the core's number → the store's held read.
  mutable std::map<std::uint64_t, std::uint64_t> copies_;
  mutable std::optional<storage::error> error_;
};

} // namespace spool::core
