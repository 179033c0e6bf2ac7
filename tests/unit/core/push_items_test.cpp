#include <catch2/catch.hpp>

#include "core/push/push_items.hpp"

using namespace spool;
using namespace spool::core;

namespace {

storage::frame frame_of(std::string payload) {
  storage::frame f;
  f.payload = std::move(payload);
  return f;
}

} // namespace

TEST_CASE("a bad push item is refused naming its index and field",
          "[core][push]") {
  storage::frame_limits limits;
  limits.max_payload_bytes = 4;
  std::string q = "orders";
  CHECK(check_push_item(0, &q, "Default", frame_of("abc"), limits));

  std::string bad_q = "__orders";
  auto r = check_push_item(3, &bad_q, "Default", frame_of("abc"), limits);
  REQUIRE_FALSE(r);
  CHECK(r.err().code == errc::invalid_argument);
  CHECK(r.err().message == "items[3].queue must not start with __ (reserved)");

  r = check_push_item(1, &q, "", frame_of("abc"), limits);
  REQUIRE_FALSE(r);
  CHECK(r.err().message == "items[1].partition must be 1..255 bytes, got 0");

  r = check_push_item(2, &q, "Default", frame_of("abcde"), limits);
  REQUIRE_FALSE(r);
  CHECK(r.err().code == errc::too_large);
  CHECK(r.err().message == "items[2]: payload exceeds 4 bytes");

  auto f = frame_of("a");
  f.trace_id = "bad\x01";
  r = check_push_item(5, &q, "Default", f, limits);
  REQUIRE_FALSE(r);
  CHECK(r.err().message
        == "items[5].traceId must not contain control characters");
}

TEST_CASE("a push item without a queue is checked for the rest",
          "[core][push]") {
  storage::frame_limits limits;
  CHECK(check_push_item(0, nullptr, "p", frame_of("x"), limits));
  CHECK_FALSE(check_push_item(0, nullptr, "a/b", frame_of("x"), limits));
}

TEST_CASE("a push's items are grouped by name in first-seen order",
          "[core][push]") {
  std::vector<std::string> names{"b", "b", "a", "b", "c", "a", "a"};
  auto g = group_by_name(
      names.size(), [&](std::size_t i) -> const auto& { return names[i]; });
  CHECK(g.names == std::vector<std::string>{"b", "a", "c"});
  using ix = std::vector<std::size_t>;
  CHECK(g.items == std::vector<ix>{{0, 1, 3}, {2, 5, 6}, {4}});
  CHECK(g.slot == ix{0, 0, 1, 0, 2, 1, 1});

  auto upper = distribute<std::string>(
      g, [&](std::size_t i) { return names[i] + std::to_string(i); });
  CHECK(upper
        == std::vector<std::vector<std::string>>{
            {"b0", "b1", "b3"}, {"a2", "a5", "a6"}, {"c4"}});

  auto none = group_by_name(
      0, [&](std::size_t i) -> const auto& { return names[i]; });
  CHECK(none.names.empty());
  CHECK(none.slot.empty());
}

TEST_CASE("a queue's own check of an item names its partition and frame "
          "errors as the edge's does",
          "[core][push]") {
  storage::frame_limits limits;
  limits.max_payload_bytes = 2;
  CHECK(check_item_partition(4, "p"));
  auto bad = check_item_partition(4, "__p");
  REQUIRE_FALSE(bad);
  CHECK(bad.err().message
        == "items[4].partition must not start with __ (reserved)");
  auto big = check_item_frame(1, frame_of("abc"), limits);
  REQUIRE_FALSE(big);
  CHECK(big.err().code == errc::too_large);
  CHECK(big.err().message == "items[1]: payload exceeds 2 bytes");
  std::string q = "q";
  CHECK(check_push_item(1, &q, "p", frame_of("abc"), limits).err()
        == big.err());
}
