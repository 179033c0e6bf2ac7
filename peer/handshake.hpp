#pragma once

/// How two nodes admit each other on a peer link (docs/cluster.md, "Peer
/// links"): each sends a hello with its protocol version, node, cluster id,
/// a fresh nonce and its client addresses; each answers the other's hello
/// with a proof, HMAC-SHA256 under the cluster secret of the other's nonce,
/// its own node, its own nonce and its addresses. The secret never crosses the
/// wire; a proof binds both nonces and the prover, so it cannot be replayed on
/// another link nor reflected back. Pure: the shell supplies the nonce (random
/// bytes) and sends what this returns.

#include <set>
#include <string>

#include "peer/codec.hpp"
#include "vocab/expected.hpp"

namespace spool::peer {

struct handshake_config {
  cluster::node_id self{};
  std::string cluster_id;
  std::string secret;
  /// The nodes of `--peers` (this one included).
  std::set<cluster::node_id> members;
  /// Where this node's clients reach it (its hello says so).
  std::string http;
  std::string msgpack;
};

class handshake {
public:
  /// `nonce`: fresh random bytes (16 or more) for this link.
  handshake(handshake_config cfg, std::string nonce);

  /// The hello to send first.
  hello start() const;
  /// The other side's hello: the proof to send, or why the link is refused
  /// (another protocol version, another cluster, an unknown node, itself).
  expected<proof> on_hello(const hello& theirs);
  /// The other side's proof: its node once proven, or why it is refused (a
  /// proof before a hello, a wrong secret).
  expected<cluster::node_id> on_proof(const proof& p) const;
  /// The other side's hello, once `on_hello` accepted it (its addresses
  /// are proven once `on_proof` accepts its proof).
  const std::optional<hello>& theirs() const noexcept {
    return theirs_;
  }

private:
  handshake_config cfg_;
  std::string nonce_;
  std::optional<hello> theirs_;
};

/// HMAC-SHA256 of `secret` over the cluster id, the nonce the prover
/// answers, the prover's node, its own nonce and its client addresses.
std::string proof_mac(const std::string& secret, const std::string& cluster_id,
                      const std::string& answered_nonce,
                      cluster::node_id prover, const std::string& prover_nonce,
                      const std::string& prover_http,
                      const std::string& prover_msgpack);

} // namespace spool::peer
