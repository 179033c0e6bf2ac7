#include "config/cluster.hpp"

#include <algorithm>
#include <set>

#include "vocab/host_port.hpp"

namespace spool::config {

namespace {

bool name_ok(const std::string& n) {
  return !n.empty() && n.size() <= 32
         && std::all_of(n.begin(), n.end(), [](char c) {
              return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                     || (c >= '0' && c <= '9') || c == '-' || c == '_';
            });
}

/// "name=host:port" (an IPv6 host in brackets): "" or what is wrong.
std::string parse_one(const std::string& item, peer_entry& out) {
  auto eq = item.find('=');
  if (eq == std::string::npos)
    return "peers: '" + item + "' is not name=host:port";
  out.name = item.substr(0, eq);
  if (!name_ok(out.name))
    return "peers: node name '" + out.name
           + "' must be 1..32 letters, digits, '-' or '_'";
  host_port hp;
  auto err
      = read_host_port("peers: " + out.name + "'s", item.substr(eq + 1), hp);
  out.host = std::move(hp.host);
  out.port = hp.port;
  return err;
}

} // namespace

std::string parse_peers(const std::string& value,
                        std::vector<peer_entry>& out) {
  std::vector<peer_entry> peers;
  std::set<std::string> names;
  std::set<std::pair<std::string, std::uint16_t>> addresses;
  std::size_t from = 0;
  while (from <= value.size()) {
    auto comma = value.find(',', from);
    auto item = value.substr(
        from, comma == std::string::npos ? std::string::npos : comma - from);
    if (!item.empty()) {
      peer_entry e;
      if (auto err = parse_one(item, e); !err.empty())
        return err;
      if (!names.insert(e.name).second)
        return "peers: node " + e.name + " is named twice";
      if (!addresses.insert({e.host, e.port}).second)
        return "peers: " + e.host + ":" + std::to_string(e.port)
               + " is given twice";
      peers.push_back(std::move(e));
    }
    if (comma == std::string::npos)
      break;
    from = comma + 1;
  }
  if (peers.size() > 64)
    return "peers: at most 64 nodes, got " + std::to_string(peers.size());
  out = std::move(peers);
  return {};
}

std::string show_peers(const std::vector<peer_entry>& peers) {
  std::string s;
  for (auto& p : peers) {
    if (!s.empty())
      s += ',';
    s += p.name + "=" + show_host_port(p.host, p.port);
  }
  return s;
}

std::string check_advertised(const std::string& what,
                             const std::string& value) {
  if (value.empty())
    return {};
  host_port hp;
  return read_host_port(what + "'s", value, hp);
}

std::string advertised(const std::string& given, const std::string& listen_host,
                       std::uint16_t bound_port, const std::string& peer_host) {
  if (!given.empty())
    return given;
  bool every = listen_host.empty() || listen_host == "0.0.0.0"
               || listen_host == "::" || listen_host == "[::]";
  return show_host_port(every ? peer_host : listen_host, bound_port);
}

std::string check_cluster(const cluster_settings& c, bool relaxed) {
  if (!c.enabled()) {
    if (!c.node_id.empty() || !c.secret_file.empty()
        || !c.advertise_http.empty() || !c.advertise_msgpack.empty()
        || !c.peer_tls_cert_file.empty() || !c.peer_tls_key_file.empty()
        || !c.peer_tls_ca_file.empty())
      return "node-id, cluster-secret-file, advertise-* and peer-tls-* need "
             "peers (the cluster's nodes); without peers the node runs "
             "alone";
    return {};
  }
  if (c.node_id.empty())
    return "peers needs node-id: this node's name among them";
  for (auto [what, v] : {std::pair{"advertise-http", &c.advertise_http},
                         std::pair{"advertise-msgpack", &c.advertise_msgpack}})
    if (auto err = check_advertised(what, *v); !err.empty())
      return err;
  if (std::none_of(c.peers.begin(), c.peers.end(),
                   [&](const peer_entry& p) { return p.name == c.node_id; }))
    return "node-id " + c.node_id + " is not among peers ("
           + show_peers(c.peers) + ")";
  if (c.replication_factor < 1 || c.replication_factor > c.peers.size())
    return "replication-factor must be 1.." + std::to_string(c.peers.size())
           + " (the nodes of peers), got "
           + std::to_string(c.replication_factor);
  int tls_files = !c.peer_tls_cert_file.empty() + !c.peer_tls_key_file.empty()
                  + !c.peer_tls_ca_file.empty();
  if (tls_files != 0 && tls_files != 3)
    return "TLS on the peer links needs all of peer-tls-cert-file, "
           "peer-tls-key-file and peer-tls-ca-file (mutual TLS: each node "
           "presents its certificate and checks its peers' against the CA)";
  if (c.secret_file.empty())
    return "peers needs cluster-secret-file: the file of the secret the "
           "nodes prove they share";
  if (relaxed)
    return "durability relaxed is refused with peers: a write is "
           "acknowledged only once a majority of its slot's replicas synced "
           "it (docs/cluster.md)";
  return {};
}

} // namespace spool::config
