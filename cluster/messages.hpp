#pragma once

/// The messages of one slot's replication between replicas and the
/// coordinator of an election (docs/cluster.md, "Protocol"). Plain data:
/// the peer link encodes them, the simulation passes them as they are.

#include <optional>
#include <variant>
#include <vector>

#include "cluster/types.hpp"

namespace spool::cluster {

/// Coordinator → replica: promise epoch `epoch` (persisted before the
/// answer) and stop taking entries from any lower one. With `expect` (a
/// restarted leader's check that nobody moved on), only if the replica's
/// epoch is at most `expect` and it follows the coordinator or no one.
struct fence_req {
  epoch_t epoch = 0;
  std::optional<epoch_t> expect;
};

/// Replica → coordinator. Granted: the replica is at `epoch` now, with
/// its log ending at `log_end`. Refused: `epoch` and `leader` are where it
/// stands (higher, or not the expected one).
struct fence_rep {
  epoch_t asked = 0;
  bool granted = false;
  epoch_t epoch = 0;
  std::optional<node_id> leader;
  log_pos log_end;
  bool damaged = false;
};

/// Coordinator → the replica chosen: lead epoch `epoch`.
struct lead_req {
  epoch_t epoch = 0;
};

/// Leader → follower: the entries after `prev`, and how far the leader has
/// committed. No entries: a heartbeat and a probe.
struct append_req {
  epoch_t epoch = 0;
  log_pos prev;
  std::vector<entry> entries;
  seq_t commit = 0;
};

enum class refusal : std::uint8_t {
  none = 0,
  /// The request's epoch is below the replica's (`epoch` says which).
  stale_epoch,
  /// The entry before the request's does not match: `hint` says where to
  /// go back to.
  mismatch,
  /// The replica's disk refused the entries.
  disk_full,
  /// The replica is damaged and waits for a snapshot.
  damaged,
  /// The replica's divergent tail reaches below what its log can undo: it
  /// needs a snapshot, and still votes.
  needs_snapshot,
};

/// Follower → leader. Taken: every entry through `match` is synced here
/// and equal to the leader's. Refused: why, with the replica's epoch, and
/// for a mismatch the hint of Raft's fast backup: `hint.epoch` is the
/// epoch of the replica's entry at the asked position and `hint.seq` the
/// first seq it holds of that epoch; or epoch 0 and the replica's last seq
/// when its log ends before the position.
struct append_rep {
  epoch_t epoch = 0;
  refusal refused = refusal::none;
  seq_t match = 0;
  log_pos hint;
  /// A mismatch's: the seq of the request's `prev` (a leader ignores a
  /// refusal of a probe it no longer waits for).
  seq_t asked = 0;
};

/// Leader → follower: a piece of a copy of the slot's state; with the
/// last one, replace the log and state with the copy.
struct snapshot_req {
  epoch_t epoch = 0;
  snapshot_piece piece;
  seq_t commit = 0;
};

/// Follower → leader: it holds the first `taken` pieces of copy `copy`
/// staged (0: it holds none of it, and wants it from the start). The last
/// piece is answered with an `append_rep` instead, once installed.
struct snapshot_rep {
  epoch_t epoch = 0;
  std::uint64_t copy = 0;
  std::uint32_t taken = 0;
};

using message = std::variant<fence_req, fence_rep, lead_req, append_req,
                             append_rep, snapshot_req, snapshot_rep>;

/// A message with its sender and addressee.
struct envelope {
  node_id from{};
  node_id to{};
  message msg;
};

/// One slot's message between two nodes: what a peer link carries.
struct slot_message {
  std::uint16_t slot = 0;
  envelope env;
};

} // namespace spool::cluster
