#pragma once

/// A node's replication, assembled (docs/cluster.md, "Shell"): the replica
/// host on the committer's thread (the node's one LMDB writer), the peer
/// links on an io thread of their own, and a tick that drives the host's
/// timers. Messages received are handed to the committer's thread as jobs;
/// ticks too, one at a time (a busy writer does not pile them up). The
/// durability policy it gives answers a write once a majority of its
/// slot's replicas synced it.

#include <asio.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/replica/replica_host.hpp"
#include "core/writer/committer.hpp"
#include "core/writer/durable_marks.hpp"
#include "peer/links.hpp"

namespace spool::server {

struct replication_options {
  cluster::node_id self{};
  /// Every node of `--peers` (this one included) and where it listens for
  /// its peers.
  std::map<cluster::node_id, peer::peer_address> nodes;
  std::uint32_t replication_factor = 3;
  std::string cluster_id;
  std::string secret;
  /// Mutual TLS on the peer links (both or neither; peer/links.hpp).
  std::shared_ptr<const tls::context> tls_server;
  std::shared_ptr<const tls::context> tls_client;
  /// The host's timers and bounds (`self`, `nodes`, `replication_factor`,
  /// `slots` are filled in from the rest).
  core::host_config host{};
  /// How often the host's timers are looked at.
  std::chrono::milliseconds tick{50};
  /// Where the links log (admissions, refusals, broken links) and the host
  /// its notices.
  std::function<void(const std::string&)> log;
  /// The nodes' names in messages, by index (none: `n<index + 1>`).
  std::vector<std::string> names;
  /// The writer's durable marks: a slot's is raised to its commit point
  /// when this node starts serving it (every entry it holds is committed
  /// then, and answers that read them may go).
  std::shared_ptr<actors::durable_marks> marks;
  /// On the committer's thread: this node starts serving slot `s` as its
  /// leader in epoch `e`, or stops (0). The broker loads the slot's queues
  /// with that term, or stops them.
  std::function<void(slot_t, cluster::epoch_t)> serving;
};

class replication {
public:
  /// Installs the host as `commits`' hook, starts it on the committer's
  /// thread, listens for peers and dials them. `commits` must not have
  /// committed anything yet.
  static expected<std::unique_ptr<replication>>
  start(storage::env& env, std::uint32_t slots,
        std::shared_ptr<actors::committer> commits, replication_options opts);
  ~replication();

  /// The writer's durability policy: a majority of the slot's replicas.
  std::shared_ptr<actors::durability_policy> durability() const;
  /// Who serves each slot, kept current by the host.
  std::shared_ptr<const core::slot_directory> directory() const;
  /// The port the links listen on.
  std::uint16_t peer_port() const;
  /// Before `start` only: where node `n` listens (tests on port 0).
  void set_address(cluster::node_id n, peer::peer_address a);
  /// Starts dialing (after every `set_address`); `self`: where this
  /// node's clients reach it (its hello tells the peers; refusals of the
  /// slots it leads name it).
  void connect(core::client_addresses self);
  /// New peer TLS contexts (SIGHUP): links made from now on use them.
  void set_tls(std::shared_ptr<const tls::context> server,
               std::shared_ptr<const tls::context> client);
  /// Runs `f` with the host on the committer's thread and waits for it
  /// (tests, metrics).
  void with_host(const std::function<void(core::replica_host&)>& f);
  /// As `with_host`, waiting no later than `until`: false when `f` did not
  /// run by then (a stuck committer), and then it never runs.
  bool with_host(const std::function<void(core::replica_host&)>& f,
                 std::chrono::steady_clock::time_point until);
  /// Runs the operator's promote on the committer's thread: an election
  /// for `slot`, or for every slot held here (none); `done` gets each
  /// slot's outcome, by slot, once every one ended (on that thread).
  void promote(std::optional<slot_t> slot, std::optional<cluster::node_id> to,
               std::function<void(std::vector<core::promote_outcome>)> done);
  /// Every slot's replica here (the metrics), given to `done` on the
  /// committer's thread.
  void report(std::function<void(std::vector<core::slot_report>)> done);
  /// The SIGTERM handoff (docs/cluster.md, "Handoff"): each slot this node
  /// leads goes to a follower whose link is up and that holds the slot's
  /// whole log, by an election that prefers it among the longest logs;
  /// then it waits until the new leader's epoch start is committed as this
  /// node sees it. Rounds repeat (a follower short of a tail catches up
  /// meanwhile) until every slot is handed or `budget` ran out. Blocks the
  /// caller (not the committer's thread). A slot not handed waits for this
  /// node's return or a promote, as after a kill.
  struct handoff_report {
    std::size_t led = 0;            ///< slots this node led at the start
    std::size_t handed = 0;         ///< handed to another node, confirmed
    std::vector<std::string> lines; ///< one per slot led, what happened
  };
  handoff_report hand_off(std::chrono::milliseconds budget);
  /// Stops the links and the ticks, and fails every write still waiting.
  void stop();
  peer::links_stats link_stats() const;

  replication(std::shared_ptr<actors::committer> commits,
              std::shared_ptr<core::replica_host> host);

private:
  void schedule_tick();

  std::shared_ptr<actors::committer> commits_;
  std::shared_ptr<core::replica_host> host_;
  /// The links as the host's sender and the receive jobs find them: cut
  /// (on the committer's thread) at the stop, so that a job still queued
  /// sends nothing to an io_context that is gone.
  std::shared_ptr<std::shared_ptr<peer::links>> wire_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
      work_;
  std::shared_ptr<peer::links> links_;
  asio::steady_timer tick_timer_;
  std::chrono::milliseconds tick_{50};
  std::shared_ptr<std::atomic<bool>> tick_queued_
      = std::make_shared<std::atomic<bool>>(false);
  std::thread io_thread_;
  std::atomic<bool> stopped_{false};
};

} // namespace spool::server
