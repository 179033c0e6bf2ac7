// One message by partition and transactionId (Queen's message detail route)
// against the real spoold: a generated transactionId is the message id and
// finds its message, a client-given one is found through its index, and
// the answer says where each group stands.

#include <catch2/catch.hpp>

#include "system/http_fixture.hpp"

using namespace spool::test;

TEST_CASE("a message is found by partition and transactionId, generated or "
          "client-given, with its status per group",
          "[system][http][messages][queen-shape]") {
  spoold_server s;
  auto pushed
      = s.post(
             "/api/v1/push",
             R"({"items":[{"queue":"orders","payload":{"n":1}},)"
             R"({"queue":"orders","transactionId":"order 7","payload":{"n":2}}]})")
            .body_json();
  REQUIRE(pushed.size() == 2);
  std::string pid = pushed[0]["partition_id"];
  std::string generated = pushed[0]["transaction_id"];
  // Without a transactionId the message's id is its transactionId.
  CHECK(generated == pushed[0]["message_id"]);
  CHECK(pushed[1]["transaction_id"] == "order 7");
  // Browse names the message as the push did.
  auto b = s.get("/api/v1/messages?queue=orders").body_json();
  REQUIRE(b["messages"].size() == 2);
  CHECK(b["messages"][0]["id"] == pushed[0]["message_id"]);
  CHECK(b["messages"][0]["partitionId"] == pid);
  CHECK(b["messages"][0]["transactionId"] == generated);
  CHECK(b["messages"][1]["id"] == pushed[1]["message_id"]);

  auto detail = [&](const std::string& txid) {
    return s.get("/api/v1/messages/" + pid + "/" + txid);
  };
  auto d = detail(generated);
  REQUIRE(d.status == 200);
  auto j = d.body_json();
  CHECK(j["id"] == pushed[0]["message_id"]);
  CHECK(j["transactionId"] == generated);
  CHECK(j["partitionId"] == pid);
  CHECK(j["queue"] == "orders");
  CHECK(j["partition"] == "Default");
  CHECK(j["queuePath"] == "orders/Default");
  CHECK(j["offset"] == 0);
  CHECK(j["payload"] == nlohmann::json::parse(R"({"n":1})"));
  CHECK(j["data"] == j["payload"]);
  CHECK(j["status"] == "pending");
  CHECK(j["isEncrypted"] == false);
  CHECK(j["createdAt"].is_string());
  CHECK(j["queueConfig"]["leaseTime"] == 300); // the default
  CHECK(j["mode"]["type"] == "none");
  CHECK(j["consumerGroups"].empty());

  // Leased by a group: that group's entry is processing, the message pending
  // (with groups only, Queen's status waits for every group); acked:
  // completed, the cursor past it.
  auto p = s.get("/api/v1/pop/queue/orders?consumerGroup=billing&batch=1")
               .body_json();
  REQUIRE(p["messages"].size() == 1);
  j = detail(generated).body_json();
  CHECK(j["status"] == "pending");
  CHECK(j["mode"]["type"] == "bus");
  REQUIRE(j["consumerGroups"].size() == 1);
  CHECK(j["consumerGroups"][0]["name"] == "billing");
  CHECK(j["consumerGroups"][0]["processing"] == true);
  CHECK(j["consumerGroups"][0]["leaseExpiresAt"].is_string());
  auto ack = s.post("/api/v1/ack",
                    R"({"transactionId":")" + generated + R"(","partitionId":")"
                        + pid + R"(","consumerGroup":"billing","leaseId":")"
                        + p["leaseId"].get<std::string>() + R"("})");
  REQUIRE(ack.status == 200);
  j = detail(generated).body_json();
  CHECK(j["status"] == "completed");
  CHECK(j["mode"]["consumedByGroups"] == 1);
  CHECK(j["consumerGroups"][0]["consumed"] == true);
  CHECK(j["consumerGroups"][0]["committedOffset"] == 0);

  // The client's id, URL-encoded in the path; billing is not past it.
  d = detail("order%207");
  REQUIRE(d.status == 200);
  j = d.body_json();
  CHECK(j["offset"] == 1);
  CHECK(j["transactionId"] == "order 7");
  CHECK(j["status"] == "pending");

  auto unknown = detail("order-8");
  CHECK(unknown.status == 404);
  CHECK(unknown.body_json()["error"] == "Message not found");
  auto elsewhere = s.get(
      "/api/v1/messages/00000000-0000-4000-8000-000000000000/" + generated);
  CHECK(elsewhere.status == 404);
  CHECK(elsewhere.body_json()["error"] == "Partition not found");
  // A group that has consumed only another partition of the queue is
  // subscribed to the queue: it counts here, not past the message, so the
  // message is no longer completed.
  REQUIRE(
      s.post("/api/v1/push",
             R"({"items":[{"queue":"orders","partition":"p2","payload":3}]})")
          .status
      == 201);
  REQUIRE(
      s.get("/api/v1/pop/queue/orders/partition/p2?consumerGroup=other").status
      == 200);
  j = detail(generated).body_json();
  REQUIRE(j["consumerGroups"].size() == 2);
  CHECK(j["consumerGroups"][1]["name"] == "other");
  CHECK(j["consumerGroups"][1]["consumed"] == false);
  CHECK(j["mode"]["busGroupsCount"] == 2);
  CHECK(j["mode"]["consumedByGroups"] == 1);
  CHECK(j["status"] == "pending");

  // An id longer than any stored one is simply not found.
  auto long_id = detail(std::string(600, 'x'));
  CHECK(long_id.status == 404);
  CHECK(long_id.body_json()["error"] == "Message not found");

  // In queue mode the queue-mode cursor decides: leased, processing.
  auto q = s.get("/api/v1/pop/queue/orders?batch=1").body_json();
  REQUIRE(q["messages"].size() == 1);
  j = detail(generated).body_json();
  CHECK(j["status"] == "processing");
  CHECK(j["mode"]["hasQueueMode"] == true);
  CHECK(j["leaseExpiresAt"].is_string());
  // The second message lies outside that lease: still pending.
  CHECK(detail("order%207").body_json()["status"] == "pending");
}
