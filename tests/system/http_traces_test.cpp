// Message traces over HTTP against the real spoold (docs/traces.md): Queen's
// four routes with their shapes, every refusal with its status and message
// and nothing stored, traces kept across kill -9 and gone with a purge.

#include <catch2/catch.hpp>

#include "system/http_fixture.hpp"

using namespace spool::test;

namespace {

/// Pushes two messages to `queue` (t0, t1): the partition id.
std::string push_two(spoold_server& s, const std::string& queue) {
  auto r = s.post("/api/v1/push",
                  R"({"items":[{"queue":")" + queue
                      + R"(","transactionId":"t0","payload":{"n":0}},)"
                        R"({"queue":")"
                      + queue + R"(","transactionId":"t1","payload":"one"}]})");
  REQUIRE(r.status == 201);
  return r.body_json()[0]["partition_id"];
}

std::string trace_body(const std::string& pid, const std::string& txid,
                       const std::string& rest) {
  return R"({"partitionId":")" + pid + R"(","transactionId":")" + txid + R"(",)"
         + rest + "}";
}

} // namespace

TEST_CASE("traces are attached to a message and read by message, by name and "
          "as the names in use, in Queen's shapes",
          "[system][http][traces][queen-shape]") {
  spoold_server s;
  auto pid = push_two(s, "orders");
  auto a = s.post("/api/v1/traces",
                  trace_body(pid, "t0",
                             R"("data":{"step":"validated"},)"
                             R"("traceNames":["order-7","tenant-a"],)"
                             R"("workerId":"w1")"));
  REQUIRE(a.status == 201);
  auto aj = a.body_json();
  CHECK(aj["success"] == true);
  std::string first = aj["traceId"];
  CHECK(first.size() == 36);
  auto b = s.post("/api/v1/traces",
                  trace_body(pid, "t0",
                             R"("data":"charged","eventType":"payment",)"
                             R"("consumerGroup":"billing",)"
                             R"("traceNames":"order-7")"));
  REQUIRE(b.status == 201);
  REQUIRE(
      s.post("/api/v1/traces",
             trace_body(pid, "t1", R"("data":[1,2],"traceNames":"order-8")"))
          .status
      == 201);

  auto m = s.get("/api/v1/traces/" + pid + "/t0");
  REQUIRE(m.status == 200);
  auto ts = m.body_json()["traces"];
  REQUIRE(ts.size() == 2);
  CHECK(ts[0]["id"] == first);
  CHECK(ts[0]["event_type"] == "info");
  CHECK(ts[0]["data"] == nlohmann::json::parse(R"({"step":"validated"})"));
  CHECK(ts[0]["consumer_group"] == "__QUEUE_MODE__");
  CHECK(ts[0]["worker_id"] == "w1");
  CHECK(ts[0]["created_at"].get<std::string>().size() == 27);
  CHECK(ts[0]["trace_names"]
        == nlohmann::json::parse(R"(["order-7","tenant-a"])"));
  CHECK(ts[0]["transaction_id"] == "t0");
  CHECK(ts[0]["partition_id"] == pid);
  CHECK(ts[1]["event_type"] == "payment");
  CHECK(ts[1]["data"] == "charged");
  CHECK(ts[1]["consumer_group"] == "billing");
  CHECK(ts[1]["worker_id"].is_null());
  // A message without traces, or none at all: an empty list.
  CHECK(s.get("/api/v1/traces/" + pid + "/t9").body_json()["traces"].empty());

  auto n = s.get("/api/v1/traces/by-name/order-7?limit=1");
  REQUIRE(n.status == 200);
  auto nj = n.body_json();
  CHECK(nj["total"] == 2);
  CHECK(nj["pagination"]["limit"] == 1);
  CHECK(nj["pagination"]["offset"] == 0);
  REQUIRE(nj["traces"].size() == 1);
  auto& newest = nj["traces"][0];
  CHECK(newest["event_type"] == "payment"); // newest first
  CHECK(newest["transaction_id"] == "t0");
  CHECK(newest["partition_id"] == pid);
  CHECK(newest["queue_name"] == "orders");
  CHECK(newest["partition_name"] == "Default");
  CHECK(newest["message_payload"] == nlohmann::json::parse(R"({"n":0})"));
  auto next
      = s.get("/api/v1/traces/by-name/order-7?limit=1&offset=1").body_json();
  REQUIRE(next["traces"].size() == 1);
  CHECK(next["traces"][0]["id"] == first);
  // The name is URL-decoded (Queen decodes this parameter only).
  REQUIRE(s.post("/api/v1/traces",
                 trace_body(pid, "t1", R"("data":1,"traceNames":"a b/c")"))
              .status
          == 201);
  CHECK(s.get("/api/v1/traces/by-name/a%20b%2Fc").body_json()["total"] == 1);
  CHECK(s.get("/api/v1/traces/by-name/unused").body_json()["total"] == 0);

  auto names = s.get("/api/v1/traces/names");
  REQUIRE(names.status == 200);
  auto lj = names.body_json();
  CHECK(lj["total"] == 4);
  CHECK(lj["pagination"]["limit"] == 50);
  REQUIRE(lj["trace_names"].size() == 4);
  CHECK(lj["trace_names"][0]["trace_name"] == "a b/c"); // most recent first
  nlohmann::json order7;
  for (auto& e : lj["trace_names"])
    if (e["trace_name"] == "order-7")
      order7 = e;
  CHECK(order7["trace_count"] == 2);
  CHECK(order7["message_count"] == 1);
  CHECK(order7["last_seen"].is_string());
  CHECK(s.get("/api/v1/traces/names?limit=2&offset=3")
            .body_json()["trace_names"]
            .size()
        == 1);
}

TEST_CASE("a malformed or impossible trace is refused with its status and "
          "message and stores nothing",
          "[system][http][traces][bad-input]") {
  spoold_server s;
  auto pid = push_two(s, "orders");
  struct bad {
    std::string body;
    int status;
    std::string error;
  };
  std::vector<bad> cases{
      {R"({"partitionId":")" + pid + R"(","data":1})", 400,
       "transactionId and partitionId are required"},
      {R"({"transactionId":"t0","data":1})", 400,
       "transactionId and partitionId are required"},
      {trace_body(pid, "t0", R"("eventType":"x")"), 400, "data is required"},
      {trace_body(pid, "t0", R"("data":null)"), 400, "data is required"},
      {trace_body(pid, "t9", R"("data":1)"), 404, "Message not found"},
      {trace_body("00000000-0000-0000-0000-000000000000", "t0", R"("data":1)"),
       404, "Partition not found"},
      {trace_body(pid, "t0", R"("data":1,"traceNames":5)"), 400,
       "traceNames must be a string or an array of strings"},
      {trace_body(pid, "t0", R"("data":1,"traceNames":["a",7])"), 400,
       "traceNames[1] must be a string"},
      {trace_body(pid, "t0", R"("data":1,"traceNames":[""])"), 400,
       "traceNames[0] must not be empty"},
      {trace_body(pid, "t0",
                  R"("data":1,"traceNames":")" + std::string(256, 'n') + "\""),
       400, "traceNames[0] must be at most 255 bytes, got 256"},
      {trace_body(pid, "t0", R"("data":1,"eventType":7)"), 400,
       "eventType must be a string"},
      {trace_body(pid, "t0", R"("data":")" + std::string(70'000, 'x') + "\""),
       413, "data holds 70002 bytes; a trace holds at most 65536"},
      {R"({"partitionId":)", 400, ""},
      {"[1]", 400, "Request body must be a JSON object"},
  };
  std::string many = R"("data":1,"traceNames":[)";
  for (int i = 0; i < 33; ++i)
    many += (i ? ",\"" : "\"") + std::to_string(i) + "\"";
  cases.push_back({trace_body(pid, "t0", many + "]"), 400,
                   "a trace carries at most 32 traceNames"});
  std::string repeats = R"("data":1,"traceNames":["a")";
  for (int i = 0; i < 256; ++i)
    repeats += R"(,"a")";
  cases.push_back({trace_body(pid, "t0", repeats + "]"), 400,
                   "traceNames holds more than 256 elements"});
  for (auto& c : cases) {
    INFO(c.body.substr(0, 200));
    auto r = s.post("/api/v1/traces", c.body);
    CHECK(r.status == c.status);
    if (!c.error.empty())
      CHECK(r.body_json()["error"] == c.error);
  }
  CHECK(s.get("/api/v1/traces/" + pid + "/t0").body_json()["traces"].empty());
  CHECK(s.get("/api/v1/traces/names").body_json()["total"] == 0);
  CHECK(s.get("/api/v1/traces/by-name/" + std::string(256, 'n')).status == 400);
  for (auto* q : {"limit=0", "limit=1001", "offset=-1", "limit=x"}) {
    INFO(q);
    CHECK(s.get(std::string{"/api/v1/traces/names?"} + q).status == 400);
    CHECK(s.get(std::string{"/api/v1/traces/by-name/n?"} + q).status == 400);
  }
}

TEST_CASE("traces survive kill -9 and go with their messages: a purge "
          "removes them, a purged message takes no new one",
          "[system][http][traces][crash]") {
  spoold_server s;
  auto pid = push_two(s, "orders");
  REQUIRE(s.post("/api/v1/traces",
                 trace_body(pid, "t0", R"("data":1,"traceNames":"kept")"))
              .status
          == 201);
  s.kill9();
  s.start();
  auto after = s.get("/api/v1/traces/" + pid + "/t0").body_json()["traces"];
  REQUIRE(after.size() == 1);
  CHECK(after[0]["trace_names"][0] == "kept");
  REQUIRE(s.post("/api/v1/resources/queues/orders/purge", "").status == 200);
  CHECK(s.get("/api/v1/traces/" + pid + "/t0").body_json()["traces"].empty());
  CHECK(s.get("/api/v1/traces/by-name/kept").body_json()["total"] == 0);
  auto late = s.post("/api/v1/traces", trace_body(pid, "t0", R"("data":1)"));
  CHECK(late.status == 404);
}
