#pragma once

/// Cluster mode in spoold (docs/cluster.md, "Serving"): the node's
/// replication started over its store with the writer's committer, the
/// writer's durability (a majority of a slot's replicas) and durable marks,
/// and the broker told of every slot this node starts or stops serving.
/// Notices that come before the broker exists are kept and given to it
/// when it attaches.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/interfaces.hpp"
#include "config/cluster.hpp"
#include "node/api.hpp"
#include "server/replication.hpp"
#include "storage/store.hpp"

namespace spool::server {

class cluster_node {
public:
  /// Reads the secret file, starts the replica host on a committer thread
  /// of its own and listens for peers (it dials them at `connect`).
  static expected<std::unique_ptr<cluster_node>>
  start(storage::store& st, const config::cluster_settings& c,
        std::function<void(const std::string&)> log);
  ~cluster_node();

  /// The writer's committer, durability and marks.
  std::shared_ptr<actors::committer> committer() const {
    return commits_;
  }
  std::shared_ptr<actors::durability_policy> durability() const;
  std::shared_ptr<actors::durable_marks> marks() const {
    return marks_;
  }
  /// Who serves each slot (the broker's refusals).
  std::shared_ptr<const core::slot_directory> directory() const;
  /// From now on the broker hears when a slot starts or stops being served
  /// here; the slots served already, at once.
  void attach(actors::broker_actor broker);
  /// Dials the other nodes, telling them where this node's clients reach
  /// it (`self`: its doors' advertised addresses).
  void connect(core::client_addresses self);
  /// The operator's promote (the gateway's promoter, docs/cluster.md,
  /// "Failover"): `k` runs once, on the committer's thread, when every
  /// slot's election ended. A single slot's failure is the answer's error.
  void promote(node::promote_request req,
               std::function<void(expected<node::promote_reply>)> k);
  /// Every slot's replica here (the gateway's slot reporter, for the
  /// metrics); `k` runs on the committer's thread.
  void slot_replicas(
      std::function<void(expected<std::vector<node::slot_replica>>)> k);
  /// The slots this node serves now (leads, its epoch start committed):
  /// what its listings cover. Any thread.
  std::vector<slot_t> served_slots() const;
  /// The SIGTERM handoff of every slot led here (replication::hand_off),
  /// before the broker stops: blocks up to about `budget`.
  replication::handoff_report hand_off(std::chrono::milliseconds budget);
  /// Reads the peer TLS files again (SIGHUP): links made from now on use
  /// them, open ones keep theirs. "" or why not (the old ones stay).
  std::string reload_tls(const config::cluster_settings& c);
  /// The peer links' certificate's notAfter, unix seconds (0: no TLS).
  std::int64_t peer_certificate_expiry() const noexcept {
    return peer_not_after_.load();
  }
  /// Stops the links, fails the writes still waiting for a quorum and
  /// drops the broker's handle (before the actor system ends).
  void stop();
  /// The committer's thread lets go of what CAF keeps per thread. A thread
  /// that touched CAF holds CAF's logger (a thread-local) until it ends,
  /// and `~actor_system` waits until the logger is gone: this thread
  /// outlives the actor system, so without this a SIGTERM'd node could
  /// wait there for good. Call once the writer stopped.
  void leave_actor_system();

  /// Use `start`.
  struct relay;
  cluster_node(std::shared_ptr<actors::committer> commits,
               std::shared_ptr<actors::durable_marks> marks,
               std::shared_ptr<relay> to_broker);

private:
  std::shared_ptr<actors::committer> commits_;
  std::shared_ptr<actors::durable_marks> marks_;
  std::shared_ptr<relay> relay_;
  std::unique_ptr<replication> repl_;
  std::atomic<std::int64_t> peer_not_after_{0};
};

/// The secret in file `path`: its content without a final line end; an
/// empty or unreadable file is an error that names it.
expected<std::string> read_secret(const std::string& path);

} // namespace spool::server
