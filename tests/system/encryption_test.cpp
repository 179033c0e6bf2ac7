// Encryption at rest (docs/security.md, "Encryption at rest"), against the
// real spoold: no payload byte in clear anywhere in the data folder after
// every path a message can take, a wrong key a clear error, the refusals
// without a key, and a follower's copy as sealed as its leader's.

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "system/cluster_fixture.hpp"
#include "system/http_fixture.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string key_a(64, 'a');
const std::string key_b
    = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A key file of `keys` (one per line), readable by its owner only.
std::string key_file(const temp_dir& d, const std::string& name,
                     const std::vector<std::string>& keys) {
  auto path = d.path / name;
  std::ofstream out{path};
  for (auto& k : keys)
    out << k << "\n";
  out.close();
  ::chmod(path.c_str(), 0600);
  return path.string();
}

/// The files under `dir` whose bytes hold `needle`.
std::vector<std::string> files_holding(const fs::path& dir,
                                       const std::string& needle) {
  std::vector<std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file())
      continue;
    std::ifstream in{e.path(), std::ios::binary};
    std::string bytes{std::istreambuf_iterator<char>{in}, {}};
    if (bytes.find(needle) != std::string::npos)
      out.push_back(e.path().string());
  }
  return out;
}

json secret_item(const std::string& queue, const std::string& id,
                 const std::string& text) {
  return {{"queue", queue},
          {"transactionId", id},
          {"headers", {{"kind", "test"}}},
          {"payload", {{"secret", text}}}};
}

/// Pushes one item of `secret_item` to `s`: 201 required.
void push_secret(spoold_server& s, const std::string& queue,
                 const std::string& id, const std::string& text) {
  json items = json::array({secret_item(queue, id, text)});
  REQUIRE(s.post("/api/v1/push", json{{"items", items}}.dump()).status == 201);
}

std::string configure_body(const std::string& queue, json options) {
  return json{{"queue", queue}, {"options", std::move(options)}}.dump();
}

/// Pops (queue mode) until `n` messages came or a pop comes back empty
/// twice; acks each with `status`. The payloads' secrets, in order.
std::vector<std::string> pop_all(spoold_server& s, const std::string& queue,
                                 std::size_t n,
                                 const std::string& status = "completed") {
  std::vector<std::string> seen;
  int empty = 0;
  while (seen.size() < n && empty < 2) {
    auto r = s.get("/api/v1/pop/queue/" + queue + "?batch=100&wait=false");
    REQUIRE(r.status / 100 == 2);
    auto body = r.status == 204 ? json::object() : r.body_json();
    if (body["messages"].empty()) {
      ++empty;
      std::this_thread::sleep_for(200ms);
      continue;
    }
    for (auto& m : body["messages"]) {
      seen.push_back(m["data"]["secret"].get<std::string>());
      json ack{{"transactionId", m["transactionId"]},
               {"partitionId", m["partitionId"]},
               {"leaseId", m["leaseId"]},
               {"status", status}};
      REQUIRE(s.post("/api/v1/ack", ack.dump()).body_json()[0]["success"]
              == true);
    }
  }
  return seen;
}

} // namespace

TEST_CASE("encryption at rest: no payload byte in clear in the data folder "
          "after pushes, pops, DLQ moves, requeues, transactions and "
          "retention",
          "[system][encryption]") {
  temp_dir keys;
  // Segments stored raw: a payload stored in clear would show verbatim
  // (zstd could hide it from the grep).
  spoold_server s({"--encryption-key-file", key_file(keys, "keys", {key_a}),
                   "--retention-interval-seconds", "1", "--segment-compression",
                   "off"});
  auto conf = s.post("/api/v1/configure",
                     configure_body("vault", {{"encryptionEnabled", true}}));
  REQUIRE(conf.status == 200);
  CHECK(conf.body_json()["options"]["encryptionEnabled"] == true);
  // A queue without encryption, the grep's control: its dead letter holds
  // its payload in clear, so the grep below can find what it looks for.
  REQUIRE(s.post("/api/v1/configure", configure_body("plain", json::object()))
                  .status
              / 100
          == 2);
  json items = json::array();
  for (int i = 0; i < 20; ++i)
    items.push_back(secret_item("vault", "m" + std::to_string(i),
                                "zebra-" + std::to_string(i)));
  items.push_back(secret_item("plain", "c0", "control-clear-text"));
  REQUIRE(s.post("/api/v1/push", json{{"items", items}}.dump()).status == 201);
  json txn{{"operations",
            json::array({{{"type", "push"},
                          {"items", json::array({secret_item(
                                        "vault", "t0", "zebra-txn")})}}})}};
  auto t = s.post("/api/v1/transaction", txn.dump());
  REQUIRE(t.status == 200);
  REQUIRE(t.body_json()["success"] == true);
  // Pops see clear text; the first two go to the DLQ.
  auto first = s.get("/api/v1/pop/queue/vault?batch=2&wait=false");
  REQUIRE(first.status == 200);
  auto msgs = first.body_json()["messages"];
  REQUIRE(msgs.size() == 2);
  CHECK(msgs[0]["data"]["secret"] == "zebra-0");
  for (auto& m : msgs) {
    json ack{{"transactionId", m["transactionId"]},
             {"partitionId", m["partitionId"]},
             {"leaseId", m["leaseId"]},
             {"status", "dlq"},
             {"error", "sent to the DLQ by the test"}};
    REQUIRE(s.post("/api/v1/ack", ack.dump()).body_json()[0]["dlq"] == true);
  }
  auto control = pop_all(s, "plain", 1, "dlq");
  CHECK(control == std::vector<std::string>{"control-clear-text"});
  auto dlq = s.get("/api/v1/dlq?queue=vault");
  REQUIRE(dlq.status == 200);
  REQUIRE(dlq.body_json()["messages"].size() == 2);
  auto dead = dlq.body_json();
  for (auto& m : dead["messages"])
    CHECK(m["data"]["secret"].get<std::string>().starts_with("zebra-"));
  // One message's detail: decrypted, and marked as stored encrypted.
  auto pid = msgs[0]["partitionId"].get<std::string>();
  auto detail = s.get("/api/v1/messages/" + pid + "/m5");
  REQUIRE(detail.status == 200);
  CHECK(detail.body_json()["isEncrypted"] == true);
  CHECK(detail.body_json()["data"]["secret"] == "zebra-5");
  auto browse = s.get("/api/v1/messages?queue=vault&limit=3");
  REQUIRE(browse.status == 200);
  CHECK(browse.body.find("zebra-1") != std::string::npos);
  // The dead letters go back to the group, and are consumed with the rest.
  auto rq = s.post("/api/v1/dlq/requeue", R"({"queue":"vault"})");
  REQUIRE(rq.status == 200);
  CHECK(rq.body_json()["requeued"] == 2);
  auto rest = pop_all(s, "vault", 21);
  std::set<std::string> got(rest.begin(), rest.end());
  CHECK(got.size() == 21);
  CHECK(got.contains("zebra-0"));
  CHECK(got.contains("zebra-19"));
  CHECK(got.contains("zebra-txn"));
  // Retention deletes the old segments (their bytes move to the slot
  // log's undo images).
  REQUIRE(s.post("/api/v1/configure",
                 configure_body("vault", {{"retentionSeconds", 1}}))
              .status
          == 200);
  push_secret(s, "vault", "late", "zebra-late");
  bool retained = false;
  for (int i = 0; i < 100 && !retained; ++i) {
    auto q = s.get("/api/v1/resources/queues/vault").body_json();
    retained = q["partitions"][0]["watermark"].get<std::int64_t>() > 0;
    if (!retained)
      std::this_thread::sleep_for(100ms);
  }
  CHECK(retained);
  s.signal(SIGTERM);
  REQUIRE(s.wait_exit() == 0);
  CHECK(files_holding(s.data(), "zebra").empty());
  CHECK_FALSE(files_holding(s.data(), "control-clear-text").empty());
}

TEST_CASE("encryption at rest: a wrong key is a clear error, never the "
          "bytes, and the right key added back reads them again",
          "[system][encryption]") {
  temp_dir keys;
  spoold_server s({"--encryption-key-file", key_file(keys, "a", {key_a})});
  REQUIRE(s.post("/api/v1/configure",
                 configure_body("vault", {{"encryptionEnabled", true}}))
              .status
          == 200);
  push_secret(s, "vault", "m0", "zebra-0");
  s.signal(SIGTERM);
  REQUIRE(s.wait_exit() == 0);
  // Only another key: the message cannot be read, and says why; the pop
  // changes nothing (an autoAck pop does not consume it).
  s.set_options({"--encryption-key-file", key_file(keys, "b", {key_b})});
  s.start();
  auto pop = s.get("/api/v1/pop/queue/vault?batch=1&wait=false&autoAck=true");
  CHECK(pop.status == 500);
  CHECK_THAT(pop.body, Catch::Contains("not configured on this server"));
  CHECK_THAT(pop.body, Catch::Contains("message at offset 0"));
  CHECK(pop.body.find("zebra") == std::string::npos);
  CHECK(s.get("/api/v1/pop/queue/vault?batch=1&wait=false").status == 500);
  // New pushes use the new key meanwhile.
  push_secret(s, "vault", "m1", "zebra-1");
  // A listing shows the unreadable entry without its payload, saying why,
  // and the rest of its page as usual.
  auto browse = s.get("/api/v1/messages?queue=vault");
  REQUIRE(browse.status == 200);
  auto listed = browse.body_json();
  auto& rows = listed.is_array() ? listed : listed["messages"];
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["data"].is_null());
  CHECK_THAT(rows[0]["dataError"].get<std::string>(),
             Catch::Contains("not configured on this server"));
  CHECK(rows[1]["data"]["secret"] == "zebra-1");
  CHECK_FALSE(rows[1].contains("dataError"));
  CHECK(browse.body.find("zebra-0") == std::string::npos);
  s.signal(SIGTERM);
  REQUIRE(s.wait_exit() == 0);
  // The new key first, the old one kept: both messages read again.
  s.set_options(
      {"--encryption-key-file", key_file(keys, "ab", {key_b, key_a})});
  s.start();
  auto b = s.get("/api/v1/messages?queue=vault");
  REQUIRE(b.status == 200);
  CHECK_THAT(b.body, Catch::Contains("zebra-0"));
  CHECK_THAT(b.body, Catch::Contains("zebra-1"));
  // Nothing was consumed by the failed pops: both come, with their first
  // delivery.
  auto p = s.get("/api/v1/pop/queue/vault?batch=10&wait=false");
  REQUIRE(p.status == 200);
  auto got = p.body_json()["messages"];
  REQUIRE(got.size() == 2);
  CHECK(got[0]["data"]["secret"] == "zebra-0");
  CHECK(got[0]["deliveryCount"] == 1);
}

TEST_CASE("encryption at rest: a requeued dead letter whose key is gone "
          "fails its pop and changes nothing, and is delivered once the key "
          "is back",
          "[system][encryption]") {
  temp_dir keys;
  spoold_server s({"--encryption-key-file", key_file(keys, "a", {key_a})});
  REQUIRE(s.post("/api/v1/configure",
                 configure_body("vault", {{"encryptionEnabled", true}}))
              .status
          == 200);
  push_secret(s, "vault", "d0", "zebra-dead");
  auto first = s.get("/api/v1/pop/queue/vault?batch=1&wait=false");
  REQUIRE(first.status == 200);
  auto m = first.body_json()["messages"][0];
  json ack{{"transactionId", m["transactionId"]},
           {"partitionId", m["partitionId"]},
           {"leaseId", m["leaseId"]},
           {"status", "dlq"},
           {"error", "to the DLQ"}};
  REQUIRE(s.post("/api/v1/ack", ack.dump()).body_json()[0]["dlq"] == true);
  s.signal(SIGTERM);
  REQUIRE(s.wait_exit() == 0);
  s.set_options({"--encryption-key-file", key_file(keys, "b", {key_b})});
  s.start();
  // Listed without its payload, saying why.
  auto dlq = s.get("/api/v1/dlq?queue=vault");
  REQUIRE(dlq.status == 200);
  auto dead = dlq.body_json()["messages"];
  REQUIRE(dead.size() == 1);
  CHECK(dead[0]["data"].is_null());
  CHECK_THAT(dead[0]["dataError"].get<std::string>(),
             Catch::Contains("not configured on this server"));
  REQUIRE(s.post("/api/v1/dlq/requeue", R"({"queue":"vault"})")
              .body_json()["requeued"]
          == 1);
  // An autoAck pop must not consume what it cannot give.
  auto pop = s.get("/api/v1/pop/queue/vault?batch=1&wait=false&autoAck=true");
  CHECK(pop.status == 500);
  CHECK_THAT(pop.body, Catch::Contains("dead letter"));
  CHECK_THAT(pop.body, Catch::Contains("not configured on this server"));
  CHECK(pop.body.find("zebra") == std::string::npos);
  s.signal(SIGTERM);
  REQUIRE(s.wait_exit() == 0);
  s.set_options(
      {"--encryption-key-file", key_file(keys, "ab", {key_b, key_a})});
  s.start();
  auto again = s.get("/api/v1/pop/queue/vault?batch=1&wait=false");
  REQUIRE(again.status == 200);
  auto got = again.body_json()["messages"];
  REQUIRE(got.size() == 1);
  CHECK(got[0]["data"]["secret"] == "zebra-dead");
}

TEST_CASE("encryption at rest: without a key, encryptionEnabled is refused "
          "at configure, and a store holding such a queue refuses to start",
          "[system][encryption][bad-input]") {
  temp_dir keys;
  spoold_server s;
  auto r = s.post("/api/v1/configure",
                  configure_body("vault", {{"encryptionEnabled", true}}));
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("--encryption-key-file"));
  CHECK(s.get("/api/v1/resources/queues/vault").status == 404);
  s.signal(SIGTERM);
  REQUIRE(s.wait_exit() == 0);
  s.set_options({"--encryption-key-file", key_file(keys, "a", {key_a})});
  s.start();
  REQUIRE(s.post("/api/v1/configure",
                 configure_body("vault", {{"encryptionEnabled", true}}))
              .status
          == 200);
  s.signal(SIGTERM);
  REQUIRE(s.wait_exit() == 0);
  s.set_options({});
  CHECK_THROWS(s.start());
  CHECK_THAT(s.log(), Catch::Contains("vault have encryptionEnabled"));
  // A key that is not 64 hex characters stops the start too.
  s.set_options({"--encryption-key", "abc"});
  CHECK_THROWS(s.start());
  CHECK_THAT(s.log(), Catch::Contains("64 hex characters"));
}

TEST_CASE("encryption at rest: a follower that catches up holds the payloads "
          "as sealed as its leader does",
          "[system][encryption][cluster]") {
  temp_dir keys;
  three_nodes c({"--encryption-key-file", key_file(keys, "keys", {key_a}),
                 "--segment-compression", "off"});
  auto l = three_nodes::leader_of("vault");
  auto f = (l + 1) % 3;
  REQUIRE(c.until_known(l, "POST", "/api/v1/configure",
                        configure_body("vault", {{"encryptionEnabled", true}}))
              .status
          == 200);
  c.nodes[f]->kill9();
  json items = json::array();
  for (int i = 0; i < 10; ++i)
    items.push_back(secret_item("vault", "m" + std::to_string(i),
                                "zebra-" + std::to_string(i)));
  REQUIRE(c.nodes[l]->post("/api/v1/push", json{{"items", items}}.dump()).status
          == 201);
  c.nodes[f]->start();
  auto slot = "{slot=\"" + std::to_string(slot_of("vault", default_slot_count))
              + "\",follower=\"n" + std::to_string(f + 1) + "\"}";
  CHECK(c.nodes[l]->metric_becomes("spool_slot_follower_lag_entries" + slot, 0,
                                   20s));
  auto pop = c.nodes[l]->get("/api/v1/pop/queue/vault?batch=10&wait=false");
  REQUIRE(pop.status == 200);
  CHECK(pop.body_json()["messages"].size() == 10);
  CHECK(pop.body_json()["messages"][9]["data"]["secret"] == "zebra-9");
  for (auto& n : c.nodes) {
    n->signal(SIGTERM);
    n->wait_exit();
  }
  for (auto& n : c.nodes)
    CHECK(files_holding(n->data(), "zebra").empty());
}

TEST_CASE("encryption at rest: turned on for a queue holding clear messages, "
          "new ones are encrypted, old ones stay readable, and the "
          "timestamp walk finds sealed segments",
          "[system][encryption]") {
  temp_dir keys;
  spoold_server s({"--encryption-key-file", key_file(keys, "keys", {key_a}),
                   "--segment-compression", "off"});
  auto push = [&](const std::string& id) {
    push_secret(s, "mixed", id, "zebra-" + id);
  };
  push("c0");
  push("c1");
  REQUIRE(s.post("/api/v1/configure",
                 configure_body("mixed", {{"encryptionEnabled", true}}))
              .status
          == 200);
  std::this_thread::sleep_for(20ms); // the sealed segments are later
  push("e0");
  push("e1");
  auto pop = [&]() {
    auto r = s.get("/api/v1/pop/queue/mixed?consumerGroup=g&batch=10"
                   "&wait=false&autoAck=true");
    REQUIRE(r.status == 200);
    return r.body_json()["messages"];
  };
  auto all = pop();
  REQUIRE(all.size() == 4);
  CHECK(all[0]["data"]["secret"] == "zebra-c0");
  CHECK(all[3]["data"]["secret"] == "zebra-e1");
  auto pid = all[0]["partitionId"].get<std::string>();
  CHECK(s.get("/api/v1/messages/" + pid + "/c0").body_json()["isEncrypted"]
        == false);
  CHECK(s.get("/api/v1/messages/" + pid + "/e0").body_json()["isEncrypted"]
        == true);
  // Back to the first encrypted message's time: the walk reads segment
  // headers, which stay in clear.
  json seek{{"timestamp", all[2]["createdAt"]}};
  auto sk = s.post("/api/v1/consumer-groups/g/queues/mixed/seek", seek.dump());
  REQUIRE(sk.status == 200);
  auto again = pop();
  REQUIRE(again.size() == 2);
  CHECK(again[0]["data"]["secret"] == "zebra-e0");
  CHECK(again[1]["data"]["secret"] == "zebra-e1");
  s.signal(SIGTERM);
  REQUIRE(s.wait_exit() == 0);
  CHECK(files_holding(s.data(), "zebra-e").empty());
}
