#include <catch2/catch.hpp>

#include "core/broker/priority.hpp"

using spool::core::queue_candidate;
using spool::core::serving_order;

namespace {
constexpr std::int64_t s = 1'000'000; // µs
}

TEST_CASE("a namespace pop serves higher priority first", "[priority]") {
  std::vector<queue_candidate> qs{
      {"low", 1, 100 * s}, {"high", 9, 100 * s}, {"mid", 5, 100 * s}};
  CHECK(serving_order(qs, 110 * s, 30 * s)
        == std::vector<std::size_t>{1, 2, 0});
}

TEST_CASE("a queue starved past maxStarvationSeconds is served before higher "
          "priorities",
          "[priority]") {
  std::vector<queue_candidate> qs{
      {"high", 9, 100 * s}, {"low", 0, 60 * s}, {"older", 0, 50 * s}};
  // Exactly the limit is not starved yet: by priority, ties by name.
  CHECK(serving_order(qs, 80 * s, 30 * s) == std::vector<std::size_t>{0, 1, 2});
  // "older" has waited 35 s: it goes first.
  CHECK(serving_order(qs, 85 * s, 30 * s) == std::vector<std::size_t>{2, 0, 1});
  // Both low-priority queues starved: the longest waiting first.
  CHECK(serving_order(qs, 100 * s, 30 * s)
        == std::vector<std::size_t>{2, 1, 0});
}

TEST_CASE("queues with nothing waiting are not tried", "[priority]") {
  std::vector<queue_candidate> qs{{"empty", 9, std::nullopt}, {"full", 0, 1}};
  CHECK(serving_order(qs, 2, 30 * s) == std::vector<std::size_t>{1});
}

TEST_CASE("a namespace pop is served by the queues of its namespace and, "
          "when it names one, its task",
          "[core][priority][namespace]") {
  using spool::core::serves;
  std::optional<std::string> any;
  std::optional<std::string> eu{"eu"};
  CHECK(serves("orders", "eu", "orders", any));
  CHECK(serves("orders", "eu", "orders", eu));
  CHECK_FALSE(serves("orders", "us", "orders", eu));
  CHECK_FALSE(serves("billing", "eu", "orders", any));
  CHECK_FALSE(serves("", "", "", any)); // no namespace serves nothing
}
