// The HTTP server's connection handling against the real spoold: keep-alive
// and pipelining, long polls (woken by a push from another connection,
// cancelled by a client that leaves), limits and timeouts, chunked bodies,
// 100-continue, and many connections at once.

#include <catch2/catch.hpp>

#include "system/http_fixture.hpp"

using namespace spool::test;

TEST_CASE("pipelined requests on one connection are answered in order",
          "[system][http][connection]") {
  spoold_server s;
  http_conn c{s.port()};
  std::string burst;
  for (int i = 0; i < 20; ++i)
    burst += http_conn::format("POST", "/api/v1/push",
                               push_body("q", 1, "Default", i));
  burst += http_conn::format("GET", "/api/v1/messages?queue=q&limit=100");
  burst += http_conn::format("GET", "/nope");
  c.send_raw(burst);
  for (int i = 0; i < 20; ++i) {
    auto r = c.read_response();
    REQUIRE(r);
    REQUIRE(r->status == 201);
    CHECK(r->body_json()[0]["offset"] == i); // the i-th push, in order
  }
  auto browse = c.read_response();
  REQUIRE(browse);
  CHECK(browse->body_json()["messages"].size() == 20);
  auto unknown = c.read_response();
  REQUIRE(unknown);
  CHECK(unknown->status == 404);
  // The connection stays open for more.
  CHECK(c.request("GET", "/health").status == 200);
}

TEST_CASE("a long poll is woken by a push from another connection well "
          "under a second",
          "[system][http][long-poll]") {
  spoold_server s;
  http_conn waiter{s.port()};
  waiter.send_raw(http_conn::format(
      "GET", "/api/v1/pop/queue/q?wait=true&timeout=20000&consumerGroup=g"));
  // It is parked: nothing comes back yet.
  CHECK_FALSE(waiter.read_response(200ms));
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(s.post("/api/v1/push", push_body("q", 1)).status == 201);
  auto r = waiter.read_response(5s);
  auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body_json()["messages"].size() == 1);
  CHECK(took < 500ms);
}

TEST_CASE("a long poll that times out answers 204",
          "[system][http][long-poll]") {
  spoold_server s;
  auto t0 = std::chrono::steady_clock::now();
  auto r = s.get("/api/v1/pop/queue/q?wait=true&timeout=300");
  CHECK(r.status == 204);
  CHECK(std::chrono::steady_clock::now() - t0 >= 250ms);
}

TEST_CASE("a client that disconnects during a long poll cancels its parked "
          "pop: nothing is leased for it",
          "[system][http][long-poll]") {
  spoold_server s;
  {
    http_conn gone{s.port()};
    gone.send_raw(http_conn::format(
        "GET", "/api/v1/pop/queue/q?wait=true&timeout=30000&consumerGroup=g"));
    CHECK_FALSE(gone.read_response(200ms));
    CHECK(s.metric("spool_parked_pops") == 1);
  } // closed here, parked
  // The server sees the close and cancels the parked pop: the node's pops
  // in flight go back to none (a pop that stayed parked would keep it 1).
  auto parked = [&] { return s.metric("spool_parked_pops"); };
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (parked() != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  REQUIRE(parked() == 0);
  REQUIRE(s.post("/api/v1/push", push_body("q", 1)).status == 201);
  // Had the parked pop survived, it would hold the lease now.
  auto r = s.get("/api/v1/pop/queue/q?consumerGroup=g");
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["messages"][0]["deliveryCount"] == 1);
}

TEST_CASE("a body over the limit is 413 and a header over the limit 431, "
          "and the connection closes",
          "[system][http][limits]") {
  spoold_server s{
      {"--http-max-body-bytes", "1000", "--http-max-header-bytes", "2048"}};
  http_conn c{s.port()};
  c.send_raw(http_conn::format("POST", "/api/v1/push",
                               push_body("q", 1) + std::string(2000, ' ')));
  auto r = c.read_response();
  REQUIRE(r);
  CHECK(r->status == 413);
  CHECK(r->body_json()["error"] == "Request body exceeds 1000 bytes");
  CHECK(c.closed_by_peer());
  http_conn h{s.port()};
  h.send_raw("GET /health HTTP/1.1\r\nX-Big: " + std::string(4000, 'x')
             + "\r\n\r\n");
  auto hr = h.read_response();
  REQUIRE(hr);
  CHECK(hr->status == 431);
  // Nothing was stored, and the server serves others.
  CHECK(s.get("/api/v1/resources/queues").body_json()["queues"].empty());
}

TEST_CASE("malformed HTTP gets 400 and a close, other connections are "
          "unaffected",
          "[system][http][bad-input]") {
  spoold_server s;
  http_conn other{s.port()};
  REQUIRE(other.request("GET", "/health").status == 200);
  http_conn bad{s.port()};
  bad.send_raw("GARBAGE\x01\x02 / HTTP/9\r\n\r\n");
  auto r = bad.read_response();
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK_THAT(r->body_json()["error"].get<std::string>(),
             Catch::StartsWith("Malformed HTTP request"));
  CHECK(bad.closed_by_peer());
  CHECK(other.request("GET", "/health").status == 200);
}

TEST_CASE("a request not complete in time is answered 408, an idle "
          "connection is closed",
          "[system][http][limits]") {
  spoold_server s{
      {"--http-request-timeout-ms", "300", "--http-idle-timeout-ms", "300"}};
  http_conn slow{s.port()};
  slow.send_raw("POST /api/v1/push HTTP/1.1\r\nContent-Length: 100\r\n\r\n{");
  auto r = slow.read_response(3s);
  REQUIRE(r);
  CHECK(r->status == 408);
  http_conn idle{s.port()};
  REQUIRE(idle.request("GET", "/health").status == 200);
  CHECK(idle.closed_by_peer(3s));
}

TEST_CASE("a chunked request body and Expect: 100-continue are read",
          "[system][http][connection]") {
  spoold_server s;
  http_conn c{s.port()};
  auto body = push_body("q", 2);
  auto half = body.size() / 2;
  std::ostringstream chunked;
  chunked << std::hex << half << "\r\n"
          << body.substr(0, half) << "\r\n"
          << (body.size() - half) << "\r\n"
          << body.substr(half) << "\r\n0\r\n\r\n";
  c.send_raw("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
             "chunked\r\n\r\n"
             + chunked.str());
  auto r = c.read_response();
  REQUIRE(r);
  CHECK(r->status == 201);
  CHECK(r->body_json().size() == 2);
  http_conn e{s.port()};
  auto b2 = push_body("q", 1, "Default", 2);
  e.send_raw("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nExpect: "
             "100-continue\r\nContent-Length: "
             + std::to_string(b2.size()) + "\r\n\r\n");
  auto cont = e.read_response(2s);
  REQUIRE(cont);
  CHECK(cont->status == 100);
  e.send_raw(b2);
  auto done = e.read_response();
  REQUIRE(done);
  CHECK(done->status == 201);
}

TEST_CASE("Connection: close is honoured after the answer",
          "[system][http][connection]") {
  spoold_server s;
  http_conn c{s.port()};
  c.send_raw("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  auto r = c.read_response();
  REQUIRE(r);
  CHECK(r->header("connection") == "close");
  CHECK(c.closed_by_peer());
}

TEST_CASE("1,000 concurrent keep-alive connections are all served",
          "[system][http][connection]") {
  spoold_server s;
  std::vector<std::unique_ptr<http_conn>> conns;
  for (int i = 0; i < 1000; ++i)
    conns.push_back(std::make_unique<http_conn>(s.port()));
  for (int i = 0; i < 1000; ++i)
    conns[i]->send_raw(http_conn::format(
        "POST", "/api/v1/push", push_body("q" + std::to_string(i % 10), 1)));
  int created = 0;
  for (auto& c : conns) {
    auto r = c->read_response();
    REQUIRE(r);
    created += r->status == 201;
  }
  CHECK(created == 1000);
  // Every connection is still open and answers again.
  int healthy = 0;
  for (auto& c : conns)
    healthy += c->request("GET", "/health").status == 200;
  CHECK(healthy == 1000);
  auto qs = s.get("/api/v1/resources/queues").body_json()["queues"];
  std::int64_t total = 0;
  for (auto& q : qs)
    total += q["messages"]["total"].get<std::int64_t>();
  CHECK(total == 1000);
}

TEST_CASE("HEAD answers the headers of its GET and no body, the connection "
          "stays in step",
          "[system][http][connection]") {
  spoold_server s;
  http_conn c{s.port()};
  c.send_raw("HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n"
             "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  // The client must know not to read a body after HEAD: read the head only.
  auto first = c.read_response(5s, true);
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(first->body.empty());
  CHECK_FALSE(first->header("content-length").empty());
  auto second = c.read_response();
  REQUIRE(second);
  CHECK(second->status == 200);
  CHECK(second->body_json()["status"] == "healthy");
}

TEST_CASE("the access log writes one key=value line per answer when turned "
          "on",
          "[system][http][ops]") {
  spoold_server s{{"--access-log", "true"}};
  REQUIRE(s.get("/health").status == 200);
  REQUIRE(s.get("/api/v1/nothing").status == 404);
  CHECK(s.wait_for_log("method=GET path=/health status=200", 5s));
  CHECK(s.wait_for_log("method=GET path=/api/v1/nothing status=404", 5s));
  CHECK_THAT(s.log(), Catch::Contains("access peer=127.0.0.1:"));
}

TEST_CASE("an unknown query key on a pop, push or seek is answered as before, "
          "with X-Spool-Warning naming it and the key meant, and noted in "
          "the access log",
          "[system][http][bad-input]") {
  spoold_server s{{"--access-log", "true"}};
  REQUIRE(s.post("/api/v1/push", push_body("orders", 2)).status == 201);
  // Misspelt: the pop runs in queue mode, as it did, and says why.
  auto pop = s.get("/api/v1/pop/queue/orders?consumer_group=billing&batch=1");
  REQUIRE(pop.status == 200);
  CHECK(pop.body_json()["consumerGroup"] == "__QUEUE_MODE__");
  CHECK(pop.header("x-spool-warning")
        == "unknown query key consumer_group (did you mean consumerGroup?)");
  // A browser's script may read it (CORS), and the reason of an empty pop.
  CHECK(pop.header("access-control-allow-origin") == "*");
  CHECK(pop.header("access-control-expose-headers")
        == "X-Spool-Empty, X-Spool-Warning, X-Spool-Leader, X-Spool-Slots");
  // One node serves every slot: its listings name none.
  CHECK(s.get("/api/v1/resources/queues").header("x-spool-slots").empty());
  CHECK(s.wait_for_log("path=/api/v1/pop/queue/orders status=200 us=", 5s));
  CHECK(s.wait_for_log("note=\"unknown query key consumer_group (did you "
                       "mean consumerGroup?)\"",
                       5s));
  // Every key a pop reads: no warning.
  auto known = s.get(
      "/api/v1/pop/queue/orders?batch=1&partitions=1&wait=false&timeout=10"
      "&autoAck=false&maxBytes=1000000&consumerGroup=billing"
      "&subscriptionMode=all&subscriptionFrom=");
  CHECK(known.status == 200);
  CHECK(known.headers.count("x-spool-warning") == 0);
  auto part = s.get("/api/v1/pop/queue/orders/partition/Default?"
                    "consumerGroup=audit&batch=1&partitions=1");
  CHECK(part.status == 200);
  CHECK(part.headers.count("x-spool-warning") == 0);
  auto ns = s.get("/api/v1/pop?namespace=none&task=t&batch=1&wait=false");
  CHECK(ns.status == 204);
  CHECK(ns.headers.count("x-spool-warning") == 0);
  auto ns_bad = s.get("/api/v1/pop?namespace=none&tsak=t");
  CHECK(ns_bad.status == 204);
  CHECK(ns_bad.header("x-spool-warning")
        == "unknown query key tsak (did you mean task?)");
  // A push reads no query key: any is unknown; the push is stored as ever.
  auto push = s.post("/api/v1/push?queue=orders",
                     push_body("orders", 1, "Default", 2));
  CHECK(push.status == 201);
  CHECK(push.header("x-spool-warning") == "unknown query key queue");
  // Seeks read dryRun.
  auto seek = s.post("/api/v1/consumer-groups/billing/queues/orders/seek?"
                     "dry_run=true",
                     R"({"toEnd":true})");
  CHECK(seek.status == 200);
  CHECK(seek.body_json()["dryRun"] == false); // as before: the key is not read
  CHECK(seek.header("x-spool-warning")
        == "unknown query key dry_run (did you mean dryRun?)");
  auto dry = s.post("/api/v1/consumer-groups/billing/queues/orders/partitions/"
                    "Default/seek?dryRun=true",
                    R"({"toStart":true})");
  CHECK(dry.status == 200);
  CHECK(dry.headers.count("x-spool-warning") == 0);
  // An error answer carries it too; other routes are not checked.
  auto bad = s.get("/api/v1/pop/queue/orders?batch=0&btch=2");
  CHECK(bad.status == 400);
  CHECK(bad.header("x-spool-warning")
        == "unknown query key btch (did you mean batch?)");
  CHECK(
      s.get("/api/v1/resources/queues?bogus=1").headers.count("x-spool-warning")
      == 0);
}
