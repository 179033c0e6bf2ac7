#pragma once

/// One slot's replication state machine on one replica (docs/cluster.md):
/// the leader ships its log and counts what a majority has synced, a
/// follower takes entries only after the one before them matches, and a
/// fence makes a replica promise a new epoch before it answers. Pure: no
/// CAF, no sockets, no clock; the same object runs in the shell and in the
/// simulation (tests/cluster/).
///
/// Each input returns a `ready`, which the shell carries out in order: the
/// writes (through the `log_port`), then `send`, then a sync, then
/// `after_sync`; then it may act on `committed` and the notices. A step
/// whose writes fail sends nothing, and the shell calls `write_failed`.
/// The core reads the log only through the port, so it never holds a copy
/// of what is stored.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster/log_port.hpp"
#include "cluster/messages.hpp"

namespace spool::cluster {

/// Milliseconds from any fixed origin (the shell's steady clock, the
/// simulation's counter).
using millis = std::uint64_t;

struct replica_config {
  node_id self{};
  /// Every replica of the slot, `self` included.
  std::vector<node_id> replicas;
  /// What one append may carry.
  std::size_t max_batch_entries = 64;
  std::size_t max_batch_bytes = 1 << 20;
  /// Entries sent and not acknowledged, per follower: past it the leader
  /// waits (the follower's back-pressure).
  std::size_t max_in_flight = 512;
  /// A follower with nothing to receive hears from the leader this often.
  millis heartbeat = 100;
  /// Entries unacknowledged this long are sent again.
  millis retry = 500;
  /// A snapshot goes in pieces of about this many bytes of rows (one
  /// piece: at least one row),
  std::size_t snapshot_piece_bytes = std::size_t{1} << 20;
  /// at most this many sent and not taken per follower (so at most about
  /// 4 MiB of a slot's snapshot waits in the peer link: peer/links.hpp);
  std::size_t snapshot_pieces_in_flight = 4;
  /// a copy the follower takes no piece of this long is closed (the view
  /// of the store it keeps open ends) and a new one started.
  millis snapshot_idle = 10'000;
};

enum class role : std::uint8_t {
  /// Takes entries from `leader()` (or from whoever leads a newer epoch).
  follower,
  /// Promised an epoch whose leader it does not know yet.
  fenced,
  leader,
};

enum class notice_kind : std::uint8_t {
  /// This replica leads `epoch` now; it serves once `serving` follows.
  leading,
  /// Its `epoch_start` is committed: every entry it holds is, and the
  /// slot's state may be read and written.
  serving,
  /// It led and no longer does: fail what waits, stop writing the slot.
  deposed,
  /// It found a bad entry or failed to apply one.
  damaged,
  /// Follower `peer` refused entries (its disk is full, or it is damaged).
  peer_refusing,
  /// A follower installed a snapshot from `peer` (its leader), of
  /// `pieces` pieces.
  installed,
  /// It led `epoch` before a restart: run an election for `epoch + 1`
  /// that expects `epoch` (docs/cluster.md, "Restart"); repeated on ticks
  /// until a leader is known.
  restart_election,
};

struct notice {
  notice_kind kind{};
  epoch_t epoch = 0;
  std::optional<node_id> peer;
  refusal why = refusal::none;
  std::uint32_t pieces = 0;
};

struct ready {
  writes write;
  std::vector<envelope> send;
  /// Leave only once every write so far is synced.
  std::vector<envelope> after_sync;
  /// The commit point moved here.
  std::optional<seq_t> committed;
  std::vector<notice> notices;
};

/// What the leader knows of one follower.
struct peer_progress {
  /// The next seq to send.
  seq_t next = 1;
  /// Synced there and equal to ours, acknowledged in our epoch.
  seq_t match = 0;
  millis last_send = 0;
  /// When `match` last moved (or the leader last went back to it).
  millis last_ack = 0;
  refusal refused = refusal::none;
  /// Not sure where its log matches ours: one append at a time, from
  /// `next`, until one is taken (etcd-raft's probe state); then appends
  /// are pipelined up to `max_in_flight`.
  bool probing = true;
  /// A probe is out and unanswered.
  bool paused = false;
  /// The `prev` seq of the probe out.
  seq_t probe_prev = 0;
  /// The copy of the slot's state being sent to it, if any.
  struct copy_out {
    std::uint64_t id = 0;
    log_pos through;
    /// Pieces it took, where each one ends, and where the next one starts.
    std::uint32_t taken = 0;
    std::vector<std::string> ends;
    std::string taken_next;
    /// The pieces sent after those, each one's `next`.
    std::vector<std::string> sent_next;
    bool sent_last = false;
    millis last_sent = 0;
    /// Times sent again since it last took a piece.
    unsigned resends = 0;
    /// The longest recent time between two pieces taken.
    millis gap = 0;
    /// When it last took a piece (or the copy was opened).
    millis last_taken = 0;
  };
  std::optional<copy_out> copy;
  /// No copy is opened for it before this.
  millis copy_after = 0;
};

class replica_core {
public:
  replica_core(replica_config cfg, const log_port& log);

  /// The first input after construction (a start or a restart).
  ready start(millis now);
  /// A message from a peer or from an election's coordinator.
  ready on_message(const envelope& m, millis now);
  ready tick(millis now);
  /// The leader's writer appended entries stamped `write_epoch()`.
  ready local_appended(millis now);
  /// Every write through `through` is durable.
  ready synced(seq_t through, millis now);
  /// The last step's writes failed: nothing of them is stored.
  ready write_failed(write_result r, millis now);

  role current_role() const noexcept {
    return role_;
  }
  epoch_t epoch() const;
  std::optional<node_id> leader() const;
  /// The highest seq known committed (0 after a restart until the leader
  /// says more); never goes back while the object lives.
  seq_t commit() const noexcept {
    return commit_;
  }
  /// The epoch the writer stamps its entries with: set only on a leader.
  std::optional<epoch_t> write_epoch() const;
  bool serving() const noexcept {
    return role_ == role::leader && serving_;
  }
  const std::map<node_id, peer_progress>& peers() const noexcept {
    return peers_;
  }

private:
  void on_fence(node_id from, const fence_req& r, ready& out);
  void on_lead(const lead_req& r, ready& out, millis now);
  void on_append(node_id from, const append_req& r, ready& out);
  // Snapshots (replica_snapshot.cpp).
  void on_snapshot(node_id from, const snapshot_req& r, ready& out);
  void on_snapshot_rep(node_id from, const snapshot_rep& r, ready& out,
                       millis now);
  /// Sends follower `to` the pieces of a copy it may take now, opening one
  /// first if none is open.
  void send_copy(node_id to, peer_progress& p, epoch_t epoch, ready& out,
                 millis now);
  void close_copy(peer_progress& p) const;
  /// Forgets every follower (their copies closed).
  void drop_peers();
  void on_append_rep(node_id from, const append_rep& r, ready& out, millis now);
  /// A follower's answer names a newer epoch: steps down and keeps its
  /// promise (true).
  bool heard_newer(epoch_t epoch, ready& out);
  /// Turns to following `leader` at `epoch` (written in `out`).
  void follow(epoch_t epoch, node_id leader, ready& out);
  void step_down(ready& out);
  void mark_damaged(node_id leader, ready& out);
  void reply(node_id to, append_rep rep, ready& out, bool synced);
  /// The first seq of the run of entries with `e`'s epoch that holds `at`.
  seq_t first_of_epoch(seq_t at) const;
  /// The last seq whose entry's epoch is `e`, if any.
  std::optional<seq_t> last_of_epoch(epoch_t e) const;

  // Leader (replica_leader.cpp).
  void become_leader(epoch_t epoch, ready& out, millis now);
  void ship(node_id to, peer_progress& p, ready& out, millis now,
            bool heartbeat);
  void advance_commit(ready& out);
  std::size_t quorum() const noexcept {
    return cfg_.replicas.size() / 2 + 1;
  }

  replica_config cfg_;
  const log_port& log_;
  role role_ = role::follower;
  seq_t commit_ = 0;
  /// What a step may change in memory before its writes are carried out,
  /// as it was when the step began: `write_failed` puts it back.
  /// The snapshot a follower is taking: pieces [0, taken) of `copy` are
  /// staged (`writes::stage`).
  struct staging {
    node_id from{};
    epoch_t epoch = 0;
    std::uint64_t copy = 0;
    std::uint32_t taken = 0;
  };
  std::optional<staging> staging_;
  struct memo {
    role r = role::follower;
    seq_t commit = 0;
    bool restart_pending = false;
    std::optional<staging> staged;
  };
  void begin_step() {
    before_ = {role_, commit_, restart_pending_, staging_};
    step_from_.reset();
    step_epoch_ = 0;
  }
  /// The leader whose entries or snapshot this step takes, and its epoch
  /// (for `write_failed`'s answer).
  std::optional<node_id> step_from_;
  epoch_t step_epoch_ = 0;
  /// Every input returns through here: notes whether the step applies
  /// entries (for `write_failed`).
  ready finish(ready out);
  memo before_;
  bool step_applies_ = false;
  /// It led before a restart and has not found its place yet.
  bool restart_pending_ = false;
  millis last_restart_try_ = 0;
  // Leader only.
  std::map<node_id, peer_progress> peers_;
  /// The last copy number opened.
  std::uint64_t copies_ = 0;
  seq_t self_match_ = 0;
  seq_t epoch_start_ = 0;
  /// Its `(epoch, self)` and `epoch_start` are synced: until then nothing
  /// of the epoch leaves this node, so a crash before it leaves no trace
  /// and a repeated `lead` cannot make a second reign of the epoch.
  bool office_synced_ = false;
  bool serving_ = false;
};

} // namespace spool::cluster
