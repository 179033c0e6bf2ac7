// The msgpack door against the real spoold (api.md, last section;
// docs/protocol.md): hello, every op's happy path and its errors, payloads
// as bin, and the same answers as HTTP.

#include <catch2/catch.hpp>

#include "system/mp_fixture.hpp"

namespace spool::test {

TEST_CASE("msgpack hello states the protocol version, the ops and the limits, "
          "and comes first",
          "[system][msgpack]") {
  spoold_server srv;
  mp_conn raw{srv.mp_port(), false};
  auto before = raw.call({{"op", "health"}});
  CHECK(code_of(before) == "bad_request");
  CHECK(message_of(before) == "hello must be the first request");
  auto wrong = raw.call({{"op", "hello"}, {"version", 2}});
  CHECK(code_of(wrong) == "invalid_argument");
  CHECK(message_of(wrong)
        == "protocol version 2 is not supported (this server speaks 1)");
  CHECK(code_of(raw.call({{"op", "hello"}})) == "invalid_argument");
  auto hi = raw.ok({{"op", "hello"}, {"version", 1}});
  CHECK(hi["protocol"] == 1);
  CHECK(hi["server"] == "spool");
  CHECK(hi["maxFrameBytes"] == 64u << 20);
  CHECK(hi["maxInFlight"] == 1024);
  auto ops = hi["ops"].get<std::vector<std::string>>();
  for (auto op :
       {"push", "pop", "ack", "extend", "seek", "subscription", "configure",
        "transaction", "queues", "delete_queue", "groups", "delete_group",
        "dlq", "dlq_requeue", "dlq_delete", "browse", "health"})
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
  auto features = hi["features"].get<std::vector<std::string>>();
  for (auto f : {"cumulative_ack", "compact_pop"})
    CHECK(std::find(features.begin(), features.end(), f) != features.end());
  auto health = raw.ok({{"op", "health"}});
  CHECK(health["status"] == "healthy");
  CHECK(health["state"] == "ready");
  auto unknown = raw.call({{"op", "nope"}});
  CHECK(code_of(unknown) == "unknown_op");
  CHECK(message_of(unknown) == "Unknown op: nope");
}

TEST_CASE("msgpack push and pop carry bin payloads, a structured payload is "
          "JSON to HTTP consumers and back",
          "[system][msgpack]") {
  spoold_server srv;
  mp_conn c{srv.mp_port()};
  std::string bytes{"\x00\x01\xff binary", 10};
  auto pushed = push_one(c, "q", bin(bytes));
  REQUIRE(pushed["items"].size() == 1);
  CHECK(pushed["items"][0]["status"] == "queued");
  CHECK(pushed["items"][0]["offset"] == 0);
  push_one(c, "q", {{"a", 1}, {"b", {true, nullptr, "x"}}});
  srv.post("/api/v1/push", push_body("q", 1)); // {"n":0} over HTTP

  auto popped = c.ok({{"op", "pop"}, {"queue", "q"}, {"batch", 10}});
  auto& msgs = popped["messages"];
  REQUIRE(msgs.size() == 3);
  CHECK(text_of(msgs[0]["data"]) == bytes);
  CHECK(msgs[0]["dataEncoding"] == "binary");
  CHECK(text_of(msgs[1]["data"]) == R"({"a":1,"b":[true,null,"x"]})");
  CHECK(msgs[1]["dataEncoding"] == "json");
  CHECK(text_of(msgs[2]["data"]) == R"({"n":0})");
  CHECK(msgs[2]["dataEncoding"] == "json");
  CHECK(popped["leaseId"].get<std::string>().size() > 0);
  CHECK(msgs[0]["deliveryCount"] == 1);

  // The same messages over HTTP: bytes as base64, JSON as JSON.
  auto browse = srv.get("/api/v1/messages?queue=q").body_json();
  CHECK(browse["messages"][0]["dataEncoding"] == "base64");
  CHECK(browse["messages"][1]["data"]
        == json{{"a", 1}, {"b", {true, nullptr, "x"}}});

  auto empty = c.ok({{"op", "pop"}, {"queue", "q"}});
  CHECK(empty["messages"].empty());
  CHECK(empty["empty"] == "lease_held");
}

TEST_CASE("msgpack ack, extend and a group's cursor: per-item outcomes stay "
          "ok, request errors carry api.md's codes and texts",
          "[system][msgpack]") {
  spoold_server srv;
  mp_conn c{srv.mp_port()};
  for (int i = 0; i < 3; ++i)
    push_one(c, "q", bin("m" + std::to_string(i)));
  auto p = c.ok(
      {{"op", "pop"}, {"queue", "q"}, {"consumerGroup", "g"}, {"batch", 2}});
  auto& m = p["messages"];
  REQUIRE(m.size() == 2);
  auto lease = p["leaseId"].get<std::string>();
  auto ext = c.ok({{"op", "extend"}, {"leaseId", lease}, {"seconds", 30}});
  CHECK(ext["items"][0]["success"] == true);
  CHECK(ext["items"][0]["expiresAt"].is_string());
  auto ext_bad = c.ok({{"op", "extend"}, {"leaseId", "nope"}});
  CHECK(ext_bad["items"][0]["success"] == false);
  CHECK(ext_bad["items"][0]["error"] == "Lease not found");
  CHECK(code_of(c.call({{"op", "extend"}})) == "invalid_argument");
  CHECK(message_of(c.call({{"op", "extend"}})) == "leaseId is required");

  auto acked = c.ok(
      {{"op", "ack"},
       {"consumerGroup", "g"},
       {"acknowledgments",
        {{{"transactionId", m[0]["transactionId"]},
          {"partitionId", m[0]["partitionId"]},
          {"leaseId", lease}},
         {{"transactionId", "nope"}, {"partitionId", m[0]["partitionId"]}}}}});
  REQUIRE(acked["items"].size() == 2);
  CHECK(acked["items"][0]["success"] == true);
  CHECK(acked["items"][0]["queueName"] == "q");
  CHECK(acked["items"][1]["success"] == false);
  CHECK(acked["items"][1]["error"].is_string());
  CHECK(c.ok({{"op", "ack"}, {"acknowledgments", json::array()}})["items"]
            .empty());
  auto bad = c.call(
      {{"op", "ack"},
       {"acknowledgments", {{{"transactionId", 5}, {"partitionId", "x"}}}}});
  CHECK(code_of(bad) == "invalid_argument");
  CHECK(message_of(bad) == "acknowledgments[0].transactionId must be a string");
  CHECK(message_of(c.call({{"op", "ack"}}))
        == "acknowledgments array is required");

  auto groups = c.ok({{"op", "groups"}, {"consumerGroup", "g"}});
  REQUIRE(groups["groups"].size() == 1);
  auto& v = groups["groups"][0];
  CHECK(v["consumerGroup"] == "g");
  CHECK(v["queue"] == "q");
  CHECK(v["partition"] == "Default");
  CHECK(v["committed"] == 0);
  CHECK(v["lastOffset"] == 2);
  CHECK(v["offsetLag"] == 2);
  CHECK(v["leaseActive"] == true);
  CHECK(v["lease"]["first"] == 0);
  CHECK(v["lease"]["last"] == 1);
  CHECK(v["inFlight"] == 1);
  // The same cursor over HTTP.
  auto http = srv.get("/api/v1/consumer-groups/g").body_json();
  CHECK(http["q"]["partitions"][0]["committed"] == 0);
  CHECK(http["q"]["partitions"][0]["offsetLag"] == 2);

  auto del = c.ok({{"op", "delete_group"}, {"consumerGroup", "g"}});
  CHECK(del["success"] == true);
  CHECK(del["deletedPartitions"] == 1);
  CHECK(c.ok({{"op", "groups"}, {"consumerGroup", "g"}})["groups"].empty());
  CHECK(message_of(c.call({{"op", "delete_group"}}))
        == "consumerGroup is required");
  CHECK(message_of(c.call({{"op", "groups"}, {"partition", "p"}}))
        == "partition needs queue");
}

TEST_CASE("msgpack seek and subscription move a group as the product "
          "document's routes do, with the dry run's before and after",
          "[system][msgpack][replay]") {
  spoold_server srv;
  mp_conn c{srv.mp_port()};
  for (int i = 0; i < 4; ++i)
    push_one(c, "q", i);
  auto dry = c.ok({{"op", "seek"},
                   {"consumerGroup", "g"},
                   {"queue", "q"},
                   {"toEnd", true},
                   {"dryRun", true}});
  CHECK(dry["success"] == true);
  CHECK(dry["seekToEnd"] == true);
  CHECK(dry["dryRun"] == true);
  REQUIRE(dry["positions"].size() == 1);
  CHECK(dry["positions"][0]["committed"] == 3);
  auto one = c.ok({{"op", "seek"},
                   {"consumerGroup", "g"},
                   {"queue", "q"},
                   {"partition", "Default"},
                   {"offset", 2}});
  CHECK(one["partitionName"] == "Default");
  CHECK(one["updated"] == true);
  CHECK(one["committed"] == 1);
  auto p = c.ok({{"op", "pop"},
                 {"queue", "q"},
                 {"consumerGroup", "g"},
                 {"batch", 10},
                 {"autoAck", true}});
  REQUIRE(p["messages"].size() == 2);
  CHECK(p["messages"][0]["offset"] == 2);
  CHECK(p["leaseId"] == "");
  auto none = c.call({{"op", "seek"}, {"consumerGroup", "g"}, {"queue", "q"}});
  CHECK(code_of(none) == "invalid_argument");
  CHECK(message_of(none) == "Must specify toEnd=true or a timestamp");
  auto bad_ts = c.call({{"op", "seek"},
                        {"consumerGroup", "g"},
                        {"queue", "q"},
                        {"timestamp", "yesterday"}});
  CHECK(message_of(bad_ts) == "Invalid timestamp: yesterday");
  auto unknown = c.call({{"op", "seek"},
                         {"consumerGroup", "g"},
                         {"queue", "zz"},
                         {"toEnd", true}});
  CHECK(code_of(unknown) == "not_found");
  CHECK(message_of(unknown) == "Queue not found or has no partitions");
  // spool_seeks_total counts the one seek that moved, not the dry run nor
  // the refusals; an HTTP seek counts too, its dry run does not.
  CHECK(srv.metric("spool_seeks_total") == 1);
  REQUIRE(
      srv.post("/api/v1/consumer-groups/g/queues/q/seek", R"({"toStart":true})")
          .status
      == 200);
  REQUIRE(srv.post("/api/v1/consumer-groups/g/queues/q/seek?dryRun=true",
                   R"({"toEnd":true})")
              .status
          == 200);
  CHECK(srv.metric("spool_seeks_total") == 2);

  auto sub = c.ok({{"op", "subscription"},
                   {"consumerGroup", "g"},
                   {"subscriptionTimestamp", "2020-01-01T00:00:00Z"}});
  CHECK(sub["success"] == true);
  CHECK(sub["newTimestamp"] == "2020-01-01T00:00:00.000000Z");
  CHECK(message_of(c.call({{"op", "subscription"}, {"consumerGroup", "g"}}))
        == "Missing subscriptionTimestamp in request body");
  CHECK(message_of(c.call({{"op", "subscription"},
                           {"consumerGroup", "__QUEUE_MODE__"},
                           {"subscriptionTimestamp", "2020-01-01T00:00:00Z"}}))
        == "Queue mode has no subscription");
}

TEST_CASE("msgpack configure, queues, purge, browse and delete_queue",
          "[system][msgpack]") {
  spoold_server srv;
  mp_conn c{srv.mp_port()};
  auto conf = c.ok({{"op", "configure"},
                    {"queue", "q"},
                    {"namespace", "ns"},
                    {"options", {{"leaseTime", 5}, {"bogus", 1}}}});
  CHECK(conf["configured"] == true);
  CHECK(conf["created"] == true);
  CHECK(conf["options"]["leaseTime"] == 5);
  CHECK(conf["warnings"][0] == "unknown option ignored: bogus");
  CHECK(message_of(c.call({{"op", "configure"}})) == "queue is required");
  CHECK(message_of(c.call({{"op", "configure"},
                           {"queue", "q"},
                           {"options", {{"leaseTime", "x"}}}}))
        == "options.leaseTime must be an integer");
  for (int i = 0; i < 5; ++i)
    push_one(c, "q", bin(std::string(3, static_cast<char>('a' + i))), "p1");
  auto qs = c.ok({{"op", "queues"}, {"queue", "q"}});
  REQUIRE(qs["queues"].size() == 1);
  auto& q = qs["queues"][0];
  CHECK(q["name"] == "q");
  CHECK(q["namespace"] == "ns");
  CHECK(q["options"]["leaseTime"] == 5);
  auto parts = q["partitions"];
  auto p1 = std::find_if(parts.begin(), parts.end(),
                         [](auto& p) { return p["name"] == "p1"; });
  REQUIRE(p1 != parts.end());
  CHECK((*p1)["lastOffset"] == 4);
  CHECK(c.ok({{"op", "queues"}})["queues"].size() == 1);
  auto missing = c.call({{"op", "queues"}, {"queue", "zz"}});
  CHECK(code_of(missing) == "not_found");

  auto b = c.ok({{"op", "browse"},
                 {"queue", "q"},
                 {"partition", "p1"},
                 {"fromOffset", 1},
                 {"limit", 2}});
  REQUIRE(b["messages"].size() == 2);
  CHECK(text_of(b["messages"][0]["data"]) == "bbb");
  CHECK(b["next"] == 3);
  CHECK(message_of(c.call({{"op", "browse"}, {"queue", "q"}, {"limit", 0}}))
        == "limit must be 1..10000");
  CHECK(message_of(c.call({{"op", "browse"}})) == "queue is required");

  auto purged = c.ok(
      {{"op", "purge"}, {"queue", "q"}, {"partition", "p1"}, {"below", 3}});
  CHECK(purged["partitionsPurged"] == 1);
  auto after = c.ok({{"op", "browse"}, {"queue", "q"}, {"partition", "p1"}});
  CHECK(after["messages"][0]["offset"] == 3);

  auto del = c.ok({{"op", "delete_queue"}, {"queue", "q"}});
  CHECK(del["deleted"] == true);
  CHECK(del["existed"] == true);
  CHECK(c.ok({{"op", "delete_queue"}, {"queue", "q"}})["existed"] == false);
  CHECK(message_of(c.call({{"op", "delete_queue"}})) == "queue is required");
}

TEST_CASE("msgpack transaction, dlq, dlq_requeue and dlq_delete, HTTP sees "
          "the same dead letters",
          "[system][msgpack][dlq]") {
  spoold_server srv;
  mp_conn c{srv.mp_port()};
  push_one(c, "in", bin("x"));
  auto p = c.ok({{"op", "pop"}, {"queue", "in"}});
  auto& m = p["messages"][0];
  auto tx
      = c.ok({{"op", "transaction"},
              {"operations",
               {{{"type", "ack"},
                 {"transactionId", m["transactionId"]},
                 {"partitionId", m["partitionId"]},
                 {"leaseId", p["leaseId"]}},
                {{"type", "push"},
                 {"items", {{{"queue", "out"}, {"payload", bin("y")}}}}}}}});
  CHECK(tx["success"] == true);
  REQUIRE(tx["results"].size() == 2);
  CHECK(tx["results"][1]["type"] == "push");
  auto rolled = c.call({{"op", "transaction"},
                        {"operations",
                         {{{"type", "push"}, {"queue", "out2"}, {"payload", 1}},
                          {{"type", "ack"},
                           {"transactionId", "nope"},
                           {"partitionId", m["partitionId"]}}}}});
  CHECK(code_of(rolled) == "tx_aborted");
  CHECK(message_of(rolled).rfind("operations[1]", 0) == 0);
  CHECK(c.ok({{"op", "queues"}, {"queue", "out"}})["queues"].size() == 1);
  CHECK(code_of(c.call({{"op", "queues"}, {"queue", "out2"}})) == "not_found");
  CHECK(message_of(c.call({{"op", "transaction"}}))
        == "operations array required");

  auto o = c.ok({{"op", "pop"}, {"queue", "out"}, {"consumerGroup", "g"}});
  auto& om = o["messages"][0];
  auto dead = c.ok({{"op", "ack"},
                    {"consumerGroup", "g"},
                    {"acknowledgments",
                     {{{"transactionId", om["transactionId"]},
                       {"partitionId", om["partitionId"]},
                       {"leaseId", o["leaseId"]},
                       {"status", "dlq"},
                       {"error", "boom"}}}}});
  CHECK(dead["items"][0]["dlq"] == true);
  auto list = c.ok({{"op", "dlq"}, {"queue", "out"}, {"consumerGroup", "g"}});
  CHECK(list["total"] == 1);
  auto& d = list["messages"][0];
  CHECK(d["errorMessage"] == "boom");
  CHECK(text_of(d["data"]) == "y");
  CHECK(list["pagination"]["limit"] == 100);
  auto http = srv.get("/api/v1/dlq?queue=out&consumerGroup=g").body_json();
  CHECK(http["total"] == 1);
  CHECK(http["messages"][0]["dlqId"] == d["dlqId"]);
  auto rq = c.ok({{"op", "dlq_requeue"}, {"ids", {d["dlqId"]}}});
  CHECK(rq["requeued"] == 1);
  auto again = c.ok({{"op", "pop"}, {"queue", "out"}, {"consumerGroup", "g"}});
  CHECK(again["messages"][0]["requeued"] == true);
  CHECK(message_of(c.call({{"op", "dlq_delete"}}))
        == "ids or queue is required");
  auto gone = c.call({{"op", "dlq_delete"}, {"ids", {999999}}});
  CHECK(code_of(gone) == "not_found");
  CHECK(message_of(c.call({{"op", "dlq"}, {"limit", 0}}))
        == "limit must be 1..10000");
}

TEST_CASE("msgpack push refusals: a missing queue, a bad name, a payload JSON "
          "cannot hold, nothing of the request is stored",
          "[system][msgpack]") {
  spoold_server srv;
  mp_conn c{srv.mp_port()};
  auto no_queue = c.call({{"op", "push"}, {"items", {{{"payload", 1}}}}});
  CHECK(code_of(no_queue) == "invalid_argument");
  CHECK(message_of(no_queue) == "items[0].queue is required");
  CHECK(message_of(c.call({{"op", "push"}})) == "items array is required");
  auto bad_name = c.call(
      {{"op", "push"}, {"items", {{{"queue", "a/b"}, {"payload", 1}}}}});
  CHECK(code_of(bad_name) == "invalid_argument");
  // A bin nested in a structure cannot become JSON: refused whole.
  auto nested = c.call({{"op", "push"},
                        {"items",
                         {{{"queue", "ok"}, {"payload", 1}},
                          {{"queue", "ok"}, {"payload", {{"k", bin("x")}}}}}}});
  CHECK(code_of(nested) == "invalid_argument");
  CHECK(message_of(nested)
        == "items[1].payload.k must be bin, or a value JSON can hold");
  auto nan
      = c.call({{"op", "push"},
                {"items",
                 {{{"queue", "ok"},
                   {"payload", std::numeric_limits<double>::quiet_NaN()}}}}});
  CHECK(message_of(nan)
        == "items[0].payload must be a finite number (JSON has no NaN)");
  CHECK(c.ok({{"op", "queues"}})["queues"].empty());
  CHECK(c.ok({{"op", "push"}, {"items", json::array()}})["items"].empty());
}

TEST_CASE(
    "msgpack refusals of pop and purge and dlq_requeue carry the HTTP door's "
    "codes and texts",
    "[system][msgpack]") {
  spoold_server srv{{"--pop-max-parked", "1"}};
  mp_conn c{srv.mp_port()};
  auto none = c.call({{"op", "pop"}});
  CHECK(code_of(none) == "invalid_argument");
  CHECK(message_of(none) == "queue or namespace is required");
  auto batch = c.call({{"op", "pop"}, {"queue", "q"}, {"batch", 0}});
  CHECK(code_of(batch) == "invalid_argument");
  CHECK(message_of(batch).rfind("batch must be between 1 and", 0) == 0);
  auto typed = c.call({{"op", "pop"}, {"queue", "q"}, {"wait", "yes"}});
  CHECK(message_of(typed) == "wait must be a boolean");
  CHECK(
      message_of(c.call({{"op", "pop"}, {"queue", "q"}, {"consumerGroup", 7}}))
      == "consumerGroup must be a string");
  // One parked pop is the cap: the second is refused, with when to retry.
  auto parked = c.send(
      {{"op", "pop"}, {"queue", "q"}, {"wait", true}, {"timeout", 5000}});
  // Parked in the node (in flight is not yet parked: a second pop could
  // still park first).
  REQUIRE(srv.metric_becomes("spool_pops_parked", 1));
  auto busy = c.call(
      {{"op", "pop"}, {"queue", "q"}, {"wait", true}, {"timeout", 5000}});
  CHECK(code_of(busy) == "unavailable");
  CHECK(busy["retryAfterMs"] == 1000);
  c.ok({{"op", "push"}, {"items", {{{"queue", "q"}, {"payload", 1}}}}});
  CHECK(c.answer(parked)["messages"].size() == 1);
  auto purge = c.call({{"op", "purge"}, {"queue", "nope"}});
  CHECK(code_of(purge) == "not_found");
  CHECK(message_of(c.call({{"op", "purge"}})) == "queue is required");
  auto requeue = c.call({{"op", "dlq_requeue"}, {"ids", {424242}}});
  CHECK(code_of(requeue) == "not_found");
  CHECK(message_of(c.call({{"op", "dlq_requeue"}, {"ids", {"x"}}}))
        == "ids[0] must be a non-negative integer");
}

TEST_CASE("msgpack requests are timed per op on the Prometheus page, error "
          "answers counted apart",
          "[system][msgpack][metrics]") {
  spoold_server srv;
  mp_conn c{srv.mp_port()}; // hello: one
  for (int i = 0; i < 3; ++i)
    c.ok({{"op", "push"}, {"items", {{{"queue", "q"}, {"payload", i}}}}});
  CHECK(code_of(c.call({{"op", "pop"}})) == "invalid_argument");
  c.ok({{"op", "pop"}, {"queue", "q"}, {"batch", 3}});
  CHECK(code_of(c.call({{"op", "nope"}})) == "unknown_op");
  auto count = [&](const char* op) {
    return srv.metric(std::string{"spool_msgpack_request_duration_seconds_"
                                  "count{op=\""}
                      + op + "\"}");
  };
  auto errors = [&](const char* op) {
    return srv.metric(std::string{"spool_msgpack_request_errors_total{op=\""}
                      + op + "\"}");
  };
  CHECK(count("hello") == 1);
  CHECK(count("push") == 3);
  CHECK(errors("push") == 0);
  CHECK(count("pop") == 2);
  CHECK(errors("pop") == 1);
  CHECK(count("unknown") == 1);
  CHECK(errors("unknown") == 1);
  CHECK(count("ack") == 0);
  // Every answer lands in the histogram's last bucket.
  CHECK(
      srv.metric(
          R"(spool_msgpack_request_duration_seconds_bucket{op="push",le="+Inf"})")
      == 3);
}

} // namespace spool::test
