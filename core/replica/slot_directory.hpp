#pragma once

/// Who serves each slot, as this node knows it (docs/cluster.md, "Serving"):
/// written by the replica host on the writer thread after every step that
/// changes a slot's leadership, read by the broker and the doors on any
/// thread to refuse what this node may not serve, naming the leader. One
/// word per slot, so a reader never sees half a change. No CAF.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cluster/types.hpp"
#include "vocab/errors.hpp"
#include "vocab/expected.hpp"
#include "vocab/slot.hpp"

namespace spool::core {

/// The replicas of slot `s`: `rf` nodes, from node `s % n` on. The first
/// is the slot's first leader.
std::vector<cluster::node_id>
replicas_of(slot_t s, const std::vector<cluster::node_id>& nodes,
            std::uint32_t rf);

/// What a node knows of one slot's leadership.
struct slot_status {
  /// This node holds a replica of the slot.
  bool held = false;
  /// Its store failed there: it does nothing more with the slot.
  bool failed = false;
  /// It leads the slot and its epoch start is committed: it may serve.
  bool serving = false;
  /// It leads the slot and waits for its epoch start's quorum.
  bool taking_office = false;
  std::optional<cluster::node_id> leader;
  cluster::epoch_t epoch = 0;
  friend bool operator==(const slot_status&, const slot_status&) = default;
};

/// The names of a cluster's nodes and who holds each slot: what a refusal
/// says.
struct cluster_names {
  cluster::node_id self{};
  std::vector<cluster::node_id> nodes;
  /// By node index; a node without one is `n<index + 1>`.
  std::vector<std::string> names;
  std::uint32_t replication_factor = 3;

  std::string name(cluster::node_id n) const;
};

/// Where a node's clients reach it: host:port of its HTTP and msgpack doors
/// (its `--advertise-*`, carried in its peer hello; "" while unknown).
struct client_addresses {
  std::string http;
  std::string msgpack;
  friend bool operator==(const client_addresses&, const client_addresses&)
      = default;
};

/// Why this node may not serve a write of slot `s` in state `st`
/// (`not_leader` naming the leader or the replicas, `unavailable` while no
/// leader is known or this one takes office); none when it serves. A
/// `not_leader` with a known leader carries its `leader_ref` (without
/// addresses: the directory adds them).
std::optional<api_error> refusal_of(slot_t s, const slot_status& st,
                                    const cluster_names& names);

class slot_directory {
public:
  slot_directory(std::uint32_t slots, cluster_names names);

  /// The writer thread: slot `s` is now in state `st`.
  void set(slot_t s, const slot_status& st) noexcept;
  /// Any thread.
  slot_status get(slot_t s) const noexcept;
  /// The refusal of `refusal_of` for the slot's state here, or for `st`,
  /// its leader's addresses filled in.
  std::optional<api_error> refusal(slot_t s) const;
  std::optional<api_error> refusal(slot_t s, const slot_status& st) const;
  /// Any thread: node `n`'s clients reach it at `a` (this node's own at
  /// its start, the others' from their hellos). A cache of what the nodes
  /// said, not the slots' state: so it is `const`, as every reader's
  /// handle is.
  void set_addresses(cluster::node_id n, client_addresses a) const;
  client_addresses addresses(cluster::node_id n) const;
  std::uint32_t slots() const noexcept {
    return slots_;
  }
  const cluster_names& names() const noexcept {
    return names_;
  }

private:
  std::uint32_t slots_;
  cluster_names names_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> words_;
  mutable std::mutex addresses_mu_;
  mutable std::vector<client_addresses> addresses_; ///< by node index
};

} // namespace spool::core
