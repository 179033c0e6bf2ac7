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
