#pragma once

/// The node's replicas of the slots it holds (docs/cluster.md, "Shell"):
/// one `cluster::replica_core` per slot over the LMDB slot log
/// (`slot_port`), the elections this node coordinates, and the writes that
/// wait for their quorum.
///
/// Everything here runs on the node's one LMDB writer thread, the
/// committer's (`committer::run`): the host is not thread-safe, and its
/// writes (a follower's applies, a leader's epoch start, a fence's promise)
/// need that thread. So does the writer's hook (`admit`, `committed`): a
/// batch is admitted only for a slot this node serves as leader, and is
/// stamped with that slot's epoch, checked in the same thread that commits
/// it. Messages leave through `send`; the peer links bring them in
/// (`on_message`). The clock is injected. No CAF, no sockets.
///
/// The LMDB environment must be in strict durability: a write committed
/// through the port is then synced, so the host tells a core `synced` right
/// after its writes.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/election.hpp"
#include "cluster/replica_core.hpp"
#include "core/replica/slot_directory.hpp"
#include "core/replica/slot_port.hpp"
#include "core/writer/durability.hpp"
#include "storage/lmdb.hpp"
#include "vocab/slot.hpp"

namespace spool::core {

struct host_config {
  cluster::node_id self{};
  /// Every node of the cluster, in `--peers` order.
  std::vector<cluster::node_id> nodes;
  /// Their names in messages, by index (none: `n<index + 1>`).
  std::vector<std::string> names;
  /// How many nodes hold each slot (at most `nodes.size()`).
  std::uint32_t replication_factor = 3;
  /// The store's slot count.
  std::uint32_t slots = default_slot_count;
  /// The cores' batching, window and timers (`self` and `replicas` are
  /// set per slot).
  cluster::replica_config core{};
  /// An election gives up after this long.
  cluster::millis election_deadline = 3000;
  /// A write not committed by a quorum this long after its local commit
  /// is answered `unavailable` ("no quorum"), its outcome unknown.
  cluster::millis quorum_deadline = 5000;
};

/// One slot's replication message between two nodes.
using cluster::slot_message;

/// What one slot's replica looks like from outside (tests, metrics,
/// `not_leader` answers).
struct slot_view {
  cluster::role role = cluster::role::follower;
  cluster::epoch_t epoch = 0;
  std::optional<cluster::node_id> leader;
  cluster::seq_t commit = 0;
  cluster::log_pos last;
  bool serving = false;
  bool damaged = false;
};

/// How far behind the leader one follower of a slot is (the metrics).
struct follower_lag {
  cluster::node_id node{};
  /// Entries the leader holds past what the follower synced and matched.
  std::uint64_t entries = 0;
  /// Their payload bytes (read from the log up to a bound per report, then
  /// estimated from the mean size of those read).
  std::uint64_t bytes = 0;
};

/// One slot's replica here, for the metrics.
struct slot_report {
  slot_t slot = 0;
  slot_view view;
  /// As its leader: each follower's lag.
  std::vector<follower_lag> followers;
};

/// How an operator's promote ended: the node chosen to lead and its epoch,
/// or why none was: `invalid_argument` when it could not start (nothing
/// changed), `unavailable` when it ran and failed (the majority it fenced
/// left the old leader: the slot has none until a promote succeeds) or
/// must wait.
struct promote_outcome {
  slot_t slot = 0;
  std::optional<cluster::node_id> leader;
  cluster::epoch_t epoch = 0;
  std::optional<api_error> failure; ///< none: elected
};
using promote_done = std::function<void(const promote_outcome&)>;

/// What the host tells its shell (logs, the broker's per-slot start and
/// stop); called on the writer thread.
struct host_events {
  std::function<void(slot_t, const cluster::notice&)> notice;
  /// An election this node ran failed, and why.
  std::function<void(slot_t, const std::string&)> election_failed;
  /// A failed read of the store: the node must stop (as on a failed sync).
  std::function<void(slot_t, const storage::error&)> fatal;
};

class replica_host final : public actors::commit_hook {
public:
  using sender = std::function<void(slot_message)>;
  using clock = std::function<cluster::millis()>;

  /// Refuses a configuration it cannot run (no such node, a factor above
  /// the node count, an environment not in strict durability).
  static expected<std::shared_ptr<replica_host>> make(storage::env& env,
                                                      host_config cfg,
                                                      sender send, clock now,
                                                      host_events events = {});

  /// Starts every slot's core from what its replica row says; a fresh
  /// slot's first leader runs its first election.
  void start();
  /// A message from a peer (or this node's own, looped back).
  void on_message(slot_message m);
  /// Timers: heartbeats, retries, elections, quorum deadlines.
  void tick();
  /// Runs an election for slot `s` (the operator's promote): fence a
  /// majority to a new epoch and make the longest log lead (`to`: only if
  /// that one holds it). False when it cannot start (one already runs
  /// there, the slot is not held here or failed). `done`, if given, is
  /// called once on this thread with how it ended, also when it could not
  /// start. `prefer` (a leader's handoff at SIGTERM): among the replicas
  /// that hold the longest log, this one leads.
  bool promote(slot_t s, std::optional<cluster::node_id> to,
               promote_done done = {},
               std::optional<cluster::node_id> prefer = {});

  /// Waits until every mark is committed by a quorum in its epoch, or
  /// lost; calls `done` once with the slots lost.
  void await(std::vector<actors::durable_mark> marks, actors::durable_fn done);
  /// Fails every write still waiting (the node stops).
  void stop();

  // The writer's hook.
  std::optional<api_error> admit(const storage::write_batch& b) override;
  std::vector<std::uint64_t>
  committed(const std::vector<storage::slot_seq>& marks) override;

  /// Whether this node holds a replica of slot `s`.
  bool holds(slot_t s) const noexcept;
  /// Slot `s`'s commit point here (0: it holds none).
  cluster::seq_t commit_of(slot_t s) const;
  /// Slot `s`'s replica here (none: it holds none).
  std::optional<slot_view> view(slot_t s) const;
  /// Every slot held here, by slot (the metrics). Lags in bytes read at
  /// most `max_read` payload bytes of the logs in all, then are estimated
  /// from the mean entry read.
  std::vector<slot_report> report(std::size_t max_read = 1 << 20) const;
  const host_config& config() const noexcept {
    return cfg_;
  }
  /// Who serves each slot, kept current after every step (any thread
  /// reads it).
  std::shared_ptr<const slot_directory> directory() const noexcept {
    return dir_;
  }

  /// Use `make`.
  replica_host(storage::env& env, host_config cfg, sender send, clock now,
               host_events events);

private:
  struct group;
  struct waiter {
    cluster::seq_t seq = 0;
    cluster::epoch_t epoch = 0;
    cluster::millis deadline = 0;
    std::shared_ptr<group> of;
  };
  struct slot_state {
    slot_t slot = 0;
    std::vector<cluster::node_id> replicas;
    std::unique_ptr<slot_port> port;
    std::unique_ptr<cluster::replica_core> core;
    std::optional<cluster::election> elect;
    cluster::millis elect_deadline = 0;
    cluster::millis lead_sent = 0;
    /// The operator waiting for the election that runs (`promote`).
    promote_done promoted;
    /// The highest epoch an election's refusal named.
    cluster::epoch_t highest_seen = 0;
    /// A failed first election is tried again from here.
    cluster::millis retry_at = 0;
    /// Writes waiting for the commit point, in seq order.
    std::deque<waiter> waiting;
    /// A read failed: the slot does nothing more (the node stops).
    bool failed = false;
  };

  slot_state* find(slot_t s);
  const slot_state* find(slot_t s) const;
  /// One message to slot `ss`'s core, or to its election.
  void deliver(slot_state& ss, const cluster::envelope& e);
  void carry_out(slot_state& ss, cluster::ready r);
  /// Takes the port's error: a failed read stops the slot (its waiting
  /// writes are lost) and is reported fatal. True when the slot is failed.
  bool read_failed(slot_state& ss);
  void on_notice(slot_state& ss, const cluster::notice& n);
  slot_status status_of(const slot_state& ss) const;
  /// Writes slot `ss`'s status into the directory.
  void publish(const slot_state& ss);
  void post(slot_t s, cluster::envelope e);
  /// Delivers the messages this node sent itself, one step at a time.
  void drain_local();
  void start_election(slot_state& ss, cluster::election_config c);
  void end_election(slot_state& ss);
  /// Tells the operator waiting on `ss`'s election how it ended (empty
  /// `failure`: elected).
  void tell_promoted(slot_state& ss, std::optional<api_error> failure);
  /// The first leader of a fresh slot, or a replica that never knew one:
  /// an election that moves no replica that follows someone.
  void maybe_bootstrap(slot_state& ss);
  /// Resolves the waiters the commit point now covers.
  void settle(slot_state& ss);
  void lose(waiter& w, slot_t s, const api_error& why);
  void lose_all(slot_state& ss, const api_error& why);
  std::string name(cluster::node_id n) const;

  storage::env& env_;
  host_config cfg_;
  sender send_;
  clock now_;
  host_events events_;
  std::shared_ptr<slot_directory> dir_;
  /// By slot: null where this node holds no replica.
  std::vector<std::unique_ptr<slot_state>> slots_;
  std::deque<slot_message> local_;
  bool draining_ = false;
  /// `stop` ran: nothing is admitted or waited for any more.
  bool stopped_ = false;
};

/// The durability of a cluster node: a group is durable once the host has
/// every mark committed by a quorum. Runs the wait on the committer's
/// thread, where the host lives.
std::shared_ptr<actors::durability_policy>
quorum_durability(std::shared_ptr<actors::committer> commits,
                  std::shared_ptr<replica_host> host);

} // namespace spool::core
