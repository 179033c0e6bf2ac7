// The msgpack door against the real spoold (api.md, last section;
// docs/protocol.md): hello, every op's happy path and its errors, payloads
// as bin, and the same answers as HTTP.

#include <catch2/catch.hpp>

#include "system/mp_fixture.hpp"

namespace spool::test {

namespace {

json push_one(mp_conn& c, const std::string& queue, json payload,
              const std::string& partition = "Default") {
  return c.ok({{"op", "push"},
               {"items",
                {{{"queue", queue},
                  {"partition", partition},
                  {"payload", std::move(payload)}}}}});
}

} // namespace

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
  auto health = raw.ok({{"op", "health"}});
  CHECK(health["status"] == "healthy");
  CHECK(health["state"] == "ready");
  auto unknown = raw.call({{"op", "nope"}});
  CHECK(code_of(unknown) == "unknown_op");
  CHECK(message_of(unknown) == "Unknown op: nope");
}

TEST_CASE("msgpack push and pop carry bin payloads; a structured payload is "
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

} // namespace spool::test
