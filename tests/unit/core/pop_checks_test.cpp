#include <catch2/catch.hpp>

#include "core/broker/pop_checks.hpp"

using namespace spool;
using namespace spool::core;

TEST_CASE("a pop outside the server's caps is refused naming the field",
          "[core][pop]") {
  config::pop_limits limits;
  limits.max_batch = 10;
  limits.max_partitions = 3;
  limits.max_timeout_ms = 1000;
  limits.max_bytes = 100;
  auto message = [&](pop_shape p) {
    auto r = check_pop(limits, p);
    REQUIRE_FALSE(r);
    CHECK(r.err().code == errc::invalid_argument);
    return r.err().message;
  };
  pop_shape ok{.group = "g", .batch = 10, .partitions = 3};
  CHECK(check_pop(limits, ok));
  CHECK(message({.group = ""})
        == "consumer group must not be empty (queue mode is __QUEUE_MODE__)");
  CHECK(message({.group = "__g"})
        == "consumerGroup must not start with __ (reserved)");
  CHECK(message({.group = "g", .batch = 11})
        == "batch must be between 1 and 10, got 11");
  CHECK(message({.group = "g", .batch = 0})
        == "batch must be between 1 and 10, got 0");
  CHECK(message({.group = "g", .partitions = 4})
        == "partitions must be between 1 and 3, got 4");
  CHECK(message({.group = "g", .wait = true, .timeout = milliseconds{1001}})
        == "timeout must be between 0 and 1000 ms, got 1001");
  std::string bad_part = "a/b";
  CHECK(message({.group = "g", .partition = &bad_part}).find("partition ")
        == 0);
}

TEST_CASE("a named-partition pop ignores the wildcard's partitions and "
          "a short poll its timeout",
          "[core][pop]") {
  config::pop_limits limits;
  std::string p = "p";
  CHECK(check_pop(limits, {.group = "g", .partition = &p, .partitions = 0}));
  CHECK(check_pop(limits, {.group = "g", .timeout = milliseconds{-5}}));
}

TEST_CASE("a pop's byte budget is lowered to pop.maxBytes", "[core][pop]") {
  config::pop_limits limits;
  limits.max_bytes = 100;
  CHECK(*check_pop(limits, {.group = "g"}) == 100);
  CHECK(*check_pop(limits, {.group = "g", .max_bytes = 40}) == 40);
}

// Moved from tests/sim/broker_test.cpp with the rule (issue 12).
TEST_CASE("an auto-created queue takes namespace and task from its name",
          "[core][pop][broker]") {
  CHECK(namespace_and_task("orders.eu.paid")
        == std::pair<std::string, std::string>{"orders", "eu"});
  CHECK(namespace_and_task("orders.eu")
        == std::pair<std::string, std::string>{"orders", "eu"});
  CHECK(namespace_and_task("orders")
        == std::pair<std::string, std::string>{"", ""});
}
