// Namespace/task pops (semantics.md §9): across the queues of a namespace,
// higher priority first, starved queues before all, long poll across them.

#include "sim/broker_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct ns_fixture : broker_sim {
  void queue(const std::string& name, std::int64_t priority) {
    actors::configure_request c;
    c.queue = name;
    c.options.priority = priority;
    auto r = request<actors::configure_reply>(broker,
                                              actors::configure_atom::value, c);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
  }

  void push(const std::string& queue, const std::string& payload) {
    std::vector<actors::broker_push_item> v{{queue, {"Default", msg(payload)}}};
    auto r = request<actors::queue_push_reply>(broker, actors::push_atom::value,
                                               v);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
  }

  actors::namespace_pop_request
  req(std::string ns, std::optional<std::string> task = {}, bool wait = false) {
    actors::namespace_pop_request r;
    r.name_space = std::move(ns);
    r.task = std::move(task);
    r.pop.group = "g";
    r.pop.lease_id = "L" + std::to_string(++leases);
    r.pop.wait = wait;
    r.pop.timeout = 30s;
    return r;
  }

  /// Pops and completes what it got; answers the queue served.
  std::string pop_ack(actors::namespace_pop_request r) {
    auto out = request<actors::namespace_pop_reply>(broker,
                                                    actors::pop_atom::value, r);
    REQUIRE(out);
    REQUIRE_FALSE(out->reply.failure);
    if (out->reply.claimed.empty())
      return "";
    auto& c = out->reply.claimed[0];
    ack_request a;
    a.lease_id = c.reply.lease->id;
    a.off = c.reply.messages.at(0).frame.off;
    auto acked = ack_located(c.partition_uuid, "g", std::vector{a});
    REQUIRE(acked);
    REQUIRE(acked->size() == 1);
    REQUIRE(acked->front().error == ack_error::none); // routed and applied
    REQUIRE_FALSE(acked->front().failure);
    return out->queue;
  }

  int leases = 0;
};

} // namespace

TEST_CASE("a namespace pop serves the queue with the highest priority first",
          "[sim][namespace][priority]") {
  ns_fixture fx;
  fx.queue("shop.a", 1);
  fx.queue("shop.b", 5);
  fx.queue("other.c", 9);
  fx.push("shop.a", "a");
  fx.push("shop.b", "b");
  fx.push("other.c", "c");
  CHECK(fx.pop_ack(fx.req("shop")) == "shop.b");
  CHECK(fx.pop_ack(fx.req("shop")) == "shop.a");
  CHECK(fx.pop_ack(fx.req("shop")).empty()); // other.c is not in "shop"
  auto none = fx.request<actors::namespace_pop_reply>(
      fx.broker, actors::pop_atom::value, fx.req("nobody"));
  REQUIRE(none);
  CHECK(none->reply.reason == empty_reason::no_partition);
}

TEST_CASE("a namespace pop serves a queue starved past maxStarvationSeconds "
          "before higher priorities",
          "[sim][namespace][priority]") {
  ns_fixture fx;
  fx.queue("shop.low", 0);
  fx.queue("shop.high", 9);
  fx.push("shop.low", "old");
  fx.advance(20s);
  fx.push("shop.high", "h1");
  fx.push("shop.high", "h2");
  // 20 s of waiting is not starvation: priority decides.
  CHECK(fx.pop_ack(fx.req("shop")) == "shop.high");
  fx.advance(11s); // the low queue's frame has waited 31 s
  CHECK(fx.pop_ack(fx.req("shop")) == "shop.low");
  CHECK(fx.pop_ack(fx.req("shop")) == "shop.high");
}

TEST_CASE("a namespace pop with a task considers only that task's queues",
          "[sim][namespace]") {
  ns_fixture fx;
  fx.queue("shop.eu.orders", 9); // auto-derived: namespace shop, task eu
  fx.queue("shop.us.orders", 0);
  fx.push("shop.eu.orders", "eu");
  fx.push("shop.us.orders", "us");
  CHECK(fx.pop_ack(fx.req("shop", "us")) == "shop.us.orders");
  CHECK(fx.pop_ack(fx.req("shop", "us")).empty());
  CHECK(fx.pop_ack(fx.req("shop")) == "shop.eu.orders");
}

TEST_CASE("a parked namespace pop wakes when a push lands in one of its "
          "queues, and times out empty otherwise",
          "[sim][namespace][long-poll]") {
  ns_fixture fx;
  fx.queue("shop.a", 0);
  fx.queue("shop.b", 0);
  auto parked = fx.request_later<actors::namespace_pop_reply>(
      fx.broker, actors::pop_atom::value, fx.req("shop", {}, true));
  fx.run();
  CHECK_FALSE(*parked);
  fx.push("shop.b", "x");
  REQUIRE(*parked);
  CHECK((*parked)->queue == "shop.b");
  REQUIRE((*parked)->reply.claimed.size() == 1);
  auto late = fx.request_later<actors::namespace_pop_reply>(
      fx.broker, actors::pop_atom::value, fx.req("shop", {}, true));
  fx.run();
  fx.advance(30s - 1ms);
  CHECK_FALSE(*late);
  fx.advance(1ms);
  REQUIRE(*late);
  CHECK((*late)->reply.claimed.empty());
  auto bad = fx.request<actors::namespace_pop_reply>(
      fx.broker, actors::pop_atom::value, fx.req(""));
  REQUIRE(bad);
  REQUIRE(bad->reply.failure);
  CHECK(bad->reply.failure->message == "namespace must not be empty");
}

TEST_CASE("a push wakes only the parked namespace pops of its own namespace",
          "[sim][namespace][long-poll][bounded]") {
  // The actor events one push to shop.a runs with `n` pops parked on
  // another namespace.
  auto events = [](int n) {
    ns_fixture fx;
    fx.queue("shop.a", 0);
    fx.queue("other.a", 0);
    std::vector<std::shared_ptr<std::optional<actors::namespace_pop_reply>>>
        parked;
    for (int i = 0; i < n; ++i)
      parked.push_back(fx.request_later<actors::namespace_pop_reply>(
          fx.broker, actors::pop_atom::value, fx.req("other", {}, true)));
    fx.run();
    std::vector<actors::broker_push_item> v{{"shop.a", {"Default", msg("x")}}};
    auto pushed = fx.request_later<actors::queue_push_reply>(
        fx.broker, actors::push_atom::value, v);
    auto handled = fx.run();
    REQUIRE(*pushed);
    REQUIRE_FALSE((**pushed).failure);
    for (auto& p : parked)
      CHECK_FALSE(*p); // still parked
    return handled;
  };
  CHECK(events(100) == events(1));
}

TEST_CASE("a parked namespace pop wakes when a transaction pushes to one of "
          "its queues",
          "[sim][namespace][long-poll][txn]") {
  ns_fixture fx;
  fx.queue("shop.a", 0);
  auto parked = fx.request_later<actors::namespace_pop_reply>(
      fx.broker, actors::pop_atom::value, fx.req("shop", {}, true));
  fx.run();
  REQUIRE_FALSE(*parked);
  core::txn_request t;
  core::txn_push_op push;
  push.items.push_back({"shop.a", "Default", msg("x")});
  t.ops.push_back(push);
  auto r = fx.request<actors::txn_reply>(fx.broker, actors::txn_atom::value, t);
  REQUIRE(r);
  REQUIRE(r->result.success);
  REQUIRE(*parked); // at once, not at its timeout
  CHECK((*parked)->queue == "shop.a");
  CHECK((*parked)->reply.claimed.size() == 1);
}

TEST_CASE("a parked namespace pop wakes when a queue with messages is "
          "configured into its namespace",
          "[sim][namespace][long-poll]") {
  ns_fixture fx;
  fx.queue("misc", 0);
  fx.push("misc", "x");
  auto parked = fx.request_later<actors::namespace_pop_reply>(
      fx.broker, actors::pop_atom::value, fx.req("shop", {}, true));
  fx.run();
  REQUIRE_FALSE(*parked);
  actors::configure_request c;
  c.queue = "misc";
  c.name_space = "shop";
  auto r = fx.request<actors::configure_reply>(
      fx.broker, actors::configure_atom::value, c);
  REQUIRE(r);
  REQUIRE_FALSE(r->failure);
  REQUIRE(*parked);
  CHECK((*parked)->queue == "misc");
  CHECK((*parked)->reply.claimed.size() == 1);
}
