// Mutual TLS on the peer links (peer/links.hpp, docs/security.md "TLS on
// the peer links"): three nodes on 127.0.0.1 with certificates of one CA
// carry messages; a certificate of another CA, or one that does not name
// the peer's --peers host, is refused; TLS meeting plain links is refused
// with a line that names the options; a stalled handshake closes only its
// own connection; a reload gives new links the new certificate. Real
// sockets: waits have deadlines, never sleeps.

#include <catch2/catch.hpp>

#include <poll.h>

#include "tls/channel.hpp"
#include "unit/peer/three_links.hpp"
#include "unit/storage/fixture.hpp"
#include "unit/tls/certs.hpp"

using namespace spool;
using namespace spool::test;

namespace {

/// A CA and, for each node, a certificate naming 127.0.0.1 (the nodes'
/// --peers host in these tests).
struct peer_pki {
  temp_dir dir;
  cert_maker certs{dir.path};

  static node_tls contexts(const cert_maker& ca, const pem_pair& own) {
    tls::settings s;
    s.cert_file = own.cert_file;
    s.key_file = own.key_file;
    s.ca_file = ca.ca_file();
    s.require_client_cert = true;
    auto server = tls::context::server(s);
    auto client = tls::context::client(s);
    REQUIRE(server);
    REQUIRE(client);
    return {*server, *client};
  }
  node_tls node_certificate(const std::string& cn,
                            const std::string& san = "IP:127.0.0.1") {
    return contexts(certs, certs.leaf(cn, cn, san));
  }
  std::vector<node_tls> three() {
    return {node_certificate("n1"), node_certificate("n2"),
            node_certificate("n3")};
  }
};

/// A TCP connection to 127.0.0.1:`port`, blocking, from the test thread.
struct raw_client {
  asio::io_context io;
  asio::ip::tcp::socket sock{io};

  explicit raw_client(std::uint16_t port) {
    sock.connect({asio::ip::make_address("127.0.0.1"), port});
  }
  /// Whether the other side closes within 10 s.
  bool closed_by_peer() {
    pollfd p{sock.native_handle(), POLLIN, 0};
    for (int i = 0; i < 100; ++i) {
      if (::poll(&p, 1, 100) == 1) {
        char c;
        std::error_code ec;
        auto n = sock.read_some(asio::buffer(&c, 1), ec);
        if (ec || n == 0)
          return true;
      }
    }
    return false;
  }
  /// A TLS handshake as a client over `ctx`: the server's certificate
  /// subject, or "" when it failed.
  std::string tls_handshake(std::shared_ptr<const tls::context> ctx) {
    tls::channel ch{std::move(ctx), false, "127.0.0.1"};
    REQUIRE(ch.start());
    std::string plain;
    for (int round = 0; round < 20 && !ch.handshake_done(); ++round) {
      std::string out;
      ch.take_output(out);
      if (!out.empty())
        asio::write(sock, asio::buffer(out));
      std::array<char, 16384> buf;
      std::error_code ec;
      auto n = sock.read_some(asio::buffer(buf), ec);
      if (ec || !ch.feed({buf.data(), n}, plain))
        return "";
    }
    std::string last; // the client's last flight (its certificate)
    ch.take_output(last);
    if (!last.empty())
      asio::write(sock, asio::buffer(last));
    return ch.handshake_done() ? ch.peer_subject() : "";
  }
};

void send_some(three_links& t, std::uint32_t from, std::uint32_t to, int n,
               const std::string& what) {
  for (int i = 0; i < n; ++i)
    t.nodes[from]->send(append_to(from, to, 4, what + std::to_string(i)));
}

} // namespace

TEST_CASE("peer links over mutual TLS admit each other and carry one slot's "
          "messages in order",
          "[peer][links][tls]") {
  peer_pki pki;
  three_links t{{"s3cret", "s3cret", "s3cret"}, pki.three()};
  send_some(t, 0, 1, 50, "to n2 #");
  send_some(t, 2, 0, 5, "to n1 #");
  REQUIRE(t.boxes[1]->wait_for(50));
  REQUIRE(t.boxes[0]->wait_for(5));
  {
    std::lock_guard<std::mutex> g{t.boxes[1]->mtx};
    for (int i = 0; i < 50; ++i)
      CHECK(std::get<cl::append_req>(t.boxes[1]->got[i].env.msg)
                .entries[0]
                .payload
            == "to n2 #" + std::to_string(i));
  }
  // Each side names the other's verified certificate.
  CHECK(t.boxes[0]->wait_log("peer link to n2 admitted over TLS (CN=n2)"));
  CHECK(t.boxes[1]->wait_log("admitted over TLS (CN=n1)"));
  CHECK(t.nodes[0]->stats().refused == 0);
}

TEST_CASE("a peer whose certificate is of another CA is refused, and the "
          "others go on",
          "[peer][links][tls]") {
  peer_pki pki;
  temp_dir other_dir;
  cert_maker other{other_dir.path};
  auto nodes = pki.three();
  nodes[2] = peer_pki::contexts(other, other.leaf("n3", "n3", "IP:127.0.0.1"));
  three_links t{{"s3cret", "s3cret", "s3cret"}, nodes};
  send_some(t, 0, 2, 3, "not for an impostor #");
  send_some(t, 2, 0, 3, "from an impostor #");
  send_some(t, 0, 1, 3, "fine #");
  REQUIRE(t.boxes[1]->wait_for(3));
  // n1 refuses n3's certificate as a server and as a client.
  REQUIRE(t.boxes[0]->wait_log("peer link to n3 (127.0.0.1:"));
  CHECK(t.boxes[0]->wait_log("certificate verify failed"));
  CHECK(t.boxes[0]->wait_log("closed: refused: TLS: TLS handshake failed"));
  CHECK(t.boxes[2]->received() == 0);
  CHECK(t.boxes[0]->received() == 0);
  CHECK(t.nodes[0]->stats().refused > 0);
}

TEST_CASE("a node accepting a link refuses a client certificate of another "
          "CA, and only that connection",
          "[peer][links][tls]") {
  peer_pki pki;
  three_links t{{"s3cret", "s3cret", "s3cret"}, pki.three()};
  temp_dir other_dir;
  cert_maker other{other_dir.path};
  auto stranger = other.leaf("n2", "n2", "IP:127.0.0.1");
  tls::settings s; // trusts the cluster's CA, presents another's
  s.cert_file = stranger.cert_file;
  s.key_file = stranger.key_file;
  s.ca_file = pki.certs.ca_file();
  raw_client c{t.nodes[0]->port()};
  c.tls_handshake(tls::context::client(s).value());
  CHECK(c.closed_by_peer());
  CHECK(t.boxes[0]->wait_log("refused: TLS: TLS handshake failed"));

  send_some(t, 1, 0, 2, "still #");
  CHECK(t.boxes[0]->wait_for(2));
}

TEST_CASE("a peer certificate that does not name the peer's --peers host is "
          "refused by the node that dials it",
          "[peer][links][tls]") {
  peer_pki pki;
  auto nodes = pki.three();
  nodes[1] = pki.node_certificate("n2-elsewhere", "DNS:elsewhere.example");
  three_links t{{"s3cret", "s3cret", "s3cret"}, nodes};
  send_some(t, 0, 1, 3, "to a misnamed n2 #");
  send_some(t, 1, 0, 3, "from n2 #");
  // n2's dial to n1 checks n1's certificate, which names 127.0.0.1; n1's
  // dial to n2 finds n2's naming another host.
  REQUIRE(t.boxes[0]->wait_for(3));
  CHECK(t.boxes[0]->wait_log("IP address mismatch"));
  CHECK(t.boxes[1]->received() == 0);
}

TEST_CASE("TLS meeting plain peer links is refused on both sides with a line "
          "that names the options",
          "[peer][links][tls]") {
  peer_pki pki;
  auto nodes = pki.three();
  nodes.pop_back(); // n3 has no TLS
  three_links t{{"s3cret", "s3cret", "s3cret"}, nodes};
  send_some(t, 0, 2, 2, "to plain n3 #");
  send_some(t, 2, 0, 2, "from plain n3 #");
  send_some(t, 0, 1, 2, "fine #");
  REQUIRE(t.boxes[1]->wait_for(2));
  CHECK(t.boxes[2]->wait_log("a TLS handshake, but this node's peer links "
                             "have no TLS: give every node the same "
                             "--peer-tls-* options"));
  CHECK(t.boxes[0]->wait_log("plain text on a TLS peer link: give every "
                             "node the same --peer-tls-* options"));
  CHECK(t.boxes[2]->received() == 0);
  CHECK(t.boxes[0]->received() == 0);
}

TEST_CASE("a peer TLS handshake that stalls times out and only that "
          "connection closes",
          "[peer][links][tls]") {
  peer_pki pki;
  three_links t{{"s3cret", "s3cret", "s3cret"}, pki.three(), 500ms};
  raw_client stalled{t.nodes[0]->port()};
  // The start of a ClientHello, and nothing more.
  asio::write(stalled.sock, asio::buffer(std::string{"\x16\x03\x01", 3}));
  send_some(t, 1, 0, 3, "meanwhile #");
  REQUIRE(t.boxes[0]->wait_for(3));
  CHECK(stalled.closed_by_peer());
  CHECK(t.boxes[0]->wait_log("no handshake within the timeout"));
  send_some(t, 2, 0, 3, "after #");
  CHECK(t.boxes[0]->wait_for(6));
}

TEST_CASE("a peer TLS reload gives new links the new certificate while open "
          "links go on",
          "[peer][links][tls]") {
  peer_pki pki;
  three_links t{{"s3cret", "s3cret", "s3cret"}, pki.three()};
  send_some(t, 0, 1, 2, "before #");
  REQUIRE(t.boxes[1]->wait_for(2));
  auto me = pki.certs.leaf("probe", "probe", "");
  {
    raw_client before{t.nodes[0]->port()};
    CHECK(before.tls_handshake(pki.certs.client_context(&me)) == "CN=n1");
  }
  auto renewed = pki.node_certificate("n1-renewed");
  t.nodes[0]->set_tls(renewed.server, renewed.client);
  std::string subject;
  for (int i = 0; i < 50 && subject != "CN=n1-renewed"; ++i) {
    raw_client after{t.nodes[0]->port()};
    subject = after.tls_handshake(pki.certs.client_context(&me));
  }
  CHECK(subject == "CN=n1-renewed");
  send_some(t, 0, 1, 2, "after #");
  CHECK(t.boxes[1]->wait_for(4));
  CHECK(t.nodes[0]->stats().connects == 2); // no link was made again
}
