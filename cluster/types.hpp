#pragma once

/// The vocabulary of one slot's replication (docs/cluster.md): replicas,
/// epochs, log positions and entries. No CAF, no sockets, no LMDB.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>

namespace spool::cluster {

/// A node of the cluster (`--node-id`'s index in `--peers`).
enum class node_id : std::uint32_t {};

constexpr std::uint32_t index_of(node_id n) noexcept {
  return static_cast<std::uint32_t>(n);
}

/// A slot's leadership term. Epoch 0 is "never fenced"; a slot's first
/// leader leads epoch 1 or later. Each epoch has at most one leader.
using epoch_t = std::uint64_t;
/// An entry's number in its slot's log, from 1; 0 is "before the log".
using seq_t = std::uint64_t;

/// Where a log ends (or any entry stands): its epoch, then its seq. The
/// longer log of two is the greater `(epoch, seq)`: a log whose last entry
/// has a higher epoch holds everything committed before that epoch.
struct log_pos {
  epoch_t epoch = 0;
  seq_t seq = 0;
  friend auto operator<=>(const log_pos&, const log_pos&) = default;
};

enum class entry_kind : std::uint8_t {
  /// A write batch's part in this slot (opaque here).
  data = 0,
  /// The first entry of a leader's epoch: committing it commits every entry
  /// before it (an older epoch's entries never commit by counting).
  epoch_start = 1,
};

/// One log entry as shipped: its position, kind, payload and a checksum
/// over all of them, made by whoever wrote it first and checked by every
/// replica that receives it.
struct entry {
  epoch_t epoch = 0;
  seq_t seq = 0;
  entry_kind kind = entry_kind::data;
  std::string payload;
  std::uint64_t checksum = 0;

  log_pos pos() const noexcept {
    return {epoch, seq};
  }
  friend bool operator==(const entry&, const entry&) = default;
};

/// The checksum of an entry's position, kind and payload (XXH3-64).
std::uint64_t checksum_of(epoch_t epoch, seq_t seq, entry_kind kind,
                          const std::string& payload) noexcept;

/// An entry with its checksum filled in.
entry make_entry(epoch_t epoch, seq_t seq, entry_kind kind,
                 std::string payload);

inline bool checksum_ok(const entry& e) noexcept {
  return e.checksum == checksum_of(e.epoch, e.seq, e.kind, e.payload);
}

/// What a replica persists of its slot besides the log (Raft's hard
/// state). Written whole; synced before any answer that depends on it.
struct hard_state {
  /// The highest epoch this replica has promised to: it takes no entry
  /// and grants no fence from a lower one.
  epoch_t epoch = 0;
  /// The leader of `epoch`, once known (none while fenced).
  std::optional<node_id> leader;
  /// The replica found a bad entry or failed to apply one: it answers no
  /// append, grants fences only as damaged (never elected, never counted)
  /// and waits for a snapshot from the leader.
  bool damaged = false;
  friend bool operator==(const hard_state&, const hard_state&) = default;
};

/// A copy of a slot's applied state goes to a follower whose next entry
/// the leader no longer keeps, or that is damaged, in pieces
/// (docs/cluster.md, "Snapshots"): piece `index` of the leader's copy
/// `copy`, all read from one view of the state through `through`.
struct snapshot_piece {
  /// The leader's number for the copy (new for each one it opens).
  std::uint64_t copy = 0;
  log_pos through;
  std::uint32_t index = 0;
  /// The copy's last piece: the follower installs them all with it.
  bool last = false;
  std::string data;
  /// Over every field above (`make_piece`), checked on receipt.
  std::uint64_t checksum = 0;
};

/// A piece with its checksum filled in.
snapshot_piece make_piece(std::uint64_t copy, log_pos through,
                          std::uint32_t index, bool last, std::string data);
bool checksum_ok(const snapshot_piece& p) noexcept;

/// What a leader reads of a copy at a time (`log_port::read_copy`): the
/// piece's data and where the next one starts (opaque; empty once `last`).
struct copy_read {
  std::string data;
  std::string next;
  bool last = false;
};

} // namespace spool::cluster
