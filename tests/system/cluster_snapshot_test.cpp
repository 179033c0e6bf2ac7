// Three real spoold processes on loopback (docs/cluster.md, "Snapshots"): a
// follower killed with -9 while the leader's slot log moved past what it
// keeps catches up from a copy of the slot sent in pieces over the peer
// link, staged, and installed with the last one; then it is part of the
// quorum again, with the leader's log.

#include <catch2/catch.hpp>

#include <random>
#include <sstream>

#include "system/cluster_fixture.hpp"
#include "unit/storage/slot_rows.hpp"

using namespace spool;
using namespace spool::test;

TEST_CASE("a follower killed with -9 that the leader's log no longer covers "
          "catches up from a snapshot sent in pieces, and makes the quorum "
          "again",
          "[system][cluster][snapshot]") {
  // The slot log keeps 4 batches: the follower misses many more.
  three_nodes c({"--slot-log-entries", "4"});
  const std::string q = "bulk";
  auto l = three_nodes::leader_of(q);
  auto f1 = (l + 1) % 3;
  auto f2 = (l + 2) % 3;
  REQUIRE(c.until_known(l, "POST", "/api/v1/push", keyed_push(q, 0, 1)).status
          == 201);
  // Stopped, not killed, while the leader sends it the batches below: the
  // first ones land in its socket and die with it at the -9. Killed at
  // once, it could miss nothing the peer link cannot replay: the link keeps
  // what is queued for a peer across its reconnection (up to 64 MiB; the
  // leader's window is 512 entries), so the restarted follower would take
  // every entry in order from the replayed appends and need no snapshot
  // (1 run in 6 under load, when it had synced all it was sent).
  c.nodes[f1]->signal(SIGSTOP);
  // About 12 MiB that does not compress: a dozen pieces of about 1 MiB.
  std::mt19937 rng{7};
  const char* alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789+/";
  int n = 1;
  for (int push = 0; push < 24; ++push) {
    json items = json::array();
    for (int i = 0; i < 8; ++i, ++n) {
      std::string blob(64 * 1024, 'x');
      for (auto& ch : blob)
        ch = alphabet[rng() % 64];
      items.push_back({{"queue", q},
                       {"transactionId", "m" + std::to_string(n)},
                       {"payload", {{"n", n}, {"blob", blob}}}});
    }
    REQUIRE(
        c.nodes[l]->post("/api/v1/push", json{{"items", items}}.dump()).status
        == 201);
  }
  c.nodes[f1]->kill9();
  auto slot = std::to_string(slot_of(q, default_slot_count));
  auto lag = "spool_slot_follower_lag_entries{slot=\"" + slot
             + "\",follower=\"n" + std::to_string(f1 + 1) + "\"}";
  CHECK(c.nodes[l]->metric(lag) >= 24);
  c.nodes[f1]->start();
  auto installed_line = "slot " + slot + ": installed a snapshot from";
  bool installed = c.nodes[f1]->wait_for_log(installed_line, 60s);
  if (!installed) {
    // What each of the two said, but the start's lines of every slot.
    for (auto n : {f1, l}) {
      std::istringstream in{c.nodes[n]->log()};
      for (std::string line; std::getline(in, line);)
        if (line.find("serving here") == std::string::npos
            && line.find("serves epoch") == std::string::npos
            && line.find("leads epoch") == std::string::npos)
          std::fprintf(stderr, "n%zu: %s\n", n + 1, line.c_str());
    }
  }
  CHECK(installed);
  // Of more than one piece (about 1 MiB of rows each, but at least one
  // row: a segment may be larger): "(epoch E, N piece(s))".
  auto text = c.nodes[f1]->log();
  auto at = text.find(installed_line);
  REQUIRE(at != std::string::npos);
  auto comma = text.find(", ", at);
  REQUIRE(comma != std::string::npos);
  CHECK(std::stoi(text.substr(comma + 2)) > 1);
  CHECK(c.nodes[l]->metric_becomes(lag, 0, 60s));
  // The other follower gone, a write needs the one that took the copy.
  c.nodes[f2]->kill9();
  auto r = c.until_known(l, "POST", "/api/v1/push", keyed_push(q, n, 1));
  CHECK(r.status == 201);
  auto pop = c.nodes[l]->get("/api/v1/pop/queue/" + q + "?batch=1000");
  REQUIRE(pop.status == 200);
  CHECK(pop.body_json()["messages"].size() == static_cast<std::size_t>(n + 1));
  // Byte for byte the leader's rows, once it holds all the leader's log.
  auto last = "spool_slot_last_seq{slot=\"" + slot + "\"}";
  CHECK(c.nodes[f1]->metric_becomes(last, c.nodes[l]->metric(last), 10s));
  // Both stop cleanly on SIGTERM (a node whose writer thread touched CAF
  // once waited for good at the end of its actor system).
  c.nodes[f1]->signal(SIGTERM);
  CHECK(c.nodes[f1]->wait_exit(30s) == 0);
  c.nodes[l]->signal(SIGTERM);
  CHECK(c.nodes[l]->wait_exit(30s) == 0);
  auto reference
      = slot_rows_at(c.nodes[l]->data(), slot_of(q, default_slot_count));
  CHECK(reference.size() > 24);
  CHECK(rows_diff(
            slot_rows_at(c.nodes[f1]->data(), slot_of(q, default_slot_count)),
            reference)
        == "");
}
