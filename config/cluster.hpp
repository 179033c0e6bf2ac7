#pragma once

/// Cluster mode's options (docs/configuration.md, "Cluster"): this node's
/// name, every node of the cluster with its peer address, the replication
/// factor, the cluster's id and the file of its secret. Without `--peers`
/// the node runs alone, as it always has.

#include <cstdint>
#include <string>
#include <vector>

namespace spool::config {

/// One node of `--peers`: its name and where it listens for its peers.
struct peer_entry {
  std::string name;
  std::string host;
  std::uint16_t port = 0;
  friend bool operator==(const peer_entry&, const peer_entry&) = default;
};

struct cluster_settings {
  /// This node's name among `peers` (--node-id).
  std::string node_id;
  /// Every node, in order (--peers n1=host:port,n2=host:port,...); empty:
  /// one node.
  std::vector<peer_entry> peers;
  /// How many nodes hold each slot (--replication-factor).
  std::uint64_t replication_factor = 3;
  /// Nodes of another cluster are refused on the peer links (--cluster-id).
  std::string cluster_id = "spool";
  /// The file of the secret the peers prove they share
  /// (--cluster-secret-file; never on the command line or in the
  /// environment, which leak).
  std::string secret_file;
  /// Where clients reach this node's doors, host:port, as a refusal of a
  /// slot it leads names it (--advertise-http, --advertise-msgpack); empty:
  /// derived at start (`advertised`).
  std::string advertise_http;
  std::string advertise_msgpack;
  /// Mutual TLS on the peer links (docs/security.md, "TLS on the peer
  /// links"): this node's certificate and key (presented to the peers it
  /// dials and to those that dial it), and the CA every peer's must chain
  /// to (--peer-tls-cert-file, --peer-tls-key-file, --peer-tls-ca-file:
  /// all three or none).
  std::string peer_tls_cert_file;
  std::string peer_tls_key_file;
  std::string peer_tls_ca_file;

  bool peer_tls() const noexcept {
    return !peer_tls_cert_file.empty();
  }

  bool enabled() const noexcept {
    return !peers.empty();
  }
};

/// Parses `--peers`' value into `out`: "" or what is wrong with it.
std::string parse_peers(const std::string& value, std::vector<peer_entry>& out);
/// `--peers`' value as given.
std::string show_peers(const std::vector<peer_entry>& peers);
/// An `--advertise-*` value (`what` names the option): "" or what is wrong
/// with it (host:port, an IPv6 host in brackets, a port 1..65535).
std::string check_advertised(const std::string& what, const std::string& value);
/// Where clients reach a door: `given` when set; else the door's listen
/// host, or this node's `--peers` host when the door listens on every
/// interface (0.0.0.0, ::), with the port it bound.
std::string advertised(const std::string& given, const std::string& listen_host,
                       std::uint16_t bound_port, const std::string& peer_host);
/// The checks across options, once every source is read: "" or what is
/// wrong. `relaxed`: the durability mode is relaxed.
std::string check_cluster(const cluster_settings& c, bool relaxed);

} // namespace spool::config
