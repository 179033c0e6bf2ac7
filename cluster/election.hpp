#pragma once

/// One election of a slot's leader, run by a coordinator (the node the
/// operator's `spool cluster promote` reached, or a leader back from a
/// restart): fence the replicas to a new epoch, and once a majority that is
/// not damaged has promised it, make the one with the longest log lead
/// (docs/cluster.md, "Elections"). Each replica grants an epoch at most
/// once, so at most one election gathers a majority for it: one leader per
/// epoch. Pure, like replica_core.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/messages.hpp"

namespace spool::cluster {

struct election_config {
  node_id coordinator{};
  std::vector<node_id> replicas;
  /// The epoch to fence to: above every epoch the coordinator knows.
  epoch_t epoch = 0;
  /// Fence only replicas at exactly this epoch (a restarted leader).
  std::optional<epoch_t> expect;
  /// The operator's `--to`: lead only if this replica holds the longest log.
  std::optional<node_id> to;
  /// Among replicas with the longest log, this one wins.
  std::optional<node_id> prefer;
  /// Fence the coordinator's own replica only once the others' grants make
  /// a majority with it (a restarted leader: a refused election must not
  /// raise its own epoch, which would depose a healthy leader on contact).
  bool self_last = false;
  /// A leader's handoff: once a majority granted, wait (until the
  /// deadline, `settle`) for `prefer`'s answer before choosing, so that it
  /// leads whenever it holds the longest log.
  bool await_prefer = false;
  /// How its reasons name a node (none: `n<index + 1>`).
  std::function<std::string(node_id)> name{};
};

enum class election_state : std::uint8_t { running, elected, failed };

class election {
public:
  explicit election(election_config cfg);

  /// The fences to send.
  std::vector<envelope> start() const;
  /// An answer to a fence; returns the `lead_req` once one is chosen.
  std::vector<envelope> on_reply(node_id from, const fence_rep& r);
  /// The deadline passed, first: an election that still waits for its
  /// preferred replica's answer (`await_prefer`) with a majority's grants
  /// chooses without it (the `lead_req`); anything else, nothing.
  std::vector<envelope> settle();
  /// The coordinator gives up (its deadline passed): nothing more is sent.
  void give_up();
  /// Once elected, the `lead_req` again (a lost one would leave the slot
  /// without a leader; taking office twice is refused by the replica).
  std::vector<envelope> lead_again() const;

  election_state state() const noexcept {
    return state_;
  }
  /// The epoch it fences to.
  epoch_t epoch() const noexcept {
    return cfg_.epoch;
  }
  std::optional<node_id> chosen() const noexcept {
    return chosen_;
  }
  /// Why it failed, for the operator.
  const std::string& reason() const noexcept {
    return reason_;
  }
  /// The highest epoch a refusal named, and its leader: where to look.
  epoch_t highest_seen() const noexcept {
    return highest_;
  }
  std::optional<node_id> leader_seen() const noexcept {
    return leader_seen_;
  }

private:
  struct answer {
    node_id from{};
    fence_rep rep;
  };
  std::vector<envelope> decide();
  /// `await_prefer` no longer holds a decision (the deadline passed).
  bool prefer_waived_ = false;
  void fail(std::string why);

  std::string name_of_(node_id n) const;
  election_config cfg_;
  std::vector<answer> answers_;
  election_state state_ = election_state::running;
  std::optional<node_id> chosen_;
  std::string reason_;
  epoch_t highest_ = 0;
  std::optional<node_id> leader_seen_;
  bool self_asked_ = false;
};

} // namespace spool::cluster
