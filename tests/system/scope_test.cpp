// Tokens restricted to queues and groups (docs/security.md, "Tokens
// restricted to queues and groups"), against the real spoold on both
// doors: what a restricted token may do, what it is refused (403 for what
// it names, "not found" for ids of queues it may not use), and listings
// that show only what its claims cover.

#include <catch2/catch.hpp>

#include "auth_fixture.hpp"
#include "mp_fixture.hpp"
#include "protocol/api/router.hpp"

using namespace spool;
using namespace spool::test;
using json = nlohmann::json;

namespace {

/// An admin token restricted to queues starting `shop.orders` and to the
/// consumer group `billing`.
std::string restricted(const std::string& role = "admin") {
  return token(role, "scoped", 600, secret,
               R"("queues":["shop.orders"],"groups":["billing"])");
}

json push_json(const std::string& queue, int n) {
  return json{
      {"items", json::array({{{"queue", queue}, {"payload", {{"n", n}}}}})}};
}

json body_of(const http_response& r) {
  return r.body.empty() ? json::object() : json::parse(r.body);
}

/// Pushes one message to `queue` with the unrestricted admin token and
/// answers its partition id.
std::string seed(spoold_server& s, const std::string& queue, int n) {
  auto r = send(s, "POST", "/api/v1/push", token("admin"),
                push_json(queue, n).dump());
  REQUIRE(r.status == 201);
  return body_of(r)[0]["partition_id"].get<std::string>();
}

} // namespace

TEST_CASE("a token restricted to queues and groups uses those and is "
          "refused the others, with nothing stored",
          "[system][auth][scope]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  auto tok = restricted();
  auto other_partition = seed(s, "shop.payments", 1);
  // Pushes: a queue outside the claim is refused, even beside one inside.
  CHECK(send(s, "POST", "/api/v1/push", tok,
             push_json("shop.orders.eu", 1).dump())
            .status
        == 201);
  auto refused = send(s, "POST", "/api/v1/push", tok,
                      push_json("shop.payments", 2).dump());
  CHECK(refused.status == 403);
  CHECK(body_of(refused)["error"]
        == "Insufficient permissions: the token's queues claim does not "
           "cover queue shop.payments");
  json mixed = push_json("shop.orders.eu", 3);
  mixed["items"].push_back({{"queue", "elsewhere"}, {"payload", 4}});
  CHECK(send(s, "POST", "/api/v1/push", tok, mixed.dump()).status == 403);
  auto all = token("admin");
  CHECK(send(s, "GET", "/api/v1/resources/queues/elsewhere", all).status
        == 404);
  // Pops: its group only; queue mode is the group __QUEUE_MODE__.
  CHECK(send(s, "GET",
             "/api/v1/pop/queue/shop.payments?consumerGroup=billing"
             "&wait=false",
             tok)
            .status
        == 403);
  CHECK(
      send(s, "GET", "/api/v1/pop/queue/shop.orders.eu?wait=false", tok).status
      == 403);
  CHECK(send(s, "GET",
             "/api/v1/pop/queue/shop.orders.eu?consumerGroup=other&wait=false",
             tok)
            .status
        == 403);
  auto popped = send(
      s, "GET",
      "/api/v1/pop/queue/shop.orders.eu?consumerGroup=billing&wait=false", tok);
  REQUIRE(popped.status == 200);
  auto m = body_of(popped)["messages"][0];
  // Acks: an item of a queue outside the claim reads as an unknown one;
  // the others are applied.
  json acks = json::array({{{"transactionId", m["transactionId"]},
                            {"partitionId", m["partitionId"]},
                            {"leaseId", m["leaseId"]},
                            {"consumerGroup", "billing"},
                            {"status", "completed"}},
                           {{"transactionId", "x"},
                            {"partitionId", other_partition},
                            {"consumerGroup", "billing"},
                            {"status", "completed"}}});
  auto acked = send(s, "POST", "/api/v1/ack/batch", tok,
                    json{{"acknowledgments", acks}}.dump());
  REQUIRE(acked.status == 200);
  auto items = body_of(acked);
  CHECK(items[0]["success"] == true);
  CHECK(items[1]["success"] == false);
  CHECK(items[1]["error"] == "Message not found");
  // Extends: its own group's lease; another group's reads as unknown.
  send(s, "POST", "/api/v1/push", all, push_json("shop.orders.eu", 5).dump());
  auto own = body_of(
      send(s, "GET",
           "/api/v1/pop/queue/shop.orders.eu?consumerGroup=billing&wait=false",
           tok));
  auto theirs = body_of(send(
      s, "GET",
      "/api/v1/pop/queue/shop.orders.eu?consumerGroup=audit&wait=false", all));
  REQUIRE(own["messages"].size() == 1);
  REQUIRE(theirs["messages"].size() >= 1);
  auto extend = [&](const json& popped) {
    return body_of(send(s, "POST",
                        "/api/v1/lease/" + popped["leaseId"].get<std::string>()
                            + "/extend",
                        tok, R"({"seconds":30})"))[0];
  };
  CHECK(extend(own)["success"] == true);
  auto refused_extend = extend(theirs);
  CHECK(refused_extend["success"] == false);
  CHECK(refused_extend["error"] == "Lease not found");
  // A transaction acking there is rolled back as for an unknown partition.
  json txn{{"operations", json::array({{{"type", "ack"},
                                        {"transactionId", "x"},
                                        {"partitionId", other_partition},
                                        {"consumerGroup", "billing"}}})}};
  auto t = body_of(send(s, "POST", "/api/v1/transaction", tok, txn.dump()));
  CHECK(t["success"] == false);
  CHECK(t["error"] == "operations[0]: Message not found");
  // The message detail and the traces of such a message: unknown.
  auto detail
      = send(s, "GET", "/api/v1/messages/" + other_partition + "/x", tok);
  CHECK(detail.status == 404);
  CHECK(body_of(detail)["error"] == "Partition not found");
  // Seeks and configure name the queue and the group.
  CHECK(send(s, "POST",
             "/api/v1/consumer-groups/billing/queues/shop.payments/seek", tok,
             R"({"toEnd":true})")
            .status
        == 403);
  CHECK(send(s, "POST",
             "/api/v1/consumer-groups/other/queues/shop.orders.eu/seek", tok,
             R"({"toEnd":true})")
            .status
        == 403);
  CHECK(send(s, "POST",
             "/api/v1/consumer-groups/billing/queues/shop.orders.eu/seek", tok,
             R"({"toEnd":true})")
            .status
        == 200);
  // What acts on a whole queue needs no groups claim: every group's
  // messages and cursors are in it.
  auto queues_admin
      = token("admin", "q", 600, secret, R"("queues":["shop.orders"])");
  CHECK(
      send(s, "POST", "/api/v1/configure", queues_admin, R"({"queue":"nope"})")
          .status
      == 403);
  auto whole = send(s, "POST", "/api/v1/configure", tok,
                    R"({"queue":"shop.orders.us"})");
  CHECK(whole.status == 403);
  CHECK(body_of(whole)["error"]
        == "Insufficient permissions: this acts on every consumer group of "
           "the queue: it needs a token without a groups claim");
  auto made = send(s, "POST", "/api/v1/configure", queues_admin,
                   R"({"queue":"shop.orders.us"})");
  CHECK(made.status == 200);
  CHECK(body_of(made)["created"] == true);
  // What spans every queue or group is refused; the DLQ needs both named.
  CHECK(send(s, "GET", "/api/v1/traces/names", tok).status == 403);
  CHECK(send(s, "POST", "/api/v1/cluster/promote?all=true", tok).status == 403);
  CHECK(send(s, "GET", "/api/v1/dlq", tok).status == 403);
  CHECK(send(s, "GET", "/api/v1/dlq?queue=shop.orders.eu", tok).status == 403);
  CHECK(send(s, "GET", "/api/v1/dlq?queue=shop.orders.eu&consumerGroup=billing",
             tok)
            .status
        == 200);
  CHECK(send(s, "DELETE", "/api/v1/consumer-groups/billing", tok).status
        == 403);
  // Every refusal is in the audit log with what the claim left out.
  auto audit = keys.audit();
  CHECK(audit.find("403 queues claim: queue shop.payments")
        != std::string::npos);
  CHECK(audit.find("403 groups claim: group other") != std::string::npos);
  // Nothing of the refused requests was stored.
  auto listed = body_of(send(s, "GET", "/api/v1/resources/queues", all));
  for (auto& q : listed["queues"])
    CHECK(q["name"] != "elsewhere");
}

TEST_CASE("listings show a restricted token only what its claims cover, and "
          "a namespace pop serves only its queues",
          "[system][auth][scope]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  auto tok = restricted();
  seed(s, "shop.payments", 1);
  seed(s, "shop.orders", 2);
  // Both queues are in namespace shop; the pop serves shop.orders only.
  auto first = send(s, "GET",
                    "/api/v1/pop?namespace=shop&consumerGroup=billing&batch=5"
                    "&wait=false",
                    tok);
  REQUIRE(first.status == 200);
  auto got = body_of(first)["messages"];
  REQUIRE(got.size() == 1);
  CHECK(got[0]["queue"] == "shop.orders");
  auto again = send(s, "GET",
                    "/api/v1/pop?namespace=shop&consumerGroup=billing&batch=5"
                    "&wait=false",
                    tok);
  CHECK(again.status == 204); // shop.payments still waits, unseen
  // A group the claim leaves out is never listed, nor its queue.
  send(s, "GET",
       "/api/v1/pop/queue/shop.payments?consumerGroup=audit&wait=false",
       token("admin"));
  auto queues = body_of(send(s, "GET", "/api/v1/resources/queues", tok));
  REQUIRE(queues["queues"].size() == 1);
  CHECK(queues["queues"][0]["name"] == "shop.orders");
  CHECK(send(s, "GET", "/api/v1/resources/queues/shop.payments", tok).status
        == 403);
  auto groups = body_of(send(s, "GET", "/api/v1/consumer-groups", tok));
  std::string listed = groups.dump();
  CHECK(listed.find("shop.payments") == std::string::npos);
  CHECK(listed.find("audit") == std::string::npos);
  CHECK(listed.find("billing") != std::string::npos);
  // The status pages count queue mode's cursors: a token restricted to
  // queues alone sees them for its queues; one without queue mode in its
  // groups claim is refused them.
  auto queues_only
      = token("read-only", "q", 600, secret, R"("queues":["shop.orders"])");
  auto status = send(s, "GET", "/api/v1/status/queues", queues_only);
  REQUIRE(status.status == 200);
  CHECK(status.body.find("shop.payments") == std::string::npos);
  CHECK(status.body.find("shop.orders") != std::string::npos);
  CHECK(send(s, "GET", "/api/v1/status/queues", tok).status == 403);
}

TEST_CASE("every HTTP route naming a queue or group outside a token's claims "
          "is refused",
          "[system][auth][scope]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  auto tok = restricted();
  for (auto& r : api::all_routes()) {
    std::string pattern = r.pattern;
    bool names = pattern.find(":queue") != std::string::npos
                 || pattern.find(":group") != std::string::npos;
    if (!names)
      continue;
    // `authz-queue`, `authz-group`: outside both claims.
    std::string path;
    for (std::size_t at = 0; at < pattern.size();) {
      auto colon = pattern.find(':', at);
      if (colon == std::string::npos) {
        path += pattern.substr(at);
        break;
      }
      path += pattern.substr(at, colon - at);
      auto end = pattern.find('/', colon);
      auto name = pattern.substr(colon + 1, end == std::string::npos
                                                ? std::string::npos
                                                : end - colon - 1);
      path += "authz-" + name;
      at = end == std::string::npos ? pattern.size() : end;
    }
    // A body the route accepts, so that what answers is the claim.
    std::string body;
    if (pattern.ends_with("/seek"))
      body = R"({"toEnd":true})";
    else if (pattern.ends_with("/subscription"))
      body = R"({"subscriptionTimestamp":"2026-01-01T00:00:00Z"})";
    CAPTURE(r.method, pattern, path);
    auto got = send(s, r.method, path + "?wait=false", tok, body);
    // 501: a Queen route Spool answers as not built, before the node.
    CHECK((got.status == 403 || got.status == 501));
  }
}

TEST_CASE("a msgpack connection with a restricted token is held to its "
          "claims",
          "[system][auth][scope]") {
  keys_dir keys;
  spoold_server s{keys.args()};
  seed(s, "shop.payments", 1);
  mp_conn c{s.mp_port(), false};
  REQUIRE(c.call({{"op", "hello"}, {"version", 1}, {"token", restricted()}})
              .value("ok", false));
  auto refused = c.call(
      {{"op", "push"},
       {"items", json::array({{{"queue", "shop.payments"}, {"payload", 1}}})}});
  CHECK(code_of(refused) == "forbidden");
  auto ok = c.call(
      {{"op", "push"},
       {"items", json::array({{{"queue", "shop.orders.x"}, {"payload", 1}}})}});
  CHECK(ok.value("ok", false));
  auto qs = c.call({{"op", "queues"}});
  REQUIRE(qs.value("ok", false));
  REQUIRE(qs["queues"].size() == 1);
  CHECK(qs["queues"][0]["name"] == "shop.orders.x");
  CHECK(code_of(c.call(
            {{"op", "pop"}, {"queue", "shop.orders.x"}, {"wait", false}}))
        == "forbidden"); // queue mode
  auto popped = c.call({{"op", "pop"},
                        {"queue", "shop.orders.x"},
                        {"consumerGroup", "billing"},
                        {"wait", false}});
  REQUIRE(popped.value("ok", false));
  CHECK(popped["messages"].size() == 1);
  CHECK(code_of(c.call({{"op", "promote"}, {"all", true}})) == "forbidden");
}
