// Consuming over the msgpack door against the real spoold: the compact
// pop answer and cumulative acks (`upTo`), docs/protocol.md and
// docs/consumption.md ("Cumulative acks"); HTTP takes `upTo` too.

#include <catch2/catch.hpp>

#include "system/mp_fixture.hpp"
#include "vocab/message_id.hpp"
#include "wire/rfc3339.hpp"

namespace spool::test {

TEST_CASE("a compact pop carries each partition's shared fields once and "
          "the same messages as the full shape",
          "[system][msgpack][compact]") {
  spoold_server srv;
  mp_conn c{srv.mp_port()};
  json items = json::array();
  items.push_back({{"queue", "q"},
                   {"partition", "a"},
                   {"payload", bin("x")},
                   {"traceId", "t-1"},
                   {"headers", {{"h", "v"}}}});
  items.push_back({{"queue", "q"}, {"partition", "a"}, {"payload", 7}});
  items.push_back({{"queue", "q"}, {"partition", "b"}, {"payload", bin("y")}});
  c.ok({{"op", "push"}, {"items", items}});
  auto pop = [&](const std::string& group, bool compact) {
    return c.ok({{"op", "pop"},
                 {"queue", "q"},
                 {"consumerGroup", group},
                 {"batch", 10},
                 {"partitions", 2},
                 {"compact", compact}});
  };
  auto full = pop("g-full", false);
  auto compact = pop("g-compact", true);
  REQUIRE(full["messages"].size() == 3);
  CHECK_FALSE(compact.contains("messages"));
  CHECK(compact["queue"] == "q");
  CHECK(compact["consumerGroup"] == "g-compact");
  CHECK(compact["partitionsClaimed"] == 2);
  auto& parts = compact["partitions"];
  REQUIRE(parts.size() == 2);
  std::size_t i = 0; // the full shape's messages, in the same order
  for (auto& p : parts) {
    CHECK(p["leaseId"].get<std::string>().size() == 36);
    CHECK(p["leaseEpoch"] == 1);
    for (auto& m : p["messages"]) {
      REQUIRE(i < full["messages"].size());
      auto& f = full["messages"][i++];
      INFO(f.dump());
      CHECK(p["partition"] == f["partition"]);
      CHECK(p["partitionId"] == f["partitionId"]);
      // The full shape's id, made per answer from the partition's hash:
      // right for every partition of the answer.
      CHECK(f["id"]
            == message_uuid(f["partitionId"].get<std::string>(),
                            f["offset"].get<std::int64_t>()));
      CHECK(m["offset"] == f["offset"]);
      CHECK(m["transactionId"] == f["transactionId"]);
      CHECK(m["data"] == f["data"]);
      CHECK(m["dataEncoding"] == f["dataEncoding"]);
      CHECK(m["deliveryCount"] == f["deliveryCount"]);
      // µs since the epoch: the full shape's RFC 3339 text of it.
      REQUIRE(m["createdAt"].is_number_integer());
      CHECK(timefmt::format_micros(m["createdAt"].get<std::int64_t>())
            == f["createdAt"]);
      // Empty fields are left out; others as in the full shape.
      CHECK(m.value("traceId", json{}) == f["traceId"]);
      CHECK(m.value("headers", json::object()) == f["headers"]);
      CHECK_FALSE(m.contains("producerSub"));
      CHECK_FALSE(m.contains("id"));
    }
  }
  CHECK(i == 3);
  CHECK(parts[0]["messages"][0]["traceId"] == "t-1");
  CHECK(parts[0]["messages"][0]["headers"] == json{{"h", "v"}});
  // autoAck: no lease, leaseId "" as in the full shape; committed at once.
  auto once = c.ok({{"op", "pop"},
                    {"queue", "q"},
                    {"partition", "b"},
                    {"consumerGroup", "g-auto"},
                    {"autoAck", true},
                    {"compact", true}});
  REQUIRE(once["partitions"].size() == 1);
  CHECK(once["partitions"][0]["leaseId"] == "");
  CHECK(once["partitions"][0]["partition"] == "b");
  CHECK(once["partitions"][0]["messages"].size() == 1);
  auto bad = c.call({{"op", "pop"}, {"queue", "q"}, {"compact", "yes"}});
  CHECK(code_of(bad) == "invalid_argument");
  CHECK(message_of(bad) == "compact must be a boolean");
}

TEST_CASE("a cumulative ack (upTo) settles a lease's frames up to an offset "
          "over msgpack and HTTP alike",
          "[system][msgpack][upto]") {
  spoold_server srv;
  mp_conn c{srv.mp_port()};
  for (int i = 0; i < 5; ++i)
    push_one(c, "q", bin("m" + std::to_string(i)));
  auto p = c.ok(
      {{"op", "pop"}, {"queue", "q"}, {"consumerGroup", "g"}, {"batch", 4}});
  REQUIRE(p["messages"].size() == 4);
  auto lease = p["leaseId"].get<std::string>();
  auto pid = p["partitionId"].get<std::string>();
  auto ack = [&](json item) {
    return c.call({{"op", "ack"},
                   {"consumerGroup", "g"},
                   {"acknowledgments", json::array({item})}});
  };
  auto committed = [&] {
    return c
        .ok({{"op", "groups"},
             {"consumerGroup", "g"}})["groups"][0]["committed"]
        .get<int>();
  };
  // Refusals name the field; nothing is settled.
  auto failed = ack({{"partitionId", pid},
                     {"leaseId", lease},
                     {"upTo", 1},
                     {"status", "failed"}});
  CHECK(code_of(failed) == "invalid_argument");
  CHECK(message_of(failed)
        == "acknowledgments[0].upTo completes frames: status must be "
           "completed");
  CHECK(message_of(ack({{"partitionId", pid}, {"upTo", 1}}))
        == "acknowledgments[0].leaseId is required with upTo");
  CHECK(message_of(ack({{"partitionId", pid},
                        {"leaseId", lease},
                        {"upTo", 1},
                        {"transactionId", "x"}}))
        == "acknowledgments[0].upTo names frames by itself: no "
           "transactionId or offset with it");
  CHECK(
      message_of(ack({{"partitionId", pid}, {"leaseId", lease}, {"upTo", "1"}}))
      == "acknowledgments[0].upTo must be an integer");
  CHECK(committed() == -1);
  // Item errors: another lease, an offset past the partition.
  auto other = ack({{"partitionId", pid}, {"leaseId", "nope"}, {"upTo", 1}});
  CHECK(other["items"][0]["error"] == "Invalid or expired lease");
  auto far = ack({{"partitionId", pid}, {"leaseId", lease}, {"upTo", 99}});
  CHECK(far["items"][0]["error"] == "Message not found");
  CHECK(committed() == -1);

  auto part = ack({{"partitionId", pid}, {"leaseId", lease}, {"upTo", 1}});
  REQUIRE(part["items"].size() == 1);
  CHECK(part["items"][0]["success"] == true);
  CHECK(part["items"][0]["leaseReleased"] == false);
  CHECK(committed() == 1);

  // The rest of the lease over HTTP; a repeat succeeds and changes nothing.
  json rest = {{"consumerGroup", "g"},
               {"acknowledgments",
                {{{"partitionId", pid}, {"leaseId", lease}, {"upTo", 3}}}}};
  auto h = srv.post("/api/v1/ack/batch", rest.dump());
  REQUIRE(h.status == 200);
  auto items = h.body_json();
  CHECK(items[0]["success"] == true);
  CHECK(items[0]["leaseReleased"] == true);
  CHECK(committed() == 3);
  auto again = srv.post("/api/v1/ack/batch", rest.dump()).body_json();
  CHECK(again[0]["success"] == false); // the lease it names has ended
  CHECK(again[0]["error"] == "Invalid or expired lease");
  CHECK(committed() == 3);
  // The counters: an item each, and the messages the items settled.
  CHECK(srv.metric("spool_acks_total") == 2);
  CHECK(srv.metric("spool_ack_failures_total") == 3); // other, far, again
  CHECK(srv.metric("spool_messages_acked_total") == 4);
  // The next pop starts after what was settled.
  auto next = c.ok(
      {{"op", "pop"}, {"queue", "q"}, {"consumerGroup", "g"}, {"batch", 4}});
  REQUIRE(next["messages"].size() == 1);
  CHECK(next["messages"][0]["offset"] == 4);
  // In a transaction: one that rolls back settles nothing, one that
  // commits settles the range with its push.
  auto lease2 = next["leaseId"].get<std::string>();
  json up_to_4 = {{"type", "ack"},
                  {"consumerGroup", "g"},
                  {"partitionId", pid},
                  {"leaseId", lease2},
                  {"upTo", 4}};
  auto rolled = c.call({{"op", "transaction"},
                        {"operations",
                         {up_to_4,
                          {{"type", "ack"},
                           {"consumerGroup", "g"},
                           {"transactionId", "nope"},
                           {"partitionId", pid}}}}});
  CHECK(code_of(rolled) == "tx_aborted");
  CHECK(committed() == 3);
  auto tx
      = c.ok({{"op", "transaction"},
              {"operations",
               {up_to_4,
                {{"type", "push"},
                 {"items", {{{"queue", "out"}, {"payload", bin("y")}}}}}}}});
  CHECK(tx["success"] == true);
  CHECK(committed() == 4);
}

} // namespace spool::test
