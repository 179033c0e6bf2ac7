// The product document (replay-and-subscription-modes.md) end to end over
// HTTP: its three routes with their exact statuses and messages, the pop's
// subscription parameters, its five practical recipes, and the timestamp
// seek's segment granularity. Test names say which rule.

#include <catch2/catch.hpp>

#include "system/http_fixture.hpp"

using namespace spool::test;

namespace {

json pop_json(spoold_server& s, const std::string& queue,
              const std::string& query) {
  auto r = s.get("/api/v1/pop/queue/" + queue + "?" + query);
  if (r.status == 204)
    return json{{"messages", json::array()},
                {"empty", r.header("x-spool-empty")}};
  REQUIRE(r.status == 200);
  return r.body_json();
}

std::vector<std::int64_t> offsets(const json& pop) {
  std::vector<std::int64_t> out;
  for (auto& m : pop["messages"])
    out.push_back(m["offset"].get<std::int64_t>());
  return out;
}

void ack_all(spoold_server& s, const json& pop, const std::string& group) {
  json acks = json::array();
  for (auto& m : pop["messages"])
    acks.push_back({{"transactionId", m["transactionId"]},
                    {"partitionId", m["partitionId"]},
                    {"leaseId", m["leaseId"]}});
  auto r = s.post(
      "/api/v1/ack/batch",
      json{{"consumerGroup", group}, {"acknowledgments", acks}}.dump());
  REQUIRE(r.status == 200);
  for (auto& it : r.body_json())
    REQUIRE(it["success"] == true);
}

std::string error_of(const http_response& r) {
  return r.body_json()["error"].get<std::string>();
}

/// An RFC 3339 time `seconds` from now.
std::string from_now(int seconds) {
  auto t = std::chrono::system_clock::now() + std::chrono::seconds{seconds};
  auto tt = std::chrono::system_clock::to_time_t(t);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&tt));
  return buf;
}

} // namespace

TEST_CASE("subscription update: the field is required (400 Missing "
          "subscriptionTimestamp in request body)",
          "[system][http][replay][subscription]") {
  spoold_server s;
  auto route = "/api/v1/consumer-groups/g/subscription";
  auto missing = s.post(route, "{}");
  CHECK(missing.status == 400);
  CHECK(error_of(missing) == "Missing subscriptionTimestamp in request body");
  auto empty = s.post(route, "");
  CHECK(empty.status == 400);
  CHECK(error_of(empty) == "Empty request body");
  auto bad = s.post(route, R"({"subscriptionTimestamp":"yesterday"})");
  CHECK(bad.status == 400);
  CHECK(error_of(bad) == "Invalid timestamp: yesterday");
  auto qm = s.post("/api/v1/consumer-groups/__QUEUE_MODE__/subscription",
                   R"({"subscriptionTimestamp":"2026-07-30T00:00:00Z"})");
  CHECK(qm.status == 400);
  CHECK(error_of(qm) == "Queue mode has no subscription");
}

TEST_CASE("subscription update: it updates every record of the group and "
          "moves no cursor",
          "[system][http][replay][subscription]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("a", 2)).status == 201);
  REQUIRE(s.post("/api/v1/push", push_body("b", 2)).status == 201);
  auto pa = pop_json(s, "a", "consumerGroup=g&batch=10");
  ack_all(s, pa, "g");
  pop_json(s, "b", "consumerGroup=g&batch=1&subscriptionMode=new");
  auto r = s.post("/api/v1/consumer-groups/g/subscription",
                  R"({"subscriptionTimestamp":"2026-07-30T00:00:00Z"})");
  REQUIRE(r.status == 200);
  auto j = r.body_json();
  CHECK(j["success"] == true);
  CHECK(j["consumerGroup"] == "g");
  CHECK(j["rowsUpdated"] == 2);
  CHECK(j["newTimestamp"] == "2026-07-30T00:00:00.000000Z");
  // No cursor moved: queue a stays consumed.
  CHECK(pop_json(s, "a", "consumerGroup=g")["messages"].empty());
  // A group without records: 0 rows.
  auto none = s.post("/api/v1/consumer-groups/nobody/subscription",
                     R"({"subscriptionTimestamp":"2026-07-30T00:00:00Z"})");
  CHECK(none.body_json()["rowsUpdated"] == 0);
}

TEST_CASE("per-queue seek: an empty body, no usable field and unparsable "
          "JSON are 400s, an unknown queue is 404 Queue not found or has no "
          "partitions",
          "[system][http][replay][seek]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("q", 1)).status == 201);
  auto route = "/api/v1/consumer-groups/g/queues/q/seek";
  auto empty = s.post(route, "");
  CHECK(empty.status == 400);
  CHECK(error_of(empty) == "Empty request body");
  auto neither = s.post(route, R"({"toEnd":false})");
  CHECK(neither.status == 400);
  CHECK(error_of(neither) == "Must specify toEnd=true or a timestamp");
  CHECK(error_of(s.post(route, "{}"))
        == "Must specify toEnd=true or a timestamp");
  auto garbage = s.post(route, R"({"toEnd": tru)");
  CHECK(garbage.status == 400);
  CHECK_THAT(error_of(garbage), Catch::StartsWith("Invalid JSON: "));
  auto bad_ts = s.post(route, R"({"timestamp":"2026-13-01T00:00:00Z"})");
  CHECK(bad_ts.status == 400);
  CHECK(error_of(bad_ts) == "Invalid timestamp: 2026-13-01T00:00:00Z");
  auto unknown = s.post("/api/v1/consumer-groups/g/queues/nope/seek",
                        R"({"toEnd":true})");
  CHECK(unknown.status == 404);
  CHECK(error_of(unknown) == "Queue not found or has no partitions");
  auto ok = s.post(route, R"({"toEnd":true})");
  REQUIRE(ok.status == 200);
  auto j = ok.body_json();
  CHECK(j["success"] == true);
  CHECK(j["consumerGroup"] == "g");
  CHECK(j["queueName"] == "q");
  CHECK(j["seekToEnd"] == true);
  CHECK(j["targetTimestamp"].is_null());
  CHECK(j["partitionsUpdated"] == 1);
}

TEST_CASE("per-queue seek: a queue that has no partitions is 404, not a "
          "successful no-op",
          "[system][http][replay][seek]") {
  spoold_server s;
  // A group's first pop on a queue that does not exist registers it and
  // answers empty; the queue still has no partitions.
  CHECK(s.get("/api/v1/pop/queue/later?consumerGroup=g").status == 204);
  auto r = s.post("/api/v1/consumer-groups/g/queues/later/seek",
                  R"({"toEnd":true})");
  CHECK(r.status == 404);
  CHECK(error_of(r) == "Queue not found or has no partitions");
}

TEST_CASE("per-partition seek: an empty body is toEnd and answers updated, "
          "an unknown partition is 404 Partition not found",
          "[system][http][replay][seek]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("q", 3, "p")).status == 201);
  auto r = s.post("/api/v1/consumer-groups/g/queues/q/partitions/p/seek", "");
  REQUIRE(r.status == 200);
  auto j = r.body_json();
  CHECK(j["success"] == true);
  CHECK(j["partitionName"] == "p");
  CHECK(j["updated"] == true);
  CHECK(j["committed"] == 2);
  CHECK(pop_json(s, "q", "consumerGroup=g")["messages"].empty());
  auto unknown
      = s.post("/api/v1/consumer-groups/g/queues/q/partitions/nope/seek", "");
  CHECK(unknown.status == 404);
  CHECK(error_of(unknown) == "Partition not found");
  // A timestamp per partition (Spool: the product document's body too).
  auto back = s.post("/api/v1/consumer-groups/g/queues/q/partitions/p/seek",
                     json{{"timestamp", from_now(-3600)}}.dump());
  REQUIRE(back.status == 200);
  CHECK(offsets(pop_json(s, "q", "consumerGroup=g&batch=10"))
        == std::vector<std::int64_t>{0, 1, 2});
}

TEST_CASE("pop parameters: an absent or empty consumerGroup is queue mode, "
          "whose subscription modes are ignored",
          "[system][http][replay][subscription-modes]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("q", 2)).status == 201);
  auto r = pop_json(s, "q", "consumerGroup=&subscriptionMode=new&batch=10");
  CHECK(r["consumerGroup"] == "__QUEUE_MODE__");
  CHECK(offsets(r) == std::vector<std::int64_t>{0, 1});
}

TEST_CASE("pop parameters: an unparsable subscriptionFrom is registration-"
          "time new, not an error",
          "[system][http][replay][subscription-modes]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("q", 2)).status == 201);
  auto r = s.get("/api/v1/pop/queue/q?consumerGroup=g&subscriptionFrom=soon");
  CHECK(r.status == 204);
  REQUIRE(s.post("/api/v1/push", push_body("q", 1, "Default", 2)).status
          == 201);
  CHECK(offsets(pop_json(s, "q", "consumerGroup=g&batch=10"))
        == std::vector<std::int64_t>{2});
}

TEST_CASE("pop parameters: subscriptionFrom as a timestamp starts at the "
          "first segment committed at or after it",
          "[system][http][replay][subscription-modes]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("q", 2)).status == 201);
  auto second = s.post("/api/v1/push", push_body("q", 2, "Default", 2));
  REQUIRE(second.status == 201);
  // The second push's commit time, read back from a browse.
  auto b = s.get("/api/v1/messages?queue=q&fromOffset=2").body_json();
  auto ts = b["messages"][0]["createdAt"].get<std::string>();
  auto r = pop_json(s, "q", "consumerGroup=g&batch=10&subscriptionFrom=" + ts);
  CHECK(offsets(r) == std::vector<std::int64_t>{2, 3});
}

TEST_CASE("recipe: reprocess the last hour for one group while another keeps "
          "its position",
          "[system][http][replay][recipe]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("events", 4)).status == 201);
  for (auto g : {"reporting", "billing"})
    ack_all(s,
            pop_json(s, "events", std::string{"batch=10&consumerGroup="} + g),
            g);
  auto r = s.post("/api/v1/consumer-groups/reporting/queues/events/seek",
                  json{{"timestamp", from_now(-3600)}}.dump());
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["partitionsUpdated"] == 1);
  CHECK(r.body_json()["targetTimestamp"].is_string());
  CHECK(offsets(pop_json(s, "events", "batch=10&consumerGroup=reporting"))
        == std::vector<std::int64_t>{0, 1, 2, 3});
  CHECK(pop_json(s, "events", "batch=10&consumerGroup=billing")["messages"]
            .empty());
}

TEST_CASE("recipe: skip a backlog you no longer care about with toEnd",
          "[system][http][replay][recipe]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("events", 5)).status == 201);
  REQUIRE(s.post("/api/v1/consumer-groups/late/queues/events/seek",
                 R"({"toEnd":true})")
              .status
          == 200);
  CHECK(
      pop_json(s, "events", "batch=10&consumerGroup=late")["messages"].empty());
  REQUIRE(s.post("/api/v1/push", push_body("events", 1, "Default", 5)).status
          == 201);
  CHECK(offsets(pop_json(s, "events", "batch=10&consumerGroup=late"))
        == std::vector<std::int64_t>{5});
}

TEST_CASE("recipe: a new consumer that must not see history pops with "
          "subscriptionMode=new on first contact",
          "[system][http][replay][recipe]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("events", 3)).status == 201);
  CHECK(s.get("/api/v1/pop/queue/events?consumerGroup=fresh&"
              "subscriptionMode=new")
            .status
        == 204);
  REQUIRE(s.post("/api/v1/push", push_body("events", 1, "Default", 3)).status
          == 201);
  CHECK(offsets(pop_json(s, "events", "batch=10&consumerGroup=fresh"))
        == std::vector<std::int64_t>{3});
  // Passing it again later changes nothing (seeding is first contact only).
  CHECK(
      pop_json(s, "events",
               "batch=10&consumerGroup=fresh&subscriptionMode=all")["messages"]
          .empty());
}

TEST_CASE("recipe: re-run a pipeline from scratch with a fresh group in mode "
          "all, without disturbing the existing one",
          "[system][http][replay][recipe]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("events", 3)).status == 201);
  ack_all(s, pop_json(s, "events", "batch=10&consumerGroup=v1"), "v1");
  CHECK(offsets(pop_json(s, "events",
                         "batch=10&consumerGroup=v2&subscriptionMode=all"))
        == std::vector<std::int64_t>{0, 1, 2});
  CHECK(pop_json(s, "events", "batch=10&consumerGroup=v1")["messages"].empty());
}

TEST_CASE("recipe: give up on a stuck batch: a seek releases the lease",
          "[system][http][replay][recipe]") {
  spoold_server s;
  REQUIRE(s.post("/api/v1/push", push_body("events", 2)).status == 201);
  auto stuck = pop_json(s, "events", "batch=10&consumerGroup=g");
  REQUIRE(stuck["messages"].size() == 2);
  CHECK(pop_json(s, "events", "consumerGroup=g")["empty"] == "lease_held");
  auto r = s.post("/api/v1/consumer-groups/g/queues/events/seek",
                  json{{"timestamp", from_now(-3600)}}.dump());
  REQUIRE(r.status == 200);
  auto again = pop_json(s, "events", "batch=10&consumerGroup=g");
  CHECK(offsets(again) == std::vector<std::int64_t>{0, 1});
  CHECK(again["leaseEpoch"].get<std::uint64_t>()
        > stuck["leaseEpoch"].get<std::uint64_t>());
  // A late ack of the abandoned batch fails.
  auto& m = stuck["messages"][0];
  json ack = {{"transactionId", m["transactionId"]},
              {"partitionId", m["partitionId"]},
              {"leaseId", m["leaseId"]},
              {"consumerGroup", "g"}};
  auto late = s.post("/api/v1/ack", ack.dump()).body_json();
  CHECK(late[0]["success"] == false);
  CHECK(late[0]["error"] == "Invalid or expired lease");
}

TEST_CASE("a timestamp seek is segment-granular: it lands on the base offset "
          "of the first segment committed at or after the timestamp",
          "[system][http][replay][seek]") {
  spoold_server s;
  // Two pushes, two segments: offsets 0..2 and 3..5.
  REQUIRE(s.post("/api/v1/push", push_body("q", 3)).status == 201);
  REQUIRE(s.post("/api/v1/push", push_body("q", 3, "Default", 3)).status
          == 201);
  auto b = s.get("/api/v1/messages?queue=q&limit=10").body_json();
  REQUIRE(b["messages"].size() == 6);
  auto first = b["messages"][1]["createdAt"].get<std::string>();
  auto second = b["messages"][4]["createdAt"].get<std::string>();
  CHECK(b["messages"][0]["createdAt"] == first); // one stamp per segment
  // At the first segment's own stamp: its whole segment, from its base.
  REQUIRE(s.post("/api/v1/consumer-groups/g/queues/q/seek",
                 json{{"timestamp", first}}.dump())
              .status
          == 200);
  CHECK(offsets(pop_json(s, "q", "batch=10&consumerGroup=g"))
        == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5});
  // At the second segment's stamp: never partway into a segment.
  REQUIRE(s.post("/api/v1/consumer-groups/h/queues/q/seek",
                 json{{"timestamp", second}}.dump())
              .status
          == 200);
  CHECK(offsets(pop_json(s, "q", "batch=10&consumerGroup=h"))
        == std::vector<std::int64_t>{3, 4, 5});
}
