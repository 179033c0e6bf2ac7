// TLS on both front doors (docs/security.md, "TLS"), against the real
// spoold: HTTPS and the msgpack door over TLS (the CLI with --ca, the
// client library), plain text sent to a TLS port, a handshake that stalls,
// mutual TLS; and mutual TLS on a three-node cluster's peer links.

#include <catch2/catch.hpp>

#include <atomic>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli_fixture.hpp"
#include "client/client.hpp"
#include "cluster_fixture.hpp"
#include "http_fixture.hpp"
#include "mp_fixture.hpp"
#include "tls/channel.hpp"
#include "unit/auth/tokens.hpp"
#include "unit/tls/certs.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

/// A TLS client connection over a plain socket, driven by hand.
class tls_conn : public tcp_conn {
public:
  tls_conn(std::uint16_t port, std::shared_ptr<const tls::context> ctx,
           const std::string& name = "localhost") :
      tcp_conn(port), ch_(std::move(ctx), false, name) {
    ch_.start();
    push();
  }
  /// Until the handshake ended (true) or failed or timed out (false).
  bool handshake(std::chrono::milliseconds timeout = 10s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!ch_.handshake_done())
      if (!pull(deadline))
        return false;
    push();
    return true;
  }
  void send(const std::string& plain) {
    std::string out;
    ch_.seal(plain, out);
    send_raw(out);
  }
  /// The server's certificate subject (`CN=spool`).
  std::string peer() const {
    return ch_.peer_subject();
  }
  /// Plaintext read until it holds `needle` (or the timeout).
  std::string read_until(const std::string& needle,
                         std::chrono::milliseconds timeout = 10s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (plain_.find(needle) == std::string::npos)
      if (!pull(deadline))
        break;
    return plain_;
  }

private:
  void push() {
    std::string out;
    ch_.take_output(out);
    if (!out.empty())
      send_raw(out);
  }
  bool pull(std::chrono::steady_clock::time_point deadline) {
    auto before = received().size();
    if (!fill(deadline) || received().size() == before)
      return false;
    if (!ch_.feed(std::string_view{received()}.substr(before), plain_))
      return false;
    push();
    return true;
  }
  tls::channel ch_;
  std::string plain_;
};

struct tls_node {
  temp_dir dir;
  cert_maker certs{dir.path};
  pem_pair server = certs.leaf("server", "spool", "DNS:localhost,IP:127.0.0.1");
  pem_pair client = certs.leaf("client", "ops", "");

  std::vector<std::string> args(std::vector<std::string> more = {}) const {
    std::vector<std::string> a = {"--tls-cert-file", server.cert_file,
                                  "--tls-key-file", server.key_file};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  std::shared_ptr<const tls::context> client_ctx(bool with_cert = false) {
    return certs.client_context(with_cert ? &client : nullptr);
  }
};

} // namespace

TEST_CASE("with a certificate both doors speak TLS: HTTPS answers, the "
          "client library pushes and the CLI pops with --ca",
          "[system][tls]") {
  tls_node n;
  spoold_server s{n.args()};
  tls_conn https{s.port(), n.client_ctx()};
  REQUIRE(https.handshake());
  https.send(http_conn::format(
      "POST", "/api/v1/push", R"({"items":[{"queue":"sealed","payload":1}]})"));
  CHECK(https.read_until("\r\n\r\n").starts_with("HTTP/1.1 201"));

  client::options o;
  o.port = s.mp_port();
  o.tls = n.client_ctx();
  client::client lib{o};
  node::push_item item;
  item.queue = "sealed";
  item.payload = R"({"from":"library"})";
  REQUIRE(lib.push({item}));

  temp_dir empty;
  auto in = (empty.path / "stdin").string();
  std::ofstream{in} << "";
  auto r = run_cli(
      mp_address(s),
      "--ca " + n.certs.ca_file() + " pop sealed --batch 10 --json", in, true);
  CHECK(r.code == 0);
  CHECK(r.out.find("library") != std::string::npos);
  // Without --ca the system's store does not know this CA.
  auto refused = run_cli(mp_address(s), "--tls pop sealed", in, true);
  CHECK(refused.code != 0);
  CHECK(refused.out.find("certificate") != std::string::npos);
}

TEST_CASE("plain text sent to a TLS door is told so in clear, and that "
          "connection alone closes",
          "[system][tls]") {
  tls_node n;
  spoold_server s{n.args()};
  http_conn plain{s.port()};
  auto r = plain.request("GET", "/health");
  CHECK(r.status == 400);
  CHECK(r.body.find("This port speaks HTTPS") != std::string::npos);
  mp_conn hello{s.mp_port(), false};
  hello.send({{"op", "hello"}, {"version", 1}});
  auto f = hello.read_frame(); // id 0: the request was never read
  REQUIRE(f);
  CHECK(code_of(*f) == "bad_request");
  CHECK(message_of(*f).find("TLS door") != std::string::npos);
  CHECK(hello.closed_by_peer(5s));
  tls_conn ok{s.mp_port(), n.client_ctx()};
  CHECK(ok.handshake());
}

TEST_CASE("a handshake that stalls times out and closes only its own "
          "connection",
          "[system][tls]") {
  tls_node n;
  spoold_server s{n.args({"--tls-handshake-timeout-ms", "500"})};
  for (auto port : {s.port(), s.mp_port()}) {
    CAPTURE(port);
    // The first bytes of a ClientHello, then nothing; and a single byte.
    tcp_conn stalled{port};
    stalled.send_raw(std::string{"\x16\x03\x01\x02\x00\x01", 6});
    tcp_conn one{port};
    one.send_raw(std::string{"\x16", 1});
    tls_conn live{port, n.client_ctx()};
    REQUIRE(live.handshake());
    CHECK(stalled.closed_by_peer(5s));
    CHECK(one.closed_by_peer(5s));
    if (port == s.port()) {
      live.send(http_conn::format("GET", "/health"));
      CHECK(live.read_until("healthy").find("healthy") != std::string::npos);
    } else {
      live.send(frame_of(json{{"id", 1}, {"op", "hello"}, {"version", 1}}));
      CHECK(live.read_until("spool").find("spool") != std::string::npos);
    }
  }
}

TEST_CASE("pipelined HTTPS requests are answered in order, and a connection "
          "that sends a corrupted record closes alone",
          "[system][tls]") {
  tls_node n;
  spoold_server s{n.args()};
  tls_conn a{s.port(), n.client_ctx()};
  REQUIRE(a.handshake());
  tls_conn b{s.port(), n.client_ctx()};
  REQUIRE(b.handshake());
  // Three requests in one record.
  a.send(http_conn::format("POST", "/api/v1/push",
                           R"({"items":[{"queue":"piped","payload":1}]})")
         + http_conn::format("GET", "/api/v1/resources/queues/piped")
         + http_conn::format("GET", "/health"));
  auto got = a.read_until("healthy");
  auto first = got.find("HTTP/1.1 201");
  auto second = got.find("HTTP/1.1 200", first);
  auto third = got.find("HTTP/1.1 200", second + 1);
  CHECK(first != std::string::npos);
  CHECK(second != std::string::npos);
  CHECK(third != std::string::npos);
  CHECK(got.find("piped", second) < third);
  // An application record whose bytes were changed on the way: that
  // connection is refused and closed, and the other goes on.
  b.send_raw(std::string{"\x17\x03\x03\x00\x20", 5} + std::string(32, 'x'));
  CHECK(b.closed_by_peer(5s));
  a.send(http_conn::format("GET", "/api/v1/no-such-route"));
  CHECK(a.read_until("HTTP/1.1 404").find("HTTP/1.1 404") != std::string::npos);
}

TEST_CASE("an HTTPS answer of megabytes to a client that reads late arrives "
          "whole",
          "[system][tls]") {
  tls_node n;
  spoold_server s{n.args()};
  std::string big(3'000'000, 'x');
  big += "END";
  tls_conn c{s.port(), n.client_ctx()};
  REQUIRE(c.handshake());
  c.send(http_conn::format("POST", "/api/v1/push",
                           R"({"items":[{"queue":"big","payload":")" + big
                               + R"("}]})"));
  CHECK(c.read_until("\r\n\r\n").starts_with("HTTP/1.1 201"));
  c.send(http_conn::format("GET", "/api/v1/pop/queue/big?batch=1&wait=false"));
  // The server's writes fill the socket's buffers and wait.
  std::this_thread::sleep_for(500ms);
  auto got = c.read_until("xEND", 30s);
  CHECK(got.find("xEND") != std::string::npos);
  CHECK(got.size() > big.size());
}

TEST_CASE("mutual TLS: a client without a certificate of the CA is refused, "
          "one with it is served",
          "[system][tls]") {
  tls_node n;
  spoold_server s{n.args({"--tls-ca-file", n.certs.ca_file(),
                          "--tls-require-client-cert", "true"})};
  tls_conn anonymous{s.port(), n.client_ctx(false)};
  anonymous.handshake(3s);
  anonymous.send(http_conn::format("GET", "/health"));
  CHECK(anonymous.read_until("healthy", 3s).find("healthy")
        == std::string::npos);
  CHECK(anonymous.closed_by_peer(5s)); // with its alert, not a hang
  tls_conn known{s.port(), n.client_ctx(true)};
  REQUIRE(known.handshake());
  known.send(http_conn::format("GET", "/health"));
  CHECK(known.read_until("healthy").find("healthy") != std::string::npos);
}

TEST_CASE("a certificate reload under load loses no request: open "
          "connections go on, new ones get the new certificate, and the "
          "expiry gauge moves",
          "[system][tls]") {
  tls_node n;
  auto cert = (n.dir.path / "live.pem").string();
  auto key = (n.dir.path / "live.key").string();
  std::filesystem::copy_file(n.server.cert_file, cert);
  std::filesystem::copy_file(n.server.key_file, key);
  spoold_server s{{"--tls-cert-file", cert, "--tls-key-file", key}};
  tls_conn before{s.port(), n.client_ctx()};
  REQUIRE(before.handshake());
  CHECK(before.peer() == "CN=spool");
  auto gauge = [&](tls_conn& c) {
    c.send(http_conn::format("GET", "/metrics/prometheus"));
    auto text = c.read_until("spool_tls_certificate_expiry_timestamp_seconds{");
    auto at = text.find("spool_tls_certificate_expiry_timestamp_seconds{");
    REQUIRE(at != std::string::npos);
    return std::stoll(text.substr(text.find("} ", at) + 2));
  };
  auto expiry_before = gauge(before);
  CHECK(std::abs(expiry_before
                 - (static_cast<std::int64_t>(std::time(nullptr)) + 30 * 86400))
        < 120);

  // Pushes on an open connection (the library) and on new connections
  // (HTTPS, one each), while the certificate is replaced.
  std::atomic<bool> stop{false};
  std::atomic<int> lib_acked{0}, https_acked{0}, failures{0};
  client::options o;
  o.port = s.mp_port();
  o.tls = n.client_ctx();
  client::client lib{o};
  std::thread pusher([&] {
    for (int i = 0; !stop; ++i) {
      node::push_item item;
      item.queue = "reload";
      item.transaction_id = "lib-" + std::to_string(i);
      item.payload = "{}";
      if (lib.push({item}))
        ++lib_acked;
      else
        ++failures;
    }
  });
  std::thread dialer([&] {
    for (int i = 0; !stop; ++i) {
      tls_conn c{s.port(), n.client_ctx()};
      if (!c.handshake()) {
        ++failures;
        continue;
      }
      c.send(http_conn::format(
          "POST", "/api/v1/push",
          R"({"items":[{"queue":"reload","transactionId":"https-)"
              + std::to_string(i) + R"(","payload":{}}]})"));
      if (c.read_until("\r\n\r\n").starts_with("HTTP/1.1 201"))
        ++https_acked;
      else
        ++failures;
    }
  });
  std::this_thread::sleep_for(300ms); // load before the reload
  auto fresh
      = n.certs.leaf("fresh", "spool-2", "DNS:localhost,IP:127.0.0.1", 60);
  std::filesystem::copy_file(fresh.cert_file, cert,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(fresh.key_file, key,
                             std::filesystem::copy_options::overwrite_existing);
  // Accepted before the reload, its handshake finished after it: it keeps
  // the context it was accepted with.
  tls_conn accepted_before{s.port(), n.client_ctx()};
  std::this_thread::sleep_for(100ms);
  s.signal(SIGHUP);
  REQUIRE(s.wait_for_log("SIGHUP: TLS certificate reloaded", 10s));
  int lib_at = lib_acked, https_at = https_acked;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while ((lib_acked <= lib_at + 10 || https_acked <= https_at + 2)
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms); // load after it, on both
  stop = true;
  pusher.join();
  dialer.join();
  CHECK(failures == 0);
  CHECK(lib_acked > 0);
  CHECK(https_acked > 0);

  // The connection opened before still works; a new one sees the new
  // certificate; the gauge says its expiry.
  before.send(http_conn::format("GET", "/health"));
  CHECK(before.read_until("healthy").find("healthy") != std::string::npos);
  tls_conn after{s.port(), n.client_ctx()};
  REQUIRE(after.handshake());
  CHECK(after.peer() == "CN=spool-2");
  REQUIRE(accepted_before.handshake());
  CHECK(accepted_before.peer() == "CN=spool");
  CHECK(lib_acked > lib_at + 10);
  CHECK(https_acked > https_at + 2);
  tls_conn after_mp{s.mp_port(), n.client_ctx()};
  REQUIRE(after_mp.handshake());
  CHECK(after_mp.peer() == "CN=spool-2");
  CHECK(gauge(after) - expiry_before > 29 * 86400);

  // Every acknowledged push is there (popped in batches: pop.maxBatch).
  std::size_t total = 0;
  for (;;) {
    node::pop_request pr;
    pr.queue = "reload";
    pr.batch = 10000;
    auto popped = lib.pop(pr);
    REQUIRE(popped);
    if (popped->messages.empty())
      break;
    total += popped->messages.size();
    REQUIRE(lib.ack_all(*popped));
  }
  CHECK(total == static_cast<std::size_t>(lib_acked + https_acked));
}

TEST_CASE("peer TLS: three nodes whose links are mutual TLS replicate to a "
          "majority, a follower killed catches up, and the gauge and a "
          "reload name the peer certificate",
          "[system][tls][cluster]") {
  tls_node n; // one certificate naming 127.0.0.1 serves every node here
  three_nodes c({"--peer-tls-cert-file", n.server.cert_file,
                 "--peer-tls-key-file", n.server.key_file, "--peer-tls-ca-file",
                 n.certs.ca_file()});
  auto l = three_nodes::leader_of("sealed");
  auto f = (l + 1) % 3;
  auto push = [&](const std::string& what) {
    return c.until_known(l, "POST", "/api/v1/push",
                         R"({"items":[{"queue":"sealed","payload":")" + what
                             + R"("}]})");
  };
  // 201: a majority of the slot's replicas synced it, over the TLS links.
  REQUIRE(push("first").status == 201);
  for (auto& node : c.nodes)
    CHECK(node->wait_for_log("admitted over TLS (CN=spool)", 20s));
  CHECK(c.nodes[l]->log().find("peer links over mutual TLS")
        != std::string::npos);
  auto now = static_cast<std::int64_t>(std::time(nullptr));
  CHECK(
      c.nodes[l]->metric(
          R"(spool_tls_certificate_expiry_timestamp_seconds{certificate="peers"})")
      > now);
  c.nodes[f]->kill9();
  for (int i = 0; i < 5; ++i)
    REQUIRE(push("while n" + std::to_string(f + 1) + " is down").status == 201);
  c.nodes[f]->start();
  auto lag = "spool_slot_follower_lag_entries{slot=\""
             + std::to_string(slot_of("sealed", default_slot_count))
             + "\",follower=\"n" + std::to_string(f + 1) + "\"}";
  CHECK(c.nodes[l]->metric_becomes(lag, 0, 20s));
  c.nodes[l]->signal(SIGHUP);
  CHECK(c.nodes[l]->wait_for_log("SIGHUP: peer TLS certificate reloaded", 10s));
  REQUIRE(push("after the reload").status == 201);
}

TEST_CASE("client certificates as roles: a listed certificate without a "
          "token gets its role on both doors, an unlisted one is 401, and a "
          "token decides over the certificate",
          "[system][tls][auth]") {
  tls_node n;                                             // n.client is CN=ops
  auto viewer = n.certs.leaf("viewer", "viewer, ro", ""); // an escaped ','
  auto stranger = n.certs.leaf("stranger", "stranger", "");
  const std::string secret = "a secret of at least thirty-two bytes!!";
  auto secret_file = (n.dir.path / "secret").string();
  auto roles_file = (n.dir.path / "roles").string();
  auto audit_file = (n.dir.path / "audit.log").string();
  std::ofstream{secret_file} << secret << "\n";
  std::ofstream{roles_file} << "# role subject\nadmin CN=ops\n"
                               "read-only CN=viewer\\, ro\n";
  spoold_server s{
      n.args({"--tls-ca-file", n.certs.ca_file(), "--auth-enabled", "true",
              "--jwt-secret-file", secret_file, "--auth-cert-roles-file",
              roles_file, "--audit-log", audit_file})};
  auto https = [&](const pem_pair* cert, const std::string& method,
                   const std::string& target, const std::string& body = "",
                   const std::string& headers = "") {
    tls_conn c{s.port(), n.certs.client_context(cert)};
    REQUIRE(c.handshake());
    c.send(http_conn::format(method, target, body, headers));
    auto got = c.read_until("\r\n\r\n");
    return got.substr(0, got.find("\r\n"));
  };
  const std::string push_body
      = R"({"items":[{"queue":"certs","payload":{"n":1}}]})";
  CHECK(https(&n.client, "POST", "/api/v1/configure", R"({"queue":"certs"})")
        == "HTTP/1.1 200 OK");
  CHECK(https(&n.client, "POST", "/api/v1/push", push_body)
        == "HTTP/1.1 201 Created");
  CHECK(https(&viewer, "GET", "/api/v1/resources/queues") == "HTTP/1.1 200 OK");
  CHECK(https(&viewer, "POST", "/api/v1/push", push_body)
        == "HTTP/1.1 403 Forbidden");
  CHECK(https(&stranger, "GET", "/api/v1/resources/queues")
        == "HTTP/1.1 401 Unauthorized");
  CHECK(https(nullptr, "GET", "/api/v1/resources/queues")
        == "HTTP/1.1 401 Unauthorized");
  // A token, when sent, decides: read-write over the viewer's read-only,
  // and a bad one is not saved by an admin's certificate.
  auto rw = sign_hs256(secret, R"({"alg":"HS256","typ":"JWT"})",
                       R"({"sub":"writer","role":"read-write","exp":)"
                           + std::to_string(std::time(nullptr) + 600) + "}");
  CHECK(https(&viewer, "POST", "/api/v1/push", push_body,
              "Authorization: Bearer " + rw + "\r\n")
        == "HTTP/1.1 201 Created");
  CHECK(https(&n.client, "POST", "/api/v1/push", push_body,
              "Authorization: Bearer not.a.token\r\n")
        == "HTTP/1.1 401 Unauthorized");

  // msgpack: the library with a certificate and no token.
  auto lib_push = [&](const pem_pair& cert) {
    client::options o;
    o.port = s.mp_port();
    o.tls = n.certs.client_context(&cert);
    o.fail_unconnected = true;
    client::client lib{o};
    node::push_item item;
    item.queue = "certs";
    item.payload = R"({"n":2})";
    return lib.push({item});
  };
  CHECK(lib_push(n.client));
  auto as_viewer = lib_push(viewer);
  REQUIRE_FALSE(as_viewer);
  CHECK(as_viewer.err().code == errc::forbidden);
  auto as_stranger = lib_push(stranger);
  REQUIRE_FALSE(as_stranger);
  CHECK(as_stranger.err().code == errc::unauthenticated);

  // The pushes by certificate carry its subject as producerSub, and the
  // audit log names it (quoted: it holds '=').
  tls_conn c{s.port(), n.certs.client_context(&n.client)};
  REQUIRE(c.handshake());
  c.send(
      http_conn::format("GET", "/api/v1/pop/queue/certs?batch=10&wait=false"));
  auto popped = c.read_until("]}");
  CHECK(popped.find(R"("producerSub":"CN=ops")") != std::string::npos);
  std::ifstream in{audit_file};
  std::string audit{std::istreambuf_iterator<char>{in}, {}};
  CHECK(audit.find(R"(who="CN=ops" role=admin)") != std::string::npos);
  CHECK(audit.find("certificate 'CN=stranger' is not in the certificate table")
        != std::string::npos);
}
