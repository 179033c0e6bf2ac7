// The history checker (history.hpp) on planted histories: a good one
// passes, and each violation the cluster tests look for is found and named.

#include <catch2/catch.hpp>

#include "system/history.hpp"

using namespace spool::test;

namespace {

history good() {
  history h;
  for (int i = 0; i < 4; ++i) {
    auto txn = "t" + std::to_string(i);
    auto payload = "{\"i\":" + std::to_string(i) + "}";
    h.pushes.push_back(
        {"p0", txn, payload, i != 3, i != 3 ? std::optional{i} : std::nullopt});
    h.final_log["p0"].push_back({"p0", i, txn, payload});
  }
  h.pushes.push_back({"p0", "t9", "{}", false, std::nullopt}); // never stored
  h.observed.push_back({"p0", 1, "t1", "{\"i\":1}"});
  h.acks.push_back({"g1", "p0", 0});
  h.acks.push_back({"g1", "p0", 1});
  h.final_cursor[{"g1", "p0"}] = 1;
  h.seeks.push_back({"g2", "p0", 0, true});
  h.seeks.push_back({"g2", "p0", 2, false}); // unknown: may or may not hold
  h.final_cursor[{"g2", "p0"}] = 2;
  return h;
}

bool finds(const history& h, const std::string& words) {
  auto bad = check(h);
  for (auto& b : bad)
    if (b.find(words) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST_CASE("the history checker passes a history the final state keeps, "
          "unknown outcomes either way",
          "[history]") {
  auto h = good();
  CHECK(check(h).empty());
  h.final_cursor[{"g2", "p0"}] = 0; // the unknown seek did not land
  CHECK(check(h).empty());
  h.final_log["p0"].pop_back(); // nor did the unknown push
  CHECK(check(h).empty());
}

TEST_CASE("the history checker finds an acknowledged push lost, at another "
          "offset than answered, or out of its order",
          "[history]") {
  auto lost = good();
  lost.final_log["p0"].erase(lost.final_log["p0"].begin() + 2);
  CHECK(finds(lost, "acknowledged push t2 to p0 is lost"));
  auto moved = good();
  moved.pushes[1].offset = 5;
  CHECK(finds(moved, "t1 was answered offset 5 and is at 1"));
  auto swapped = good();
  std::swap(swapped.final_log["p0"][1].txn, swapped.final_log["p0"][2].txn);
  std::swap(swapped.final_log["p0"][1].payload,
            swapped.final_log["p0"][2].payload);
  for (auto& p : swapped.pushes)
    p.offset.reset();
  swapped.observed.clear();
  CHECK(finds(swapped, "not after the one acknowledged before it"));
}

TEST_CASE("the history checker finds an offset with two payloads and a "
          "transactionId at two offsets",
          "[history]") {
  auto twice = good();
  twice.final_log["p0"].push_back({"p0", 4, "t1", "{\"i\":1}"});
  CHECK(finds(twice, "transactionId t1 is at two offsets of p0: 1 and 4"));
  auto changed = good();
  changed.observed.push_back({"p0", 2, "tX", "{}"});
  CHECK(finds(changed, "offset 2 was delivered as tX and now holds t2"));
  auto gone = good();
  gone.observed.push_back({"p0", 7, "t7", "{}"});
  CHECK(finds(gone, "offset 7 was delivered (t7) and is gone"));
  auto backwards = good();
  std::swap(backwards.final_log["p0"][0], backwards.final_log["p0"][1]);
  CHECK(finds(backwards, "is read after offset"));
}

TEST_CASE("the history checker finds a committed cursor behind an "
          "acknowledged ack and an acknowledged seek undone",
          "[history]") {
  auto behind = good();
  behind.final_cursor[{"g1", "p0"}] = 0;
  CHECK(finds(behind, "group g1 acked partition p0 offset 1 and its "
                      "committed offset is 0"));
  auto undone = good();
  undone.final_cursor[{"g2", "p0"}] = 3;
  CHECK(finds(undone, "group g2 on p0: an acknowledged seek is undone"));
  auto later = good();
  later.seeks.push_back({"g2", "p0", 3, true}); // acknowledged: only it holds
  CHECK(finds(later, "an acknowledged seek is undone (committed offset 2)"));
}
