// One actor's asynchronous mutex (core/queue/async_mutex.hpp): requests
// that need the same thing while a holder's work is in flight wait their
// turn, in arrival order, and look again.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/queue/async_mutex.hpp"

using spool::core::async_mutex;

TEST_CASE("a waiter on a free mutex runs at once",
          "[unit][core][async_mutex]") {
  async_mutex m;
  bool ran = false;
  m.wait([&] { ran = true; });
  CHECK(ran);
  CHECK(m.idle());
}

TEST_CASE("waiters on a held mutex run in arrival order when it is left",
          "[unit][core][async_mutex]") {
  async_mutex m;
  m.enter();
  std::vector<int> order;
  m.wait([&] { order.push_back(1); });
  m.wait([&] { order.push_back(2); });
  CHECK(order.empty());
  CHECK(m.busy());
  CHECK_FALSE(m.idle());
  m.leave();
  CHECK(order == std::vector<int>{1, 2});
  CHECK(m.idle());
}

TEST_CASE("a waiter that takes the mutex makes the waiters after it wait "
          "again",
          "[unit][core][async_mutex]") {
  async_mutex m;
  m.enter();
  std::vector<std::string> order;
  m.wait([&] {
    order.push_back("first takes it");
    m.enter();
  });
  m.wait([&] { order.push_back("second"); });
  m.leave();
  CHECK(order == std::vector<std::string>{"first takes it"});
  CHECK(m.busy());
  m.leave();
  CHECK(order == std::vector<std::string>{"first takes it", "second"});
  CHECK(m.idle());
}

TEST_CASE("a mutex is not idle while its leave runs the waiters",
          "[unit][core][async_mutex]") {
  async_mutex m;
  m.enter();
  bool idle_inside = true;
  m.wait([&] { idle_inside = m.idle(); });
  m.leave();
  CHECK_FALSE(idle_inside); // the owner must not drop it from a waiter
  CHECK(m.idle());
}
