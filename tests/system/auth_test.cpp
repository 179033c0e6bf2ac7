// Tokens on both doors (docs/security.md), against the real spoold: every
// route and op at every role, refused tokens, producerSub, expiry on the
// msgpack door, the bounds on connections that do not authenticate, the
// audit log, the key reload and the warning of a node open without tokens.

#include <catch2/catch.hpp>

#include <ctime>
#include <fstream>
#include <map>
#include <set>

#include "auth_fixture.hpp"
#include "client/client.hpp"
#include "http_fixture.hpp"
#include "mp_fixture.hpp"
#include "process.hpp"
#include "protocol/api/mp_ops.hpp"
#include "protocol/api/router.hpp"
#include "unit/auth/tokens.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

/// A concrete path for a route's pattern: parameters and `*` filled in.
std::string path_of(const std::string& pattern) {
  std::string out;
  std::size_t at = 1;
  while (at <= pattern.size()) {
    auto slash = pattern.find('/', at);
    auto seg
        = pattern.substr(at, slash == std::string::npos ? slash : slash - at);
    out += "/";
    if (!seg.empty() && seg[0] == ':')
      out += seg == ":partitionId" || seg == ":leaseId"
                 ? "00750000-0001-85e6-1f31-000000000000"
                 : "authz-" + seg.substr(1);
    else if (seg == "*")
      out += "x";
    else
      out += seg;
    if (slash == std::string::npos)
      break;
    at = slash + 1;
  }
  return out;
}

const std::vector<std::pair<std::string, auth::role>> roles
    = {{"", auth::role::none},
       {"read-only", auth::role::read_only},
       {"read-write", auth::role::read_write},
       {"admin", auth::role::admin}};

bool is_public(const std::string& path) {
  return path == "/health" || path == "/metrics"
         || path == "/metrics/prometheus" || path == "/";
}

} // namespace

TEST_CASE("every HTTP route at every role is allowed, 401 or 403 as its "
          "level says",
          "[system][auth]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  auto routes = api::all_routes();
  REQUIRE(routes.size() > 40);
  // The levels the product asks for (docs/security.md, "Roles"): admin
  // and read-write as listed, every other route read-only.
  const std::set<std::string> admin
      = {"POST /api/v1/configure",
         "DELETE /api/v1/resources/queues/:queue",
         "POST /api/v1/resources/queues/:queue/purge",
         "DELETE /api/v1/consumer-groups/:group",
         "DELETE /api/v1/consumer-groups/:group/queues/:queue",
         "DELETE /api/v1/dlq/:dlqId",
         "DELETE /api/v1/dlq",
         "POST /api/v1/cluster/promote",
         "POST /api/v1/stats/refresh",
         "GET /api/v1/system/*",
         "POST /api/v1/system/*",
         "GET /api/v1/migration/*",
         "POST /api/v1/migration/*",
         "GET /internal/api/*",
         "POST /internal/api/*"};
  const std::set<std::string> read_write
      = {"POST /api/v1/push",
         "GET /api/v1/pop/queue/:queue",
         "GET /api/v1/pop/queue/:queue/partition/:partition",
         "GET /api/v1/pop",
         "POST /api/v1/ack",
         "POST /api/v1/ack/batch",
         "POST /api/v1/lease/:leaseId/extend",
         "POST /api/v1/transaction",
         "POST /api/v1/consumer-groups/:group/subscription",
         "POST /api/v1/consumer-groups/:group/queues/:queue/seek",
         "POST /api/v1/consumer-groups/:group/queues/:queue/partitions/"
         ":partition/seek",
         "POST /api/v1/dlq/requeue",
         "DELETE /api/v1/messages/:partitionId/:transactionId",
         "POST /api/v1/traces",
         "GET /streams/v1/*",
         "POST /streams/v1/*"};
  for (auto& r : routes) {
    auto label = std::string{r.method} + " " + r.pattern;
    CAPTURE(label);
    CHECK(r.level
          == (admin.count(label)        ? auth::access::admin
              : read_write.count(label) ? auth::access::read_write
                                        : auth::access::read_only));
  }
  const std::map<std::string, auth::access> ops
      = {{"push", auth::access::read_write},
         {"pop", auth::access::read_write},
         {"ack", auth::access::read_write},
         {"extend", auth::access::read_write},
         {"seek", auth::access::read_write},
         {"subscription", auth::access::read_write},
         {"transaction", auth::access::read_write},
         {"dlq_requeue", auth::access::read_write},
         {"configure", auth::access::admin},
         {"purge", auth::access::admin},
         {"delete_queue", auth::access::admin},
         {"delete_group", auth::access::admin},
         {"dlq_delete", auth::access::admin},
         {"promote", auth::access::admin},
         {"queues", auth::access::read_only},
         {"groups", auth::access::read_only},
         {"dlq", auth::access::read_only},
         {"browse", auth::access::read_only},
         {"hello", auth::access::open},
         {"health", auth::access::open}};
  for (auto op : mp::op_names()) {
    CAPTURE(op);
    REQUIRE(ops.count(std::string{op}));
    CHECK(mp::op_level(op) == ops.at(std::string{op}));
  }
  for (auto& r : routes) {
    auto path = path_of(r.pattern);
    auto target = path + "?wait=false&timeout=1";
    CAPTURE(r.method, r.pattern, target);
    auto anon = send(s, r.method, target, "");
    if (is_public(path)) {
      CHECK(anon.status != 401);
      CHECK(anon.status != 403);
      continue;
    }
    CHECK(anon.status == 401);
    CHECK(anon.body == R"({"error":"Authentication required"})");
    for (auto& [name, role] : roles) {
      CAPTURE(name);
      auto got = send(s, r.method, target, token(name));
      if (auth::permits(role, r.level)) {
        CHECK(got.status != 401);
        CHECK(got.status != 403);
      } else {
        CHECK(got.status == 403);
        CHECK(got.body == R"({"error":"Insufficient permissions"})");
      }
    }
  }
  // An unknown route reads as any other without a token.
  CHECK(send(s, "GET", "/api/v1/nothing-here", "").status == 401);
  CHECK(send(s, "GET", "/api/v1/nothing-here", token("admin")).status == 404);
}

TEST_CASE("every msgpack op at every role is allowed, unauthenticated or "
          "forbidden as its level says",
          "[system][auth]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  {
    mp_conn anon{s.mp_port(), false};
    auto r = anon.call({{"op", "hello"}, {"version", 1}});
    CHECK(code_of(r) == "unauthenticated");
    CHECK(message_of(r) == "Authentication required");
    CHECK(!anon.read_frame(5s)); // refused: the server closed
  }
  for (auto& [name, role] : roles) {
    CAPTURE(name);
    mp_conn c{s.mp_port(), false};
    REQUIRE(c.call({{"op", "hello"}, {"version", 1}, {"token", token(name)}})
                .value("ok", false));
    for (auto op : mp::op_names()) {
      if (op == "hello")
        continue;
      auto level = mp::op_level(op);
      REQUIRE(level);
      CAPTURE(op);
      auto r = c.call({{"op", op}, {"wait", false}});
      if (auth::permits(role, *level) || *level == auth::access::open) {
        CHECK(code_of(r) != "unauthenticated");
        CHECK(code_of(r) != "forbidden");
      } else {
        CHECK(code_of(r) == "forbidden");
        CHECK(message_of(r) == "Insufficient permissions");
      }
    }
  }
}

TEST_CASE("forged, expired, not-yet-valid, wrong-audience, alg none and "
          "algorithm-confusion tokens are refused with 401",
          "[system][auth]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  auto q = "/api/v1/resources/queues";
  auto expect_401 = [&](const std::string& tok, const std::string& text) {
    auto r = send(s, "GET", q, tok);
    CHECK(r.status == 401);
    CHECK(r.body == R"({"error":")" + text + R"("})");
  };
  CHECK(send(s, "GET", q, token("admin")).status == 200);
  expect_401(
      token("admin", "alice", 600, "another-secret-that-is-long-enough!!"),
      "Invalid token");
  expect_401(token("admin", "alice", -120), "Token has expired");
  expect_401(token("admin", "alice", 600, secret,
                   R"("nbf":)" + std::to_string(unix_now() + 600)),
             "Invalid token");
  expect_401(sign_hs256(secret, R"({"alg":"HS256"})",
                        R"({"role":"admin","aud":"other"})"),
             "Invalid token");
  expect_401(auth::base64url_encode(R"({"alg":"none"})") + "."
                 + auth::base64url_encode(R"({"role":"admin","aud":"spool"})")
                 + ".",
             "Invalid token");
  expect_401("not-a-token", "Invalid token");
  auto audit = keys.audit();
  CHECK(audit.find("outcome=\"401 bad signature") != std::string::npos);
  CHECK(audit.find("outcome=\"401 expired") != std::string::npos);
  CHECK(audit.find("outcome=\"401 wrong audience") != std::string::npos);
  CHECK(audit.find("outcome=\"401 algorithm refused") != std::string::npos);

  // A server with an RSA key only: an HS256 token signed with that key's
  // public PEM as its secret verifies with nothing.
  auto rsa = generate_key("RSA");
  auto pem_file = keys.dir.path / "public.pem";
  std::ofstream{pem_file} << public_pem(rsa);
  spoold_server r{{"--auth-enabled", "true", "--jwt-algorithm", "auto",
                   "--jwt-public-key-file", pem_file.string()}};
  auto claims = R"({"role":"admin","sub":"x"})";
  CHECK(send(r, "GET", q, sign_with(rsa, R"({"alg":"RS256"})", claims)).status
        == 200);
  CHECK(send(r, "GET", q,
             sign_hs256(public_pem(rsa), R"({"alg":"HS256"})", claims))
            .status
        == 401);
}

TEST_CASE("producerSub is stamped from the token's sub on both doors, never "
          "from the client",
          "[system][auth]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  auto rw = token("read-write", "alice");
  auto pushed = send(s, "POST", "/api/v1/push", rw,
                     R"({"items":[{"queue":"stamped","payload":{"n":1},)"
                     R"("producerSub":"mallory"}]})");
  REQUIRE(pushed.status == 201);
  mp_conn c{s.mp_port(), false};
  REQUIRE(c.call({{"op", "hello"},
                  {"version", 1},
                  {"token", token("read-write", "bob")}})
              .value("ok", false));
  push_one(c, "stamped", json{{"n", 2}});
  auto popped
      = send(s, "GET", "/api/v1/pop/queue/stamped?batch=10&wait=false", rw);
  REQUIRE(popped.status == 200);
  auto msgs = json::parse(popped.body)["messages"];
  REQUIRE(msgs.size() == 2);
  CHECK(msgs[0]["producerSub"] == "alice");
  CHECK(msgs[1]["producerSub"] == "bob");
}

TEST_CASE("a msgpack op after the token's expiry is unauthenticated until a "
          "new hello, and the client library says hello again by itself",
          "[system][auth]") {
  keys_dir keys;
  spoold_server s{keys.args({"--jwt-clock-skew", "0"})};
  mp_conn c{s.mp_port(), false};
  // Both short tokens are made together, so they expire in the same second
  // (or the library's one second later: waited for below).
  auto alice = token("read-write", "alice", 2);
  auto carol = token("read-write", "carol", 2);
  REQUIRE(c.call({{"op", "hello"}, {"version", 1}, {"token", alice}})
              .value("ok", false));
  push_one(c, "expiring", json{{"n", 1}});
  // The client library, given a source whose first token expires as the
  // raw connection's does.
  int calls = 0;
  client::options o;
  o.port = s.mp_port();
  o.token = [&calls, carol] {
    return ++calls == 1 ? carol : token("read-write", "carol", 600);
  };
  client::client lib{o};
  node::push_item item;
  item.queue = "expiring";
  item.payload = R"({"n":2})";
  REQUIRE(lib.push({item}));
  auto deadline = std::chrono::steady_clock::now() + 10s;
  json r;
  do { // the token's second ends (no faster way to let time pass)
    std::this_thread::sleep_for(200ms);
    r = c.call({{"op", "queues"}});
  } while (code_of(r).empty() && std::chrono::steady_clock::now() < deadline);
  CHECK(code_of(r) == "unauthenticated");
  CHECK(message_of(r) == "Token has expired");
  REQUIRE(c.call({{"op", "hello"},
                  {"version", 1},
                  {"token", token("read-write", "alice")}})
              .value("ok", false));
  CHECK(code_of(c.call({{"op", "queues"}})).empty());
  // The library's token was made at most a second after alice's: past
  // this, it has expired too (however slow the build).
  std::this_thread::sleep_for(1100ms);
  item.payload = R"({"n":3})";
  REQUIRE(lib.push({item})); // refused once, then sent again
  CHECK(calls >= 2);
  CHECK(keys.audit().find("401 expired") != std::string::npos);
}

TEST_CASE("connections that do not authenticate are closed after the auth "
          "timeout and have their own small cap on both doors",
          "[system][auth]") {
  keys_dir keys;
  spoold_server s{keys.args(
      {"--auth-timeout-ms", "500", "--auth-max-pending-connections", "2"})};
  {
    tcp_conn a{s.mp_port()};
    tcp_conn b{s.mp_port()};
    std::this_thread::sleep_for(100ms); // both accepted (no faster sign)
    mp_conn third{s.mp_port(), false};
    auto f = third.read_frame(5s);
    REQUIRE(f);
    CHECK(code_of(*f) == "unavailable");
    CHECK(message_of(*f).find("waiting to authenticate") != std::string::npos);
    CHECK(a.closed_by_peer(5s)); // the auth timeout closed them
    CHECK(b.closed_by_peer(5s));
  }
  {
    tcp_conn a{s.port()};
    tcp_conn b{s.port()};
    std::this_thread::sleep_for(100ms);
    http_conn third{s.port()};
    auto r = third.read_response(5s);
    REQUIRE(r);
    CHECK(r->status == 503);
    CHECK(a.closed_by_peer(5s));
    CHECK(b.closed_by_peer(5s));
  }
  // An authenticated connection stays past the timeout.
  mp_conn c{s.mp_port(), false};
  REQUIRE(c.call({{"op", "hello"}, {"version", 1}, {"token", token("admin")}})
              .value("ok", false));
  http_conn h{s.port()};
  h.send_raw(
      http_conn::format("GET", "/api/v1/resources/queues", "",
                        "Authorization: Bearer " + token("admin") + "\r\n"));
  REQUIRE(h.read_response());
  std::this_thread::sleep_for(1s);
  CHECK(code_of(c.call({{"op", "queues"}})).empty());
  h.send_raw(
      http_conn::format("GET", "/api/v1/resources/queues", "",
                        "Authorization: Bearer " + token("admin") + "\r\n"));
  auto again = h.read_response();
  REQUIRE(again);
  CHECK(again->status == 200);
}

TEST_CASE("the audit log names who did what from where, for refusals and "
          "admin operations",
          "[system][auth]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  send(s, "POST", "/api/v1/push", token("read-write"),
       R"({"items":[{"queue":"audited","payload":1}]})");
  CHECK(send(s, "DELETE", "/api/v1/resources/queues/audited",
             token("read-write", "eve"))
            .status
        == 403);
  CHECK(send(s, "DELETE", "/api/v1/resources/queues/audited",
             token("admin", "root"))
            .status
        == 200);
  mp_conn c{s.mp_port(), false};
  REQUIRE(c.call({{"op", "hello"}, {"version", 1}, {"token", token("admin")}})
              .value("ok", false));
  c.call({{"op", "purge"}, {"queue", "nothing"}});
  auto audit = keys.audit();
  CHECK(audit.find("audit who=eve role=read-write from=127.0.0.1:")
        != std::string::npos);
  CHECK(
      audit.find(
          R"(door=http what="DELETE /api/v1/resources/queues/audited" outcome="403 role too low: needs admin")")
      != std::string::npos);
  CHECK(audit.find(R"(who=root role=admin)") != std::string::npos);
  CHECK(audit.find(
            R"(what="DELETE /api/v1/resources/queues/audited" outcome="200")")
        != std::string::npos);
  CHECK(audit.find(R"(door=msgpack what="op purge")") != std::string::npos);
}

TEST_CASE("SIGHUP reloads the secret file: the old secret's tokens are "
          "refused from then on",
          "[system][auth]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  auto old_token = token("admin");
  CHECK(send(s, "GET", "/api/v1/resources/queues", old_token).status == 200);
  mp_conn session{s.mp_port(), false};
  REQUIRE(session.call({{"op", "hello"}, {"version", 1}, {"token", old_token}})
              .value("ok", false));
  const std::string fresh = "a-fresh-secret-of-thirty-two-bytes-at-least";
  std::ofstream{keys.secret_file} << fresh;
  s.signal(SIGHUP);
  REQUIRE(s.wait_for_log("SIGHUP: token keys reloaded", 10s));
  CHECK(send(s, "GET", "/api/v1/resources/queues", old_token).status == 401);
  // An open msgpack session's token is verified again under the new keys.
  auto r = session.call({{"op", "queues"}});
  CHECK(code_of(r) == "unauthenticated");
  CHECK(send(s, "GET", "/api/v1/resources/queues",
             token("admin", "alice", 600, fresh))
            .status
        == 200);
  // A broken file keeps the keys in force.
  std::ofstream{keys.secret_file} << "short";
  s.signal(SIGHUP);
  REQUIRE(s.wait_for_log("token keys not reloaded", 10s));
  CHECK(send(s, "GET", "/api/v1/resources/queues",
             token("admin", "alice", 600, fresh))
            .status
        == 200);
}

TEST_CASE("a node without tokens listening beyond loopback warns at start, "
          "and keys that cannot be read stop the start",
          "[system][auth]") {
  temp_dir dir;
  child_process open_node(SPOOLD_PATH, {"--data-dir", (dir.path / "d").string(),
                                        "--http-address", "0.0.0.0",
                                        "--http-port", "0", "--msgpack-address",
                                        "127.0.0.1", "--msgpack-port", "0"});
  CHECK(open_node.wait_for_output("tokens are off", 20s));
  CHECK(open_node.output().find("HTTP on 0.0.0.0") != std::string::npos);
  open_node.signal(SIGTERM);
  open_node.wait_exit(20s);

  child_process bad(SPOOLD_PATH, {"--data-dir", (dir.path / "e").string(),
                                  "--auth-enabled", "true", "--jwt-secret-file",
                                  (dir.path / "missing").string()});
  CHECK(bad.wait_exit(20s) == 2);
  CHECK(bad.output().find("cannot read jwt-secret-file") != std::string::npos);
  child_process none(SPOOLD_PATH, {"--data-dir", (dir.path / "f").string(),
                                   "--auth-enabled", "true"});
  CHECK(none.wait_exit(20s) == 2);
  CHECK(none.output().find("needs jwt-secret-file") != std::string::npos);
}

TEST_CASE("a client without a valid token sends no body and no big frame "
          "into the server",
          "[system][auth]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  // The head alone: 401 at once, the announced 50 MB never read.
  http_conn c{s.port()};
  c.send_raw("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: "
             "application/json\r\nContent-Length: 50000000\r\n\r\n");
  auto r = c.read_response(5s);
  REQUIRE(r);
  CHECK(r->status == 401);
  CHECK(r->body == R"({"error":"Authentication required"})");
  CHECK(c.closed_by_peer(5s));
  // A valid token's first request may be large.
  auto big = std::string(200'000, 'x');
  CHECK(send(s, "POST", "/api/v1/push", token("read-write"),
             R"({"items":[{"queue":"big","payload":")" + big + R"("}]})")
            .status
        == 201);
  // msgpack: before the hello verified, a frame over 64 KiB is refused.
  tcp_conn m{s.mp_port()};
  m.send_raw(std::string{"\x00\x10\x00\x00", 4}); // 1 MiB announced
  CHECK(m.closed_by_peer(5s));
  CHECK(m.received().find("too_large") != std::string::npos);
}
