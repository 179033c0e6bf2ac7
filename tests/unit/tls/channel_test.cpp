// TLS as a byte transform (tls/channel.hpp): two channels joined in memory,
// and every way a handshake or a record is refused.

#include <catch2/catch.hpp>

#include <openssl/ssl.h>

#include <ctime>

#include "tls/channel.hpp"
#include "unit/storage/fixture.hpp"
#include "unit/tls/certs.hpp"

using namespace spool;
using namespace spool::test;

namespace {

/// Moves bytes between the two until neither has any to send; false when
/// one refused what it got. Plaintext received lands in `to_*`.
bool pump(tls::channel& client, tls::channel& server, std::string& to_client,
          std::string& to_server) {
  for (int round = 0; round < 20; ++round) {
    std::string c2s, s2c;
    client.take_output(c2s);
    server.take_output(s2c);
    if (c2s.empty() && s2c.empty())
      return true;
    if (!c2s.empty() && !server.feed(c2s, to_server))
      return false;
    if (!s2c.empty() && !client.feed(s2c, to_client))
      return false;
  }
  return true;
}

struct pki {
  temp_dir dir;
  cert_maker certs{dir.path};
  pem_pair server
      = certs.leaf("server", "spool-server", "DNS:localhost,IP:127.0.0.1");
  pem_pair client = certs.leaf("client", "n2", "");

  std::shared_ptr<const tls::context> server_ctx(bool mutual = false) {
    tls::settings s{server.cert_file, server.key_file,
                    mutual ? certs.ca_file() : "", mutual, true};
    auto c = tls::context::server(s);
    REQUIRE(c);
    return *c;
  }
  std::shared_ptr<const tls::context> client_ctx(bool with_cert = false) {
    return certs.client_context(with_cert ? &client : nullptr);
  }
};

} // namespace

TEST_CASE("a client and a server channel shake hands and carry bytes both "
          "ways, sealed on the wire",
          "[tls]") {
  pki p;
  tls::channel server{p.server_ctx(), true};
  tls::channel client{p.client_ctx(), false, "localhost"};
  std::string early;
  client.seal("sent before the handshake ended", early); // held
  CHECK(early.empty());
  client.start();
  std::string to_client, to_server;
  REQUIRE(pump(client, server, to_client, to_server));
  CHECK(client.handshake_done());
  CHECK(server.handshake_done());
  CHECK(to_server == "sent before the handshake ended");
  CHECK((client.version() == "TLSv1.3" || client.version() == "TLSv1.2"));
  std::string big(300'000, 'x');
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>('a' + i % 26);
  std::string wire;
  server.seal(big, wire);
  CHECK(wire.find("abcdefghijklmnop") == std::string::npos);
  to_client.clear();
  // Fed in pieces of 1000 bytes, as a socket may give them.
  for (std::size_t at = 0; at < wire.size(); at += 1000)
    REQUIRE(client.feed(std::string_view{wire}.substr(at, 1000), to_client));
  CHECK(to_client == big);
}

TEST_CASE("plain text sent to a TLS server ends that connection with a "
          "reason",
          "[tls]") {
  pki p;
  tls::channel server{p.server_ctx(), true};
  std::string plain;
  CHECK(!server.feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n", plain));
  CHECK(server.error().find("TLS handshake failed") != std::string::npos);
  CHECK(plain.empty());
  CHECK(!tls::looks_like_tls("GET / HTTP/1.1"));
  tls::channel client{p.client_ctx(), false, "localhost"};
  client.start();
  std::string hello;
  client.take_output(hello);
  CHECK(tls::looks_like_tls(hello));
}

TEST_CASE("a client that offers only TLS 1.1 is refused", "[tls]") {
  pki p;
  tls::channel server{p.server_ctx(), true};
  auto old = p.client_ctx();
  SSL_CTX_set_min_proto_version(old->native(), TLS1_VERSION);
  SSL_CTX_set_max_proto_version(old->native(), TLS1_1_VERSION);
  tls::channel client{old, false, "localhost"};
  client.start();
  std::string a, b;
  CHECK(!pump(client, server, a, b));
  CHECK(!server.handshake_done());
  CHECK(server.error().find("unsupported protocol") != std::string::npos);
}

TEST_CASE("a server certificate for another name, or from another CA, is "
          "refused by the client",
          "[tls]") {
  pki p;
  {
    tls::channel server{p.server_ctx(), true};
    tls::channel client{p.client_ctx(), false, "spool.example"};
    client.start();
    std::string a, b;
    CHECK(!pump(client, server, a, b));
    CHECK(client.error().find("mismatch") != std::string::npos);
  }
  {
    tls::channel server{p.server_ctx(), true};
    tls::channel client{p.client_ctx(), false, "127.0.0.1"};
    client.start();
    std::string a, b;
    CHECK(pump(client, server, a, b)); // the IP is in subjectAltName
    CHECK(client.handshake_done());
  }
  temp_dir other_dir;
  cert_maker other{other_dir.path};
  tls::settings s;
  s.ca_file = other.ca_file();
  tls::channel server{p.server_ctx(), true};
  tls::channel client{*tls::context::client(s), false, "localhost"};
  client.start();
  std::string a, b;
  CHECK(!pump(client, server, a, b));
  CHECK(client.error().find("certificate") != std::string::npos);
}

TEST_CASE("mutual TLS: a client without a certificate is refused, one with "
          "a certificate of the CA is named by its subject",
          "[tls]") {
  pki p;
  {
    tls::channel server{p.server_ctx(true), true};
    tls::channel client{p.client_ctx(false), false, "localhost"};
    client.start();
    std::string a, b;
    pump(client, server, a, b);
    CHECK(!server.handshake_done());
    CHECK(!server.error().empty());
  }
  tls::channel server{p.server_ctx(true), true};
  tls::channel client{p.client_ctx(true), false, "localhost"};
  client.start();
  std::string a, b;
  REQUIRE(pump(client, server, a, b));
  CHECK(server.handshake_done());
  CHECK(server.peer_subject() == "CN=n2");
}

TEST_CASE("a record altered on the way is refused", "[tls]") {
  pki p;
  tls::channel server{p.server_ctx(), true};
  tls::channel client{p.client_ctx(), false, "localhost"};
  client.start();
  std::string a, b;
  REQUIRE(pump(client, server, a, b));
  std::string wire;
  client.seal("a payload worth protecting", wire);
  wire[wire.size() - 5] ^= 0x01;
  std::string plain;
  CHECK(!server.feed(wire, plain));
  CHECK(plain.empty());
}

TEST_CASE("contexts refuse missing files, a key of another certificate, and "
          "mutual TLS without a CA, and say when the certificate expires",
          "[tls]") {
  pki p;
  CHECK(!tls::context::server({}));
  auto missing = tls::context::server(
      {"/nonexistent.pem", "/nonexistent.key", "", false, true});
  REQUIRE(!missing);
  CHECK(missing.err().message.find("/nonexistent.pem") != std::string::npos);
  auto mismatch = tls::context::server(
      {p.server.cert_file, p.client.key_file, "", false, true});
  REQUIRE(!mismatch);
  CHECK(mismatch.err().message.find("does not match") != std::string::npos);
  CHECK(!tls::context::server(
      {p.server.cert_file, p.server.key_file, "", true, true}));
  auto ok = p.server_ctx();
  auto in_30_days = static_cast<std::int64_t>(std::time(nullptr)) + 30 * 86400;
  CHECK(std::abs(ok->not_after() - in_30_days) < 120);
}

TEST_CASE("a client name that cannot be checked fails the channel instead of "
          "checking nothing",
          "[tls]") {
  pki p;
  tls::channel client{p.client_ctx(), false, "fe80::1%eth0"};
  CHECK(!client.start());
  CHECK(client.error().find("cannot check") != std::string::npos);
}
