// Cluster mode's options (config/cluster.hpp): --peers parsed with a
// precise error for each mistake, the checks across options (node-id among
// peers, the replication factor, the secret file, relaxed durability
// refused), and the same from the environment and a TOML file.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "config/options.hpp"

using namespace spool::config;

namespace {

auto env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::vector<std::string> three(std::vector<std::string> more = {}) {
  std::vector<std::string> a
      = {"--node-id",
         "n2",
         "--peers",
         "n1=10.0.0.1:6700,n2=10.0.0.2:6700,n3=[::1]:6701",
         "--cluster-secret-file",
         "/etc/spool/secret"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

} // namespace

TEST_CASE("without --peers a node runs alone, and --peers names every node "
          "in order with its address",
          "[config][cluster]") {
  auto alone = parse({}, env_of({}));
  REQUIRE(alone.options);
  CHECK_FALSE(alone.options->cluster.enabled());

  auto r = parse(three(), env_of({}));
  REQUIRE(r.options);
  auto& c = r.options->cluster;
  CHECK(c.enabled());
  CHECK(c.node_id == "n2");
  REQUIRE(c.peers.size() == 3);
  CHECK(c.peers[0] == peer_entry{"n1", "10.0.0.1", 6700});
  CHECK(c.peers[2] == peer_entry{"n3", "::1", 6701});
  CHECK(c.replication_factor == 3);
  CHECK(c.cluster_id == "spool");
  CHECK(show_peers(c.peers)
        == "n1=10.0.0.1:6700,n2=10.0.0.2:6700,n3=[::1]:6701");
}

TEST_CASE("a wrong --peers or cluster option is refused with what is wrong",
          "[config][cluster]") {
  auto error_of = [](std::vector<std::string> args) {
    auto r = parse(args, env_of({}));
    CHECK_FALSE(r.options);
    return r.error;
  };
  CHECK(error_of({"--peers", "n1"}) == "peers: 'n1' is not name=host:port");
  CHECK(error_of({"--peers", "n1=h:0"})
        == "peers: n1's port must be 1..65535, got '0'");
  CHECK(error_of({"--peers", "n1=h"})
        == "peers: n1's address 'h' is not "
           "host:port");
  CHECK(error_of({"--peers", "n 1=h:1"})
        == "peers: node name 'n 1' must be 1..32 letters, digits, '-' or '_'");
  CHECK(error_of({"--peers", "n1=h:1,n1=g:1"})
        == "peers: node n1 is named twice");
  CHECK(error_of({"--peers", "n1=h:1,n2=h:1"}) == "peers: h:1 is given twice");
  CHECK(error_of({"--peers", "n1=h:1,n2=g:1"})
        == "peers needs node-id: this node's name among them");
  CHECK(error_of(three({"--node-id", "n9"}))
        == "node-id n9 is not among peers "
           "(n1=10.0.0.1:6700,n2=10.0.0.2:6700,n3=[::1]:6701)");
  CHECK(error_of(three({"--replication-factor", "4"}))
        == "replication-factor must be 1..3 (the nodes of peers), got 4");
  CHECK(error_of({"--node-id", "n1", "--peers", "n1=h:1",
                  "--replication-factor", "1"})
        == "peers needs cluster-secret-file: the file of the secret the "
           "nodes prove they share");
  auto need_peers = "node-id, cluster-secret-file, advertise-* and "
                    "peer-tls-* need peers (the cluster's nodes); without "
                    "peers the node runs alone";
  CHECK(error_of({"--node-id", "n1"}) == need_peers);
  CHECK(error_of({"--advertise-http", "h:1"}) == need_peers);
  CHECK(error_of({"--peer-tls-ca-file", "/ca.pem"}) == need_peers);
  CHECK_THAT(error_of(three({"--durability", "relaxed"})),
             Catch::StartsWith("durability relaxed is refused with peers"));
}

TEST_CASE("TLS on the peer links takes its three files together",
          "[config][cluster][tls]") {
  auto r
      = parse(three({"--peer-tls-cert-file", "/n2.pem", "--peer-tls-key-file",
                     "/n2.key", "--peer-tls-ca-file", "/ca.pem"}),
              env_of({}));
  REQUIRE(r.options);
  CHECK(r.options->cluster.peer_tls());
  CHECK(r.options->cluster.peer_tls_ca_file == "/ca.pem");
  CHECK_FALSE(parse(three(), env_of({})).options->cluster.peer_tls());
  auto two = parse(three({"--peer-tls-cert-file", "/n2.pem",
                          "--peer-tls-key-file", "/n2.key"}),
                   env_of({}));
  CHECK_FALSE(two.options);
  CHECK(two.error
        == "TLS on the peer links needs all of peer-tls-cert-file, "
           "peer-tls-key-file and peer-tls-ca-file (mutual TLS: each node "
           "presents its certificate and checks its peers' against the CA)");
  auto from_env = parse(three(), env_of({{"SPOOL_PEER_TLS_CERT_FILE", "/c"},
                                         {"SPOOL_PEER_TLS_KEY_FILE", "/k"},
                                         {"SPOOL_PEER_TLS_CA_FILE", "/a"}}));
  REQUIRE(from_env.options);
  CHECK(from_env.options->cluster.peer_tls_key_file == "/k");
}

TEST_CASE("cluster options come from the environment and a TOML file too",
          "[config][cluster]") {
  auto r
      = parse({}, env_of({{"SPOOL_NODE_ID", "a"},
                          {"SPOOL_PEERS", "a=127.0.0.1:7001,b=127.0.0.1:7002"},
                          {"SPOOL_REPLICATION_FACTOR", "2"},
                          {"SPOOL_CLUSTER_SECRET_FILE", "/s"}}));
  REQUIRE(r.options);
  CHECK(r.options->cluster.node_id == "a");
  CHECK(r.options->cluster.replication_factor == 2);

  auto path
      = std::filesystem::temp_directory_path() / "spool-cluster-test.toml";
  {
    std::ofstream f{path};
    f << "node-id = \"n1\"\npeers = \"n1=127.0.0.1:7001\"\n"
         "replication-factor = 1\ncluster-id = \"blue\"\n"
         "cluster-secret-file = \"/s\"\n";
  }
  auto t = parse({"--config", path.string()}, env_of({}));
  std::filesystem::remove(path);
  REQUIRE(t.options);
  CHECK(t.options->cluster.cluster_id == "blue");
  CHECK(t.options->cluster.peers.size() == 1);
}

TEST_CASE("the advertised client addresses: as given, checked, or derived "
          "from the listen address and this node's peers host",
          "[config][cluster]") {
  auto error_of = [](std::vector<std::string> args) {
    return parse(three(std::move(args)), env_of({})).error;
  };
  auto ok = parse(three({"--advertise-http", "spool-2.example:80"}),
                  env_of({{"SPOOL_ADVERTISE_MSGPACK", "10.9.9.9:7"}}));
  REQUIRE(ok.options);
  CHECK(ok.options->cluster.advertise_http == "spool-2.example:80");
  CHECK(ok.options->cluster.advertise_msgpack == "10.9.9.9:7");
  CHECK(error_of({"--advertise-msgpack", "nohost"})
        == "advertise-msgpack's address 'nohost' is not host:port");
  CHECK(error_of({"--advertise-http", "h:0"})
        == "advertise-http's port must be 1..65535, got '0'");
  CHECK(error_of({"--advertise-http", "h x:80"})
        == "advertise-http's address 'h x:80' may hold only letters, digits "
           "and . - _ : [ ]");
  CHECK(advertised("lb.example:443", "0.0.0.0", 6632, "10.0.0.2")
        == "lb.example:443");
  CHECK(advertised("", "0.0.0.0", 6632, "10.0.0.2") == "10.0.0.2:6632");
  CHECK(advertised("", "::", 6690, "fd00::2") == "[fd00::2]:6690");
  CHECK(advertised("", "127.0.0.3", 40123, "10.0.0.2") == "127.0.0.3:40123");
}
