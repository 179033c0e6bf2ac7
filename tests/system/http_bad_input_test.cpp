// The bad-input table: for each route, malformed JSON, wrong types, missing
// fields, huge numbers, oversized bodies, invalid and over-long names,
// invalid UTF-8 and bad timestamps get the right 4xx and message, and the
// store is the same afterwards (compared before and after).

#include <catch2/catch.hpp>

#include "system/http_fixture.hpp"

using namespace spool::test;

namespace {

struct bad_request {
  std::string method;
  std::string target;
  std::string body;
  int status;
  std::string error; ///< exact, or a prefix when it ends with `*`
};

/// What a client can see of the store: queues, partitions and their
/// offsets, every group's positions, the DLQ, and the messages themselves.
std::string snapshot(spoold_server& s) {
  std::string out;
  auto qs = s.get("/api/v1/resources/queues").body_json();
  for (auto& q : qs["queues"]) {
    auto name = q["name"].get<std::string>();
    auto d = s.get("/api/v1/resources/queues/" + name).body_json();
    out += name + " " + d["options"].dump() + "\n";
    for (auto& p : d["partitions"]) {
      out += "  " + p["name"].get<std::string>() + " " + p["lastOffset"].dump()
             + " " + p["watermark"].dump() + "\n";
      auto b = s.get("/api/v1/messages?queue=" + name + "&partition="
                     + p["name"].get<std::string>() + "&limit=1000")
                   .body_json();
      for (auto& m : b["messages"])
        out += "    " + m["transactionId"].get<std::string>() + " "
               + m["data"].dump() + "\n";
    }
  }
  auto gs = s.get("/api/v1/consumer-groups").body_json();
  for (auto& g : gs) {
    auto name = g["name"].get<std::string>();
    auto d = s.get("/api/v1/consumer-groups/" + name).body_json();
    for (auto& [queue, v] : d.items())
      for (auto& p : v["partitions"])
        out += name + "@" + queue + "/" + p["partition"].get<std::string>()
               + " committed " + p["committed"].dump() + " lease "
               + p["leaseActive"].dump() + "\n";
  }
  out += "dlq " + s.get("/api/v1/dlq").body_json()["total"].dump() + "\n";
  return out;
}

} // namespace

TEST_CASE("bad input on every route gets its 4xx and message, and the store "
          "is unchanged",
          "[system][http][bad-input]") {
  spoold_server s{{"--http-max-body-bytes", "10485760"}};
  REQUIRE(s.post("/api/v1/push", push_body("q", 3)).status == 201);
  auto popped = s.get("/api/v1/pop/queue/q?consumerGroup=g").body_json();
  auto& m = popped["messages"][0];
  json ack = {{"transactionId", m["transactionId"]},
              {"partitionId", m["partitionId"]},
              {"leaseId", m["leaseId"]},
              {"consumerGroup", "g"}};
  REQUIRE(s.post("/api/v1/ack", ack.dump()).status == 200);
  auto before = snapshot(s);

  std::string long_name(300, 'n');
  std::string big_payload = R"({"items":[{"queue":"q","payload":")"
                            + std::string(9u << 20, 'x') + R"("}]})";
  std::vector<bad_request> table = {
      // push
      {"POST", "/api/v1/push", "", 400, "Empty request body"},
      {"POST", "/api/v1/push", "{\"items\":[", 400, "Invalid JSON: *"},
      {"POST", "/api/v1/push", "{\"items\":[]} x", 400, "Invalid JSON: *"},
      {"POST", "/api/v1/push", "[1]", 400,
       "Request body must be a JSON object"},
      {"POST", "/api/v1/push", "{}", 400, "items array is required"},
      {"POST", "/api/v1/push", R"({"items":[{"queue":5}]})", 400,
       "items[0].queue must be a string"},
      {"POST", "/api/v1/push", R"({"items":[{"queue":"q"},{"payload":1}]})",
       400, "items[1].queue is required"},
      {"POST", "/api/v1/push", R"({"items":[{"queue":""}]})", 400, "*"},
      {"POST", "/api/v1/push",
       R"({"items":[{"queue":")" + long_name + R"("}]})", 400, "*"},
      {"POST", "/api/v1/push", R"({"items":[{"queue":"a/b"}]})", 400, "*"},
      {"POST", "/api/v1/push", R"({"items":[{"queue":"__x"}]})", 400, "*"},
      {"POST", "/api/v1/push", "{\"items\":[{\"queue\":\"\xff\xfe\"}]}", 400,
       "Invalid JSON: *"},
      {"POST", "/api/v1/push",
       R"({"items":[{"queue":"q","transactionId":""}]})", 400, "*"},
      {"POST", "/api/v1/push", big_payload, 413, "*"},
      {"POST", "/api/v1/push",
       R"({"items":[{"queue":"q","payload":")" + std::string(11u << 20, 'x')
           + R"("}]})",
       413, "Request body exceeds 10485760 bytes"},
      // pop
      {"GET", "/api/v1/pop/queue/q?batch=0", "", 400, "batch must be *"},
      {"GET", "/api/v1/pop/queue/q?batch=abc", "", 400,
       "batch must be an integer"},
      {"GET", "/api/v1/pop/queue/q?batch=99999999999999999999", "", 400,
       "batch must be an integer"},
      {"GET", "/api/v1/pop/queue/q?timeout=-1", "", 400,
       "timeout must be a non-negative integer"},
      {"GET", "/api/v1/pop/queue/q?wait=maybe", "", 400,
       "wait must be true or false"},
      {"GET", "/api/v1/pop/queue/q?partitions=0", "", 400, "partitions *"},
      {"GET", "/api/v1/pop/queue/q?consumerGroup=__x", "", 400, "*"},
      {"GET", "/api/v1/pop/queue/%ZZ", "", 400,
       "Invalid path: bad percent-encoding"},
      {"GET", "/api/v1/pop/queue/%FF", "", 400, "*"},
      {"GET", "/api/v1/pop/queue/q?consumerGroup=%4", "", 400,
       "Invalid query: bad percent-encoding in consumerGroup=%4"},
      {"GET", "/api/v1/pop", "", 400, "namespace is required"},
      // ack
      {"POST", "/api/v1/ack", "", 400, "Empty request body"},
      {"POST", "/api/v1/ack", R"({"partitionId":"p"})", 400,
       "transactionId is required"},
      {"POST", "/api/v1/ack", R"({"transactionId":"t"})", 400,
       "partitionId is required to ensure message uniqueness"},
      {"POST", "/api/v1/ack", R"({"transactionId":1,"partitionId":"p"})", 400,
       "transactionId must be a string"},
      {"POST", "/api/v1/ack",
       R"({"transactionId":"t","partitionId":"p","status":"nope"})", 400,
       "status must be completed, success, failed, dlq or retry"},
      {"POST", "/api/v1/ack",
       R"({"transactionId":"t","partitionId":"p","delayMs":1e30})", 400,
       "delayMs must be an integer"},
      {"POST", "/api/v1/ack/batch", R"({"acknowledgments":"x"})", 400,
       "acknowledgments array is required"},
      // transaction
      {"POST", "/api/v1/transaction", "{}", 400, "operations array required"},
      {"POST", "/api/v1/transaction", R"({"operations":[]})", 400,
       "operations array cannot be empty"},
      {"POST", "/api/v1/transaction", R"({"operations":[{"type":7}]})", 400,
       "operations[0].type must be a string"},
      {"POST", "/api/v1/transaction",
       R"({"operations":[{"type":"push","items":[{"queue":1}]}]})", 400,
       "operations[0].items[0].queue must be a string"},
      // seek and subscription
      {"POST", "/api/v1/consumer-groups/g/queues/q/seek", "", 400,
       "Empty request body"},
      {"POST", "/api/v1/consumer-groups/g/queues/q/seek", "{]", 400,
       "Invalid JSON: *"},
      {"POST", "/api/v1/consumer-groups/g/queues/q/seek",
       R"({"timestamp":"2026-02-30T00:00:00Z"})", 400,
       "Invalid timestamp: 2026-02-30T00:00:00Z"},
      {"POST", "/api/v1/consumer-groups/g/queues/q/seek", R"({"timestamp":12})",
       400, "timestamp must be a string"},
      {"POST", "/api/v1/consumer-groups/g/queues/q/seek",
       R"({"offset":99999999999999999999})", 400, "offset must be an integer"},
      {"POST", "/api/v1/consumer-groups/g/queues/q/seek", R"({"x":1})", 400,
       "Must specify toEnd=true or a timestamp"},
      {"POST", "/api/v1/consumer-groups/g/queues/nope/seek",
       R"({"toEnd":true})", 404, "Queue not found or has no partitions"},
      {"POST", "/api/v1/consumer-groups/g/queues/q/partitions/nope/seek", "",
       404, "Partition not found"},
      {"POST", "/api/v1/consumer-groups/" + long_name + "/queues/q/seek",
       R"({"toEnd":true})", 400, "*"},
      {"POST", "/api/v1/consumer-groups/g/subscription",
       R"({"subscriptionTimestamp":5})", 400,
       "subscriptionTimestamp must be a string"},
      {"POST", "/api/v1/consumer-groups/g/subscription",
       R"({"subscriptionTimestamp":"tomorrow"})", 400,
       "Invalid timestamp: tomorrow"},
      // configure and queues
      {"POST", "/api/v1/configure", R"({"options":{}})", 400,
       "queue is required"},
      {"POST", "/api/v1/configure",
       R"({"queue":"q","options":{"leaseTime":"x"}})", 400,
       "options.leaseTime must be an integer"},
      {"POST", "/api/v1/configure",
       R"({"queue":"q","options":{"leaseTime":-5}})", 400, "*"},
      {"POST", "/api/v1/configure",
       R"({"queue":"q","options":{"retryBackoffMs":[1,"a"]}})", 400,
       "options.retryBackoffMs[1] must be an integer"},
      {"GET", "/api/v1/resources/queues/nope", "", 404, "Queue not found"},
      {"GET", "/api/v1/messages", "", 400, "queue is required"},
      {"GET", "/api/v1/messages?queue=q&limit=0", "", 400,
       "limit must be 1..10000"},
      {"GET", "/api/v1/status/queues?limit=5000", "", 400,
       "limit must be 1..1000"},
      {"GET", "/api/v1/status/queues?offset=-1", "", 400,
       "offset must be non-negative"},
      {"GET", "/api/v1/status/queues?limit=ten", "", 400,
       "limit must be an integer"},
      {"GET", "/api/v1/status/queues/nope", "", 404, "Queue not found"},
      // leases, DLQ
      {"POST", "/api/v1/lease/x/extend", R"({"seconds":"long"})", 400,
       "seconds must be an integer"},
      {"GET", "/api/v1/dlq?limit=0", "", 400, "limit must be 1..10000"},
      {"GET", "/api/v1/dlq?from=never", "", 400, "Invalid timestamp: never"},
      {"DELETE", "/api/v1/dlq/abc", "", 400,
       "dlqId must be a non-negative integer"},
      {"DELETE", "/api/v1/dlq", "", 400, "queue is required"},
      {"POST", "/api/v1/dlq/requeue", R"({"ids":[-1]})", 400,
       "ids[0] must be a non-negative integer"},
      // unknown routes
      {"PATCH", "/api/v1/push", "", 404, "Unknown route: PATCH /api/v1/push"},
  };
  for (auto& row : table) {
    INFO(row.method << " " << row.target << " " << row.body.substr(0, 120));
    http_conn c{s.port()};
    c.send_raw(http_conn::format(row.method, row.target, row.body));
    auto r = c.read_response(30s);
    REQUIRE(r);
    INFO(r->body);
    CHECK(r->status == row.status);
    auto j = json::parse(r->body, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    REQUIRE(j.contains("error"));
    auto err = j["error"].get<std::string>();
    if (!row.error.empty() && row.error.back() == '*')
      CHECK_THAT(err,
                 Catch::StartsWith(row.error.substr(0, row.error.size() - 1)));
    else
      CHECK(err == row.error);
  }
  CHECK(snapshot(s) == before);
  CHECK(s.get("/health").status == 200);
}
