// The HTTP door's routes against the real spoold: each route's happy path
// and the fields Queen's clients read (queen-reference.md), with their
// names and types.

#include <catch2/catch.hpp>

#include "system/http_fixture.hpp"

using namespace spool::test;

namespace {

/// Pops `queue` with `query` and returns the answer.
http_response pop(spoold_server& s, const std::string& queue,
                  const std::string& query = "") {
  return s.get("/api/v1/pop/queue/" + queue + (query.empty() ? "" : "?")
               + query);
}

} // namespace

TEST_CASE("push answers 201 with Queen's fields per item in input order",
          "[system][http][push][queen-shape]") {
  spoold_server s;
  auto r = s.post("/api/v1/push", push_body("orders", 3));
  REQUIRE(r.status == 201);
  auto j = r.body_json();
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 3);
  for (int i = 0; i < 3; ++i) {
    auto& it = j[i];
    CHECK(it["index"] == i);
    CHECK(it["status"] == "queued");
    CHECK(it["transaction_id"].is_string());
    CHECK(it["message_id"].is_string());
    CHECK(it["message_id"].get<std::string>().size() == 36);
    CHECK(it["partition_id"].is_string());
    CHECK(it["queueName"] == "orders");
    CHECK(it["offset"] == i);
    CHECK(it.contains("trace_id"));
  }
  // An empty list is 201 [] and creates nothing.
  auto empty = s.post("/api/v1/push", R"({"items":[]})");
  CHECK(empty.status == 201);
  CHECK(empty.body == "[]");
}

TEST_CASE("a repeated transactionId answers duplicate with the original's "
          "message_id and offset",
          "[system][http][push]") {
  spoold_server s;
  auto body = R"({"items":[{"queue":"q","transactionId":"t-1","payload":1}]})";
  auto first = s.post("/api/v1/push", body).body_json();
  auto again = s.post("/api/v1/push", body);
  REQUIRE(again.status == 201);
  auto j = again.body_json();
  CHECK(j[0]["status"] == "duplicate");
  CHECK(j[0]["message_id"] == first[0]["message_id"]);
  CHECK(j[0]["offset"] == first[0]["offset"]);
}

TEST_CASE("pop delivers Queen's fields and payloads as the JSON they were "
          "pushed as, ack settles it, an empty pop is 204 with its reason",
          "[system][http][pop][ack][queen-shape]") {
  spoold_server s;
  auto body
      = R"({"items":[{"queue":"orders","partition":"eu","payload":{"a":[1,2,{"b":"ü"}],"c":null},"traceId":"tr-1","headers":{"k":"v"}}]})";
  REQUIRE(s.post("/api/v1/push", body).status == 201);
  auto r = pop(s, "orders", "batch=10&consumerGroup=billing");
  REQUIRE(r.status == 200);
  auto j = r.body_json();
  CHECK(j["success"] == true);
  CHECK(j["queue"] == "orders");
  CHECK(j["partition"] == "eu");
  CHECK(j["partitionId"].is_string());
  CHECK(j["leaseId"].is_string());
  CHECK(j["leaseEpoch"].is_number_unsigned());
  CHECK(j["consumerGroup"] == "billing");
  CHECK(j["partitionsClaimed"] == 1);
  REQUIRE(j["messages"].size() == 1);
  auto& m = j["messages"][0];
  for (auto* f : {"id", "transactionId", "traceId", "partitionId", "partition",
                  "leaseId", "consumerGroup", "createdAt"})
    CHECK(m[f].is_string());
  CHECK(m["data"] == json::parse(R"({"a":[1,2,{"b":"ü"}],"c":null})"));
  CHECK(m["traceId"] == "tr-1");
  CHECK(m["headers"]["k"] == "v");
  CHECK(m["offset"] == 0);
  CHECK(m["deliveryCount"] == 1);
  CHECK(m.contains("producerSub"));
  auto created = m["createdAt"].get<std::string>();
  CHECK(created.size() == 27); // YYYY-MM-DDTHH:MM:SS.uuuuuuZ
  CHECK(created[10] == 'T');
  CHECK(created.back() == 'Z');
  // Nothing more to deliver while the lease lives: 204 and the reason.
  auto held = pop(s, "orders", "consumerGroup=billing");
  CHECK(held.status == 204);
  CHECK(held.header("x-spool-empty") == "lease_held");
  CHECK(held.body.empty());
  // The ack settles it and ends the lease.
  json ack = {{"transactionId", m["transactionId"]},
              {"partitionId", m["partitionId"]},
              {"leaseId", m["leaseId"]},
              {"consumerGroup", "billing"}};
  auto a = s.post("/api/v1/ack", ack.dump());
  REQUIRE(a.status == 200);
  auto aj = a.body_json();
  REQUIRE(aj.is_array());
  CHECK(aj[0]["index"] == 0);
  CHECK(aj[0]["success"] == true);
  CHECK(aj[0]["error"].is_null());
  CHECK(aj[0]["queueName"] == "orders");
  CHECK(aj[0]["partitionName"] == "eu");
  CHECK(aj[0]["leaseReleased"] == true);
  CHECK(aj[0]["dlq"] == false);
  auto after = pop(s, "orders", "consumerGroup=billing");
  CHECK(after.status == 204);
  CHECK(after.header("x-spool-empty") == "empty");
  // Another group still sees it (consuming never deletes).
  auto other = pop(s, "orders", "consumerGroup=audit");
  CHECK(other.status == 200);
}

TEST_CASE("a partition pop, autoAck with an empty leaseId, and a namespace "
          "pop",
          "[system][http][pop]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("shop.orders", 2, "p1")).status
          == 201);
  auto none = s.get("/api/v1/pop/queue/shop.orders/partition/p2");
  CHECK(none.status == 204);
  CHECK(none.header("x-spool-empty") == "no_partition");
  auto r = s.get("/api/v1/pop/queue/shop.orders/partition/p1?autoAck=true");
  REQUIRE(r.status == 200);
  auto j = r.body_json();
  CHECK(j["leaseId"] == "");
  CHECK(j["messages"][0]["leaseId"] == "");
  // The namespace of an auto-created queue is the text before its first dot.
  auto ns = s.get("/api/v1/pop?namespace=shop&batch=5");
  REQUIRE(ns.status == 200);
  CHECK(ns.body_json()["messages"].size() == 1); // the other was auto-acked
}

TEST_CASE("ack/batch answers one item per ack in order, [] for none, "
          "extend answers the new expiry",
          "[system][http][ack]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("q", 3)).status == 201);
  auto r = pop(s, "q", "batch=3").body_json();
  json acks = json::array();
  for (auto& m : r["messages"])
    acks.push_back({{"transactionId", m["transactionId"]},
                    {"partitionId", m["partitionId"]},
                    {"leaseId", m["leaseId"]}});
  // An unknown frame first (the lease is still live for it).
  acks.insert(acks.begin(), json::object({{"transactionId", "nope"},
                                          {"partitionId", r["partitionId"]}}));
  auto ext
      = s.post("/api/v1/lease/" + r["leaseId"].get<std::string>() + "/extend",
               R"({"seconds":120})");
  REQUIRE(ext.status == 200);
  auto ej = ext.body_json();
  CHECK(ej[0]["success"] == true);
  CHECK(ej[0]["leaseId"] == r["leaseId"]);
  CHECK(ej[0]["error"].is_null());
  CHECK(ej[0]["expiresAt"].is_string());
  auto unknown = s.post("/api/v1/lease/no-such-lease/extend", "{}").body_json();
  CHECK(unknown[0]["success"] == false);
  CHECK(unknown[0]["error"] == "Lease not found");
  auto b = s.post("/api/v1/ack/batch", json{{"acknowledgments", acks}}.dump());
  REQUIRE(b.status == 200);
  auto bj = b.body_json();
  REQUIRE(bj.size() == 4);
  CHECK(bj[0]["success"] == false);
  // A transactionId the live lease did not deliver (the cursor knows only
  // its last lease's frames by id; docs/consumption.md).
  CHECK(bj[0]["error"] == "Message not in lease");
  for (int i = 1; i < 4; ++i) {
    CHECK(bj[i]["index"] == i);
    CHECK(bj[i]["success"] == true);
  }
  auto empty = s.post("/api/v1/ack/batch", R"({"acknowledgments":[]})");
  CHECK(empty.status == 200);
  CHECK(empty.body == "[]");
}

TEST_CASE("configure echoes every option as stored and lists unknown ones in "
          "warnings, queue listing and detail",
          "[system][http][queues][queen-shape]") {
  spoold_server s;
  auto r = s.post(
      "/api/v1/configure",
      R"({"queue":"jobs","namespace":"n","task":"t","options":{"leaseTime":30,"retryLimit":5,"bogus":1}})");
  REQUIRE(r.status == 200);
  auto j = r.body_json();
  CHECK(j["configured"] == true);
  CHECK(j["queue"] == "jobs");
  CHECK(j["namespace"] == "n");
  CHECK(j["task"] == "t");
  CHECK(j["queueId"].is_string());
  CHECK(j["partitionId"].is_string());
  CHECK(j["options"]["leaseTime"] == 30);
  CHECK(j["options"]["retryLimit"] == 5);
  CHECK(j["options"]["retentionEnabled"].is_boolean());
  REQUIRE(j["warnings"].size() == 1);
  CHECK_THAT(j["warnings"][0].get<std::string>(), Catch::Contains("bogus"));
  REQUIRE(s.post("/api/v1/push", push_body("jobs", 2)).status == 201);
  auto list = s.get("/api/v1/resources/queues").body_json();
  REQUIRE(list["queues"].size() == 1);
  CHECK(list["queues"][0]["name"] == "jobs");
  CHECK(list["queues"][0]["partitions"] == 1);
  CHECK(list["queues"][0]["messages"]["total"] == 2);
  auto detail = s.get("/api/v1/resources/queues/jobs");
  REQUIRE(detail.status == 200);
  auto dj = detail.body_json();
  CHECK(dj["partitions"][0]["name"] == "Default");
  CHECK(dj["partitions"][0]["lastOffset"] == 1);
  CHECK(dj["options"]["leaseTime"] == 30);
  auto missing = s.get("/api/v1/resources/queues/nope");
  CHECK(missing.status == 404);
  CHECK(missing.body_json()["error"] == "Queue not found");
  auto browse = s.get("/api/v1/messages?queue=jobs&fromOffset=1");
  REQUIRE(browse.status == 200);
  CHECK(browse.body_json()["messages"].size() == 1);
  CHECK(browse.body_json()["messages"][0]["offset"] == 1);
  auto del = s.del("/api/v1/resources/queues/jobs").body_json();
  CHECK(del["deleted"] == true);
  CHECK(del["existed"] == true);
  CHECK(s.del("/api/v1/resources/queues/jobs").body_json()["existed"] == false);
}

TEST_CASE("consumer-group listings show exact lag, deleting a group",
          "[system][http][groups][queen-shape]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("q", 5)).status == 201);
  REQUIRE(pop(s, "q", "consumerGroup=g&batch=2").status == 200);
  auto list = s.get("/api/v1/consumer-groups").body_json();
  REQUIRE(list.is_array());
  auto g = std::find_if(list.begin(), list.end(),
                        [](auto& e) { return e["name"] == "g"; });
  REQUIRE(g != list.end());
  CHECK((*g)["queueName"] == "q");
  CHECK((*g)["members"] == 1);
  CHECK((*g)["totalLag"] == 5);
  auto detail = s.get("/api/v1/consumer-groups/g").body_json();
  auto& p = detail["q"]["partitions"][0];
  CHECK(p["partition"] == "Default");
  CHECK(p["committed"] == -1);
  CHECK(p["lastOffset"] == 4);
  CHECK(p["offsetLag"] == 5);
  CHECK(p["leaseActive"] == true);
  CHECK(p["lease"]["first"] == 0);
  CHECK(p["lease"]["last"] == 1);
  auto lagging = s.get("/api/v1/consumer-groups/lagging?minLagSeconds=0");
  REQUIRE(lagging.status == 200);
  auto lj = lagging.body_json();
  REQUIRE(lj.size() == 1);
  CHECK(lj[0]["consumer_group"] == "g");
  CHECK(lj[0]["queue_name"] == "q");
  CHECK(lj[0]["partition_name"] == "Default");
  CHECK(lj[0]["partition_id"].is_string());
  CHECK(lj[0]["worker_id"].is_string()); // the live lease
  CHECK(lj[0]["offset_lag"] == 5);
  CHECK(lj[0]["time_lag_seconds"].is_number_integer());
  CHECK(lj[0]["lag_hours"].is_number_integer());
  CHECK(lj[0]["oldest_unconsumed_at"].is_string());
  auto del = s.del("/api/v1/consumer-groups/g").body_json();
  CHECK(del["success"] == true);
  CHECK(del["deletedPartitions"] == 1);
  CHECK(s.get("/api/v1/consumer-groups/g").body == "{}");
}

TEST_CASE("a transaction pushes and acks all or nothing",
          "[system][http][transaction]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("in", 1)).status == 201);
  auto m = pop(s, "in").body_json();
  auto& msg = m["messages"][0];
  json txn = {{"operations",
               {{{"type", "ack"},
                 {"transactionId", msg["transactionId"]},
                 {"partitionId", msg["partitionId"]},
                 {"leaseId", msg["leaseId"]}},
                {{"type", "push"},
                 {"items", {{{"queue", "out"}, {"payload", {{"r", 1}}}}}}}}}};
  auto r = s.post("/api/v1/transaction", txn.dump());
  REQUIRE(r.status == 200);
  auto j = r.body_json();
  CHECK(j["success"] == true);
  CHECK(j["transactionId"].is_string());
  REQUIRE(j["results"].size() == 2);
  CHECK(j["results"][0]["type"] == "ack");
  CHECK(j["results"][1]["type"] == "push");
  CHECK(j["results"][1]["messageId"].is_string());
  CHECK(pop(s, "out").status == 200);
  // An ack that cannot apply rolls back the push beside it.
  json bad = {{"operations",
               {{{"type", "push"}, {"queue", "out2"}, {"payload", 1}},
                {{"type", "ack"},
                 {"transactionId", "nope"},
                 {"partitionId", msg["partitionId"]}}}}};
  auto rb = s.post("/api/v1/transaction", bad.dump());
  REQUIRE(rb.status == 200);
  CHECK(rb.body_json()["success"] == false);
  CHECK_THAT(rb.body_json()["error"].get<std::string>(),
             Catch::StartsWith("operations[1]"));
  CHECK(pop(s, "out2").header("x-spool-empty") == "no_partition");
}

TEST_CASE("a transaction's acks settle under the leases its requiredLeases "
          "names, as Queen's JS client sends them",
          "[system][http][transaction][queen-shape]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("in", 2)).status == 201);
  auto m = pop(s, "in", "batch=2").body_json();
  REQUIRE(m["messages"].size() == 2);
  auto lease = m["messages"][0]["leaseId"];
  auto ack_of = [&](const json& msg) {
    return json{{"type", "ack"},
                {"transactionId", msg["transactionId"]},
                {"partitionId", msg["partitionId"]},
                {"status", "completed"}};
  };
  auto first = ack_of(m["messages"][0]);
  // No lease anywhere: refused, nothing applied, and the answer still has
  // a transaction id.
  auto none
      = s.post("/api/v1/transaction", json{{"operations", {first}}}.dump())
            .body_json();
  CHECK(none["success"] == false);
  CHECK(none["error"]
        == "operations[0]: an ack in a transaction must name its lease");
  CHECK(none["transactionId"].get<std::string>().size() == 36);
  // A lease that is not the live one: refused.
  auto wrong
      = s.post("/api/v1/transaction", json{{"operations", {first}},
                                           {"requiredLeases", {"not-a-lease"}}}
                                          .dump())
            .body_json();
  CHECK(wrong["success"] == false);
  CHECK(wrong["error"] == "operations[0]: Invalid or expired lease");
  auto bad
      = s.post("/api/v1/transaction",
               json{{"operations", {first}}, {"requiredLeases", {1}}}.dump());
  CHECK(bad.status == 400);
  CHECK(bad.body_json()["error"] == "requiredLeases[0] must be a string");
  auto huge = s.post(
      "/api/v1/transaction",
      json{{"operations", {first}}, {"requiredLeases", {std::string(256, 'L')}}}
          .dump());
  CHECK(huge.status == 400);
  CHECK(huge.body_json()["error"] == "requiredLeases[0] must be 1..255 bytes");
  // The JS client's shape: leases at the body level, one per message.
  json txn = {
      {"operations",
       {first,
        ack_of(m["messages"][1]),
        {{"type", "push"}, {"items", {{{"queue", "out"}, {"payload", 1}}}}}}},
      {"requiredLeases", json::array()}};
  for (int i = 0; i < 1001; ++i) // one per message: repeats count once
    txn["requiredLeases"].push_back(lease);
  auto ok = s.post("/api/v1/transaction", txn.dump()).body_json();
  CHECK(ok["success"] == true);
  REQUIRE(ok["results"].size() == 3);
  CHECK(ok["results"][1]["success"] == true);
  // Both acked: the queue is empty, the pushed message is there.
  CHECK(pop(s, "in").status == 204);
  CHECK(pop(s, "out").status == 200);
}

TEST_CASE("the DLQ lists a dead letter with Queen's fields and requeues it",
          "[system][http][dlq][queen-shape]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("q", 1)).status == 201);
  auto m = pop(s, "q", "consumerGroup=g").body_json()["messages"][0];
  json ack = {{"transactionId", m["transactionId"]},
              {"partitionId", m["partitionId"]},
              {"leaseId", m["leaseId"]},
              {"consumerGroup", "g"},
              {"status", "dlq"},
              {"error", "boom"}};
  REQUIRE(s.post("/api/v1/ack", ack.dump()).body_json()[0]["dlq"] == true);
  auto list = s.get("/api/v1/dlq?queue=q&consumerGroup=g");
  REQUIRE(list.status == 200);
  auto j = list.body_json();
  CHECK(j["total"] == 1);
  REQUIRE(j["messages"].size() == 1);
  auto& d = j["messages"][0];
  CHECK(d["dlqId"].is_number_unsigned());
  CHECK(d["transactionId"] == m["transactionId"]);
  CHECK(d["partitionId"] == m["partitionId"]);
  CHECK(d["queue"] == "q");
  CHECK(d["partition"] == "Default");
  CHECK(d["consumerGroup"] == "g");
  CHECK(d["errorMessage"] == "boom");
  CHECK(d["data"] == m["data"]);
  CHECK(d["failedAt"].is_string());
  CHECK(j["pagination"]["limit"] == 100);
  auto rq = s.post("/api/v1/dlq/requeue", json{{"ids", {d["dlqId"]}}}.dump());
  REQUIRE(rq.status == 200);
  CHECK(rq.body_json()["requeued"] == 1);
  auto again = pop(s, "q", "consumerGroup=g").body_json();
  CHECK(again["messages"][0]["requeued"] == true);
  auto missing = s.del("/api/v1/dlq/999999");
  CHECK(missing.status == 404);
  CHECK(missing.body_json()["error"] == "DLQ entry not found: 999999");
}

TEST_CASE("health, readiness, CORS preflight, an unknown route and Queen's "
          "routes Spool cannot serve",
          "[system][http][ops]") {
  spoold_server s;
  auto h = s.get("/health");
  CHECK(h.status == 200);
  CHECK(h.body_json()["status"] == "healthy");
  CHECK(s.get("/health/ready").status == 200);
  CHECK(h.header("access-control-allow-origin") == "*");
  auto pre = s.request("OPTIONS", "/api/v1/push");
  CHECK(pre.status == 204);
  CHECK(pre.header("access-control-allow-methods").find("POST")
        != std::string::npos);
  auto unknown = s.get("/api/v1/nothing-here");
  CHECK(unknown.status == 404);
  CHECK(unknown.body_json()["error"]
        == "Unknown route: GET /api/v1/nothing-here");
  auto pg = s.get("/api/v1/analytics/postgres-stats");
  CHECK(pg.status == 501);
  CHECK_THAT(pg.body_json()["error"].get<std::string>(),
             Catch::StartsWith("Not supported by Spool: "));
  CHECK(s.post("/api/v1/system/maintenance", R"({"enabled":true})").status
        == 501);
}

TEST_CASE("the Prometheus page shows a partition's offsets, a group's exact "
          "lag, the counters and the store's map use",
          "[system][http][metrics]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("q", 3)).status == 201);
  auto m = pop(s, "q", "consumerGroup=g&batch=1").body_json();
  REQUIRE(m["messages"].size() == 1);
  json ack = {{"transactionId", m["messages"][0]["transactionId"]},
              {"partitionId", m["messages"][0]["partitionId"]},
              {"leaseId", m["messages"][0]["leaseId"]},
              {"consumerGroup", "g"}};
  REQUIRE(s.post("/api/v1/ack", ack.dump()).status == 200);
  REQUIRE(s.get("/metrics/prometheus").status == 200);
  auto value = [&](const std::string& series) { return s.metric(series); };
  CHECK(value(R"(spool_partition_last_offset{queue="q",partition="Default"})")
        == 2);
  CHECK(value(R"(spool_partition_watermark{queue="q",partition="Default"})")
        == 0);
  auto group = R"({queue="q",partition="Default",group="g"})";
  CHECK(value(std::string{"spool_group_committed_offset"} + group) == 0);
  CHECK(value(std::string{"spool_group_lag_messages"} + group) == 2);
  CHECK(value(std::string{"spool_group_lease_active"} + group) == 0);
  CHECK(value("spool_messages_pushed_total") == 3);
  CHECK(value("spool_messages_popped_total") == 1);
  CHECK(value("spool_acks_total") == 1);
  CHECK(value("spool_messages_acked_total") == 1);
  CHECK(value("spool_dead_letters_expired_total") == 0); // the node's, shown
  CHECK(value("spool_actor_restarts_total") == 0);
  // Timed per route; a 404 under unmatched, counted as an error.
  REQUIRE(s.get("/api/v1/nope").status == 404);
  CHECK(
      value(
          R"(spool_http_request_duration_seconds_count{route="POST /api/v1/push"})")
      == 1);
  CHECK(
      value(
          R"(spool_http_request_duration_seconds_bucket{route="POST /api/v1/push",le="+Inf"})")
      == 1);
  CHECK(value(R"(spool_http_request_errors_total{route="POST /api/v1/push"})")
        == 0);
  CHECK(value(R"(spool_http_request_errors_total{route="unmatched"})") == 1);
  auto map = value("spool_storage_map_bytes");
  auto used = value("spool_storage_map_used_bytes");
  CHECK(map > 0);
  CHECK(used > 0);
  CHECK(used <= map);
  CHECK(value("spool_storage_map_max_bytes") >= map);
  CHECK(value("spool_storage_bytes") > 0);
  CHECK(value("spool_process_resident_bytes") > 0);
  // One node has no slot series (cluster mode only).
  CHECK(s.get("/metrics/prometheus").body.find("spool_slot_")
        == std::string::npos);
}

TEST_CASE("promote on a node without --peers says it runs alone and changes "
          "nothing",
          "[system][http][cluster]") {
  spoold_server s;
  auto r = s.post("/api/v1/cluster/promote?slot=3", "");
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("runs alone"));
  CHECK(s.post("/api/v1/cluster/promote?slot=x", "").status == 400);
  REQUIRE(s.post("/api/v1/push", push_body("q", 1)).status == 201);
}

TEST_CASE("the status snapshots count each queue's retained messages as its "
          "queue-mode group stands on them, the dashboard series are 501",
          "[system][http][status][queen-shape]") {
  spoold_server s;
  REQUIRE(
      s.post("/api/v1/configure", R"({"queue":"q","namespace":"n","task":"t"})")
          .status
      == 200);
  REQUIRE(s.post("/api/v1/push", push_body("q", 5)).status == 201);
  REQUIRE(s.post("/api/v1/push", push_body("q", 2, "B")).status == 201);
  REQUIRE(s.post("/api/v1/push", push_body("other", 1)).status == 201);
  auto ack = [&](const json& m, int i, const char* status) {
    json a = {{"transactionId", m["messages"][i]["transactionId"]},
              {"partitionId", m["partitionId"]},
              {"leaseId", m["leaseId"]},
              {"status", status},
              {"error", "boom"}};
    REQUIRE(s.post("/api/v1/ack", a.dump()).status == 200);
  };
  // Queue mode (no consumerGroup) leases offsets 0..2 of Default, acks 0,
  // dead-letters 1: 2 completed, 3 pending of which 1 processing.
  auto d0 = s.get("/api/v1/pop/queue/q/partition/Default?batch=3").body_json();
  REQUIRE(d0["messages"].size() == 3);
  ack(d0, 0, "completed");
  ack(d0, 1, "dlq");
  // On B it leases 0..1 and acks 1 out of order: 1 completed, 1 pending
  // and processing.
  auto b0 = s.get("/api/v1/pop/queue/q/partition/B?batch=2").body_json();
  REQUIRE(b0["messages"].size() == 2);
  ack(b0, 1, "completed");

  auto list = s.get("/api/v1/status/queues?namespace=n");
  REQUIRE(list.status == 200);
  auto l = list.body_json();
  REQUIRE(l["queues"].size() == 1);
  auto& q = l["queues"][0];
  CHECK(q["name"] == "q");
  CHECK(q["namespace"] == "n");
  CHECK(q["task"] == "t");
  CHECK(q["partitions"] == 2);
  CHECK(q["messages"] == json{{"total", 7}, {"pending", 4}, {"processing", 2}});
  CHECK(l["pagination"] == json{{"limit", 100}, {"offset", 0}, {"total", 1}});
  // Newest first, as Queen lists them.
  auto all = s.get("/api/v1/status/queues").body_json()["queues"];
  REQUIRE(all.size() == 2);
  CHECK(all[0]["name"] == "other");
  auto second = s.get("/api/v1/status/queues?offset=1&limit=1").body_json();
  REQUIRE(second["queues"].size() == 1);
  CHECK(second["queues"][0]["name"] == "q");

  auto detail = s.get("/api/v1/status/queues/q");
  REQUIRE(detail.status == 200);
  auto d = detail.body_json();
  CHECK(d["queue"]["name"] == "q");
  CHECK(d["queue"]["config"]["leaseTime"].is_number());
  CHECK(d["queue"]["config"]["deadLetterQueue"].is_boolean());
  REQUIRE(d["partitions"].size() == 2);
  auto& def = d["partitions"][0];
  CHECK(def["name"] == "Default");
  CHECK(def["messages"]["total"] == 5);
  CHECK(def["messages"]["completed"] == 2);
  CHECK(def["messages"]["pending"] == 3);
  CHECK(def["messages"]["processing"] == 1);
  CHECK(def["cursor"]["committedOffset"] == 1);
  CHECK(def["cursor"]["totalConsumed"] == 2);
  CHECK(def["lastActivity"].is_string());
  auto& b = d["partitions"][1];
  CHECK(b["messages"]["completed"] == 1);
  CHECK(b["messages"]["pending"] == 1);
  CHECK(b["messages"]["processing"] == 1);
  CHECK(b["cursor"]["committedOffset"] == -1);
  auto& totals = d["totals"];
  CHECK(totals["messages"]["total"] == 7);
  CHECK(totals["messages"]["pending"] == 4);
  CHECK(totals["messages"]["deadLetter"] == 1);
  CHECK(totals["messages"]["failed"] == 0);
  CHECK(totals["completed"] == 3);
  CHECK(totals["deadLetter"] == 1);
  // A queue never popped in queue mode: no dead letters, all pending.
  auto o = s.get("/api/v1/status/queues/other").body_json();
  CHECK(o["totals"]["messages"]["pending"] == 1);
  CHECK(o["totals"]["messages"]["deadLetter"] == 0);
  CHECK(o["partitions"][0]["lastActivity"].is_null());
  auto missing = s.get("/api/v1/status/queues/nope");
  CHECK(missing.status == 404);
  CHECK(missing.body_json()["error"] == "Queue not found");

  for (auto* path :
       {"/api/v1/status", "/api/v1/status/analytics", "/api/v1/status/buffers",
        "/api/v1/status/queues/q/messages", "/api/v1/analytics/throughput"}) {
    auto r = s.get(path);
    CHECK(r.status == 501);
    CHECK_THAT(r.body_json()["error"].get<std::string>(),
               Catch::StartsWith("Not supported by Spool: "));
  }
}
