// Partitions as virtual actors (issue 38): a partition's actor is spawned
// at its first contact, from its stored rows; recovery spawns none.

#include "sim/broker_sim.hpp"

using namespace spool;
using namespace spool::test;

namespace {

actors::queue_pop_reply pop(broker_sim& fx, const std::string& queue,
                            actors::queue_pop_request req) {
  auto r = fx.request<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, queue, req);
  REQUIRE(r);
  return *r;
}

std::vector<std::string> payloads(const actors::queue_pop_reply& r) {
  std::vector<std::string> out;
  for (auto& c : r.claimed)
    for (auto& m : c.reply.messages)
      out.push_back(m.frame.data.payload);
  return out;
}

} // namespace

TEST_CASE("a restart spawns no partition actor until the partition is used, "
          "and the one spawned then serves what was stored",
          "[sim][virtual][restart]") {
  broker_sim fx;
  for (int i = 0; i < 10; ++i)
    fx.push("q", "p" + std::to_string(i), {"m" + std::to_string(i)});
  // The group registers (its first pop seeds every partition).
  CHECK(payloads(pop(fx, "q", fx.pop_request("g", "p0")))
        == std::vector<std::string>{"m0"});
  CHECK(fx.metrics->partitions_loaded == 10);
  CHECK(fx.metrics->partition_actors == 10);
  fx.start();
  fx.run();
  CHECK(fx.metrics->partitions_loaded == 10);
  CHECK(fx.metrics->partition_actors == 0);
  // A pop of one partition spawns that one only, from its stored rows.
  CHECK(payloads(pop(fx, "q", fx.pop_request("g", "p3")))
        == std::vector<std::string>{"m3"});
  CHECK(fx.metrics->partition_actors == 1);
  // A push to another spawns it at its stored end: offsets go on.
  auto pushed = fx.push("q", "p5", {"n5"});
  REQUIRE(pushed.results.size() == 1);
  CHECK(pushed.results[0].result.off == storage::offset{1});
  CHECK(fx.metrics->partition_actors == 2);
  CHECK(payloads(pop(fx, "q", fx.pop_request("g", "p5")))
        == std::vector<std::string>{"m5", "n5"});
  CHECK(fx.metrics->partition_actors == 2);
  // A queue-wide seek still visits (and spawns) every partition.
  core::seek_target start;
  start.to_start = true;
  actors::seek_request s{"g", std::nullopt, start, false};
  auto sk = fx.request<actors::seek_reply>(fx.broker, actors::seek_atom::value,
                                           std::string{"q"}, s);
  REQUIRE(sk);
  REQUIRE_FALSE(sk->failure);
  CHECK(fx.metrics->partition_actors == 10);
}

TEST_CASE("a queue with a retention rule spawns its partitions holding "
          "frames at a restart, so retention runs on partitions nobody "
          "touches",
          "[sim][virtual][restart][retention]") {
  using namespace std::chrono_literals;
  broker_sim fx;
  core::options_patch o;
  o.retention_s = 60;
  fx.configure("r", o);
  fx.push("r", "a", {"x"});
  fx.push("r", "b", {"y"});
  fx.push("plain", "c", {"z"});
  fx.start();
  fx.run();
  CHECK(fx.metrics->partitions_loaded == 4); // r's Default, a, b; plain's c
  CHECK(fx.metrics->partition_actors == 2);  // a and b
  fx.advance(75s);
  CHECK(fx.metrics->retention_frames_deleted == 2);
  CHECK(fx.metrics->partition_actors == 2);
  // A rule turned on spawns the partitions holding frames, which run it at
  // once, as a live one does.
  fx.configure("plain", o);
  fx.advance(1s); // the retention interval is 10 s
  CHECK(fx.metrics->partition_actors == 3);
  CHECK(fx.metrics->retention_frames_deleted == 3);
}

namespace {

using namespace std::chrono_literals;

/// A fixture whose partitions passivate after 60 s untouched.
struct passivation_sim : broker_sim {
  passivation_sim() {
    partition_idle = 60s;
    start();
    run();
  }

  actors::queue_pop_request autoack(const std::string& group,
                                    const std::string& partition) {
    auto r = pop_request(group, partition);
    r.auto_ack = true;
    return r;
  }

  std::int64_t live() const {
    return metrics->partition_actors.load();
  }
};

} // namespace

TEST_CASE("an idle partition and its cursors stop after the idle time and "
          "come back from their rows at the next contact",
          "[sim][virtual][passivation]") {
  passivation_sim fx;
  fx.push("q", "p", {"a", "b"});
  CHECK(payloads(pop(fx, "q", fx.autoack("g", "p")))
        == std::vector<std::string>{"a", "b"});
  fx.push("q", "p", {"c"});
  CHECK(fx.live() == 1);
  fx.advance(59s);
  CHECK(fx.live() == 1);
  fx.advance(2s);
  CHECK(fx.live() == 0);
  CHECK(fx.metrics->partitions_loaded == 1);
  // Back from its rows: the group goes on after what it consumed, the
  // partition after its last offset.
  auto pushed = fx.push("q", "p", {"d"});
  CHECK(pushed.results[0].result.off == storage::offset{3});
  CHECK(payloads(pop(fx, "q", fx.autoack("g", "p")))
        == std::vector<std::string>{"c", "d"});
  CHECK(fx.live() == 1);
}

TEST_CASE("a partition whose cursor holds a lease is not passivated, and a "
          "lease that expires as the idle time ends is redelivered",
          "[sim][virtual][passivation]") {
  passivation_sim fx;
  core::options_patch o;
  o.lease_time_s = 60; // the lease ends when the idle time does
  fx.configure("q", o);
  fx.push("q", "p", {"a"});
  auto first = pop(fx, "q", fx.pop_request("g", "p"));
  REQUIRE(first.claimed.size() == 1);
  REQUIRE(first.claimed[0].reply.messages.size() == 1);
  fx.advance(60s); // the expiry and the passivation sweep at one instant
  fx.advance(1s);
  auto again = pop(fx, "q", fx.pop_request("g", "p"));
  REQUIRE(again.claimed.size() == 1);
  REQUIRE(again.claimed[0].reply.messages.size() == 1);
  CHECK(again.claimed[0].reply.messages[0].frame.data.payload == "a");
  CHECK(again.claimed[0].reply.messages[0].delivery_count == 2);
  // Held by the new lease past twice the idle time.
  fx.advance(50s);
  CHECK(fx.live() >= 1);
}

TEST_CASE("a seek arriving while a partition passivates is staged and "
          "served, by the same partition or by a new one from its rows",
          "[sim][virtual][passivation]") {
  passivation_sim fx;
  fx.push("q", "p", {"a", "b"});
  CHECK(payloads(pop(fx, "q", fx.autoack("g", "p")))
        == std::vector<std::string>{"a", "b"});
  // The sweep's question goes out; the seek follows it in the same run.
  fx.sched.advance_time(61s);
  core::seek_target start;
  start.to_start = true;
  actors::seek_request s{"g", std::nullopt, start, false};
  auto sk = fx.request_later<actors::seek_reply>(
      fx.broker, actors::seek_atom::value, std::string{"q"}, s);
  fx.run();
  REQUIRE(*sk);
  CHECK_FALSE((*sk)->failure);
  CHECK(payloads(pop(fx, "q", fx.autoack("g", "p")))
        == std::vector<std::string>{"a", "b"});
}

TEST_CASE("a push while its partition's cursor passivates is stored once and "
          "delivered to the group",
          "[sim][virtual][passivation]") {
  passivation_sim fx;
  fx.push("q", "p", {"a"});
  CHECK(payloads(pop(fx, "q", fx.autoack("g", "p")))
        == std::vector<std::string>{"a"});
  fx.sched.advance_time(61s);
  std::vector<actors::broker_push_item> v{{"q", {"p", msg("b")}}};
  auto pushed = fx.request_later<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, v);
  fx.run();
  REQUIRE(*pushed);
  REQUIRE_FALSE((*pushed)->failure);
  CHECK((*pushed)->results[0].result.off == storage::offset{1});
  CHECK(payloads(pop(fx, "q", fx.autoack("g", "p")))
        == std::vector<std::string>{"b"});
  fx.advance(61s);
  CHECK(fx.live() == 0);
}

TEST_CASE("past the cap of live partition actors the least recently used "
          "idle ones stop first",
          "[sim][virtual][passivation]") {
  broker_sim fx;
  fx.partition_idle = 0ms; // only the cap
  fx.max_partition_actors = 3;
  fx.start();
  fx.run();
  for (int i = 0; i < 6; ++i)
    fx.push("q", "p" + std::to_string(i), {"m"});
  fx.advance(2s);
  CHECK(fx.metrics->partition_actors <= 3);
  // The most recent ones stayed.
  fx.push("q", "p0", {"n"});
  fx.advance(2s);
  CHECK(fx.metrics->partition_actors <= 3);
  auto r = pop(fx, "q", fx.pop_request("g", "p5"));
  CHECK(payloads(r) == std::vector<std::string>{"m"});
}
