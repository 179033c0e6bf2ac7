// Long poll (semantics.md §3): a parked pop is answered as soon as a frame
// becomes deliverable for its group — also by deadlines no push announces
// (lease expiry, retryDelay, delayedProcessing, windowBuffer) — and the
// server-wide caps on pops.

#include "sim/broker_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct poll_fixture : broker_sim {
  void configure(core::options_patch opts) {
    broker_sim::configure("q", std::move(opts));
  }

  void push(std::string payload) {
    std::vector<actors::broker_push_item> v{{"q", {"Default", msg(payload)}}};
    auto r = request<actors::queue_push_reply>(broker, actors::push_atom::value,
                                               v);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
  }

  actors::queue_pop_request req(bool wait = false) {
    actors::queue_pop_request r;
    r.group = "g";
    r.lease_id = "L" + std::to_string(++leases);
    r.batch = 10;
    r.wait = wait;
    r.timeout = 120s;
    return r;
  }

  actors::queue_pop_reply pop(actors::queue_pop_request r) {
    auto out = request<actors::queue_pop_reply>(broker, actors::pop_atom::value,
                                                std::string{"q"}, r);
    REQUIRE(out);
    return *out;
  }

  std::shared_ptr<std::optional<actors::queue_pop_reply>> park() {
    auto p = request_later<actors::queue_pop_reply>(
        broker, actors::pop_atom::value, std::string{"q"}, req(true));
    run();
    REQUIRE_FALSE(*p);
    return p;
  }

  int leases = 0;
};

} // namespace

TEST_CASE("a parked pop wakes when the lease it waits for expires",
          "[sim][long-poll][lease]") {
  poll_fixture fx;
  core::options_patch o;
  o.lease_time_s = 30;
  fx.configure(o);
  fx.push("a");
  REQUIRE(fx.pop(fx.req()).claimed.size() == 1);
  auto parked = fx.park();
  fx.advance(30s - 1ms);
  CHECK_FALSE(*parked);
  fx.advance(1ms);
  REQUIRE(*parked);
  REQUIRE((*parked)->claimed.size() == 1);
  auto& m = (*parked)->claimed[0].reply.messages.at(0);
  CHECK(m.frame.data.payload == "a");
  CHECK(m.delivery_count == 2);
}

TEST_CASE("a parked pop wakes when a retryDelay ends", "[sim][long-poll]") {
  poll_fixture fx;
  core::options_patch o;
  o.retry_delay_ms = 5000;
  fx.configure(o);
  fx.push("a");
  auto first = fx.pop(fx.req());
  REQUIRE(first.claimed.size() == 1);
  auto parked = fx.park();
  ack_request fail;
  fail.lease_id = first.claimed[0].reply.lease->id;
  fail.off = offset{0};
  fail.status = ack_status::failed;
  auto acked
      = fx.ack_located(first.claimed[0].partition_uuid, "g", std::vector{fail});
  REQUIRE(acked);
  REQUIRE(acked->at(0).lease_released);
  // The released lease woke the pop, but the retry delay holds the frame.
  CHECK_FALSE(*parked);
  fx.advance(5s - 1ms);
  CHECK_FALSE(*parked);
  fx.advance(1ms);
  REQUIRE(*parked);
  REQUIRE((*parked)->claimed.size() == 1);
  CHECK((*parked)->claimed[0].reply.messages.at(0).delivery_count == 2);
}

TEST_CASE("a parked pop wakes when a delayedProcessing frame becomes visible",
          "[sim][long-poll][visibility]") {
  poll_fixture fx;
  core::options_patch o;
  o.delayed_processing_s = 10;
  fx.configure(o);
  fx.push("a");
  CHECK(fx.pop(fx.req()).reason == empty_reason::delayed);
  auto parked = fx.park();
  fx.advance(10s - 1ms);
  CHECK_FALSE(*parked);
  fx.advance(1ms);
  REQUIRE(*parked);
  REQUIRE((*parked)->claimed.size() == 1);
}

TEST_CASE("a parked pop wakes when the windowBuffer passes",
          "[sim][long-poll][visibility]") {
  poll_fixture fx;
  core::options_patch o;
  o.window_buffer_s = 5;
  fx.configure(o);
  fx.push("a");
  auto parked = fx.park();
  fx.advance(2s);
  fx.push("b"); // the burst goes on: the window restarts from b
  CHECK_FALSE(*parked);
  fx.advance(5s - 1ms);
  CHECK_FALSE(*parked);
  fx.advance(1ms);
  REQUIRE(*parked);
  REQUIRE((*parked)->claimed.size() == 1);
  CHECK((*parked)->claimed[0].reply.messages.size() == 2);
}

TEST_CASE("a parked pop with nothing on the way waits until its timeout",
          "[sim][long-poll]") {
  poll_fixture fx;
  fx.configure({});
  auto parked = fx.park();
  fx.advance(120s - 1ms);
  CHECK_FALSE(*parked);
  fx.advance(1ms);
  REQUIRE(*parked);
  CHECK((*parked)->claimed.empty());
  CHECK_FALSE((*parked)->failure);
}

TEST_CASE("pops beyond pop.maxParked across the server are refused as busy",
          "[sim][long-poll][caps]") {
  poll_fixture fx;
  fx.pop_limits.max_parked = 2;
  fx.start();
  fx.configure({});
  actors::configure_request other;
  other.queue = "other";
  REQUIRE(fx.request<actors::configure_reply>(
      fx.broker, actors::configure_atom::value, other));
  auto p1 = fx.park();
  auto p2 = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"other"}, fx.req(true));
  fx.run();
  CHECK_FALSE(*p2);
  auto third = fx.pop(fx.req(true));
  REQUIRE(third.failure);
  CHECK(third.failure->code == errc::unavailable);
  CHECK(third.failure->message == "Server busy: too many parked pops");
  // A push answers one; a slot is free again.
  fx.push("a");
  REQUIRE(*p1);
  CHECK((*p1)->claimed.size() == 1);
  auto p3 = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, fx.req(true));
  fx.run();
  CHECK_FALSE(*p3); // parked, not refused
}

TEST_CASE("pop caps refuse a batch, partitions or timeout out of range and "
          "cap the response bytes",
          "[sim][pop][caps][bad-input]") {
  poll_fixture fx;
  fx.pop_limits.max_batch = 100;
  fx.pop_limits.max_partitions = 4;
  fx.pop_limits.max_timeout_ms = 10'000;
  fx.pop_limits.max_bytes = 10;
  fx.start();
  fx.configure({});
  auto r = fx.req();
  r.batch = 101;
  CHECK(fx.pop(r).failure->message
        == "batch must be between 1 and 100, got 101");
  r.batch = 0;
  CHECK(fx.pop(r).failure->code == errc::invalid_argument);
  r = fx.req();
  r.partitions = 5;
  CHECK(fx.pop(r).failure->message
        == "partitions must be between 1 and 4, got 5");
  r.partition = "Default"; // a named partition ignores `partitions`
  CHECK_FALSE(fx.pop(r).failure);
  r = fx.req(true);
  r.timeout = 10'001ms;
  CHECK(fx.pop(r).failure->message
        == "timeout must be between 0 and 10000 ms, got 10001");
  // 4-byte payloads, 10-byte budget: two frames per response.
  for (int i = 0; i < 5; ++i)
    fx.push("abcd");
  auto big = fx.req();
  auto out = fx.pop(big);
  REQUIRE(out.claimed.size() == 1);
  CHECK(out.claimed[0].reply.messages.size() == 2);
}

TEST_CASE("an unwritable pop response releases its lease at once and counts "
          "no delivery",
          "[sim][lease][release]") {
  poll_fixture fx;
  fx.configure({});
  fx.push("a");
  auto first = fx.pop(fx.req());
  REQUIRE(first.claimed.size() == 1);
  auto lease = first.claimed[0].reply.lease->id;
  auto release = [&](const std::string& id) {
    auto r = fx.request<bool>(fx.broker, actors::release_atom::value, id);
    REQUIRE(r);
    return *r;
  };
  CHECK_FALSE(release("not-the-lease"));
  CHECK(release(lease));
  CHECK_FALSE(release(lease)); // already gone
  auto again = fx.pop(fx.req());
  REQUIRE(again.claimed.size() == 1);
  CHECK(again.claimed[0].reply.messages[0].delivery_count == 1);
  // The late ack of the released lease fails.
  ack_request a;
  a.lease_id = lease;
  a.off = offset{0};
  auto acked
      = fx.ack_located(first.claimed[0].partition_uuid, "g", std::vector{a});
  REQUIRE(acked);
  CHECK(acked->at(0).error == ack_error::invalid_lease);
}

TEST_CASE("a cancelled parked pop is answered, frees its slot and releases "
          "nothing it did not take",
          "[sim][long-poll][cancel]") {
  poll_fixture fx;
  fx.pop_limits.max_parked = 1;
  fx.start();
  fx.configure({});
  fx.push("a");
  auto held = fx.pop(fx.req()); // g holds the only frame's lease
  REQUIRE(held.claimed.size() == 1);
  auto waiting = fx.req(true);
  auto parked = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, waiting);
  fx.run();
  CHECK_FALSE(*parked);
  CHECK(fx.pop(fx.req(true)).failure); // the one slot is taken
  caf::anon_send(fx.broker, actors::cancel_atom::value, waiting.lease_id,
                 std::optional<std::string>{"q"});
  fx.run();
  REQUIRE(*parked);
  CHECK((*parked)->claimed.empty());
  // The held lease is untouched: its ack succeeds.
  ack_request a;
  a.lease_id = held.claimed[0].reply.lease->id;
  a.off = offset{0};
  auto acked
      = fx.ack_located(held.claimed[0].partition_uuid, "g", std::vector{a});
  REQUIRE(acked);
  CHECK(acked->at(0).error == ack_error::none);
  // The slot is free again.
  auto next = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, fx.req(true));
  fx.run();
  CHECK_FALSE(*next);
}

TEST_CASE("a push that lands while a pop is still running wakes it: no "
          "wake-up is lost",
          "[sim][long-poll][race]") {
  poll_fixture fx;
  fx.configure({});
  auto push_to = [&](const std::string& partition, const std::string& payload) {
    std::vector<actors::broker_push_item> v{{"q", {partition, msg(payload)}}};
    return fx.request_later<actors::queue_push_reply>(
        fx.broker, actors::push_atom::value, v);
  };
  push_to("A", "a");
  push_to("B", "b");
  fx.run();
  // g takes and completes both, so both partitions are empty for it.
  auto both = fx.req();
  both.partitions = 3;
  auto first = fx.pop(both);
  REQUIRE(first.claimed.size() == 2);
  for (auto& c : first.claimed) {
    ack_request a;
    a.lease_id = c.reply.lease->id;
    a.off = offset{0};
    REQUIRE(fx.ack_located(c.partition_uuid, "g", std::vector{a}));
  }
  // The pop starts its run over Default, A, B; the push to A is durable
  // while it is still asking.
  auto waiting = fx.req(true);
  waiting.partitions = 3;
  auto parked = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, waiting);
  push_to("A", "c");
  fx.run();
  REQUIRE(*parked);
  REQUIRE((*parked)->claimed.size() == 1);
  CHECK((*parked)->claimed[0].reply.messages.at(0).frame.data.payload == "c");
}

TEST_CASE("a cancel that arrives while the pop is still running answers it "
          "instead of parking it",
          "[sim][long-poll][cancel]") {
  poll_fixture fx;
  fx.pop_limits.max_parked = 1;
  fx.start();
  fx.configure({});
  auto waiting = fx.req(true);
  auto parked = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, waiting);
  // The requester sends the pop, the broker hands it to the queue, the
  // queue starts its run; then the client leaves.
  for (int i = 0; i < 3; ++i)
    fx.sched.run_once();
  caf::anon_send(fx.broker, actors::cancel_atom::value, waiting.lease_id,
                 std::optional<std::string>{"q"});
  fx.run();
  REQUIRE(*parked);
  CHECK((*parked)->claimed.empty());
  // Its slot was never taken: another pop parks.
  auto next = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, fx.req(true));
  fx.run();
  CHECK_FALSE(*next);
}

TEST_CASE("a push wakes only the parked pops it can serve: pops parked on "
          "another partition cost it nothing",
          "[sim][long-poll][bounded]") {
  poll_fixture fx;
  fx.configure({});
  auto push_to = [&](const std::string& part) {
    std::vector<actors::broker_push_item> v{{"q", {part, msg("x")}}};
    auto r = fx.request_later<actors::queue_push_reply>(
        fx.broker, actors::push_atom::value, v);
    auto events = fx.run(); // everything the push set off
    REQUIRE(*r);
    REQUIRE_FALSE((*r)->failure);
    return events;
  };
  push_to("A");
  push_to("B");
  auto on_a = [&](bool wait) {
    auto r = fx.req(wait);
    r.partition = "A";
    return r;
  };
  auto consumed = on_a(false);
  consumed.auto_ack = true;
  REQUIRE(fx.pop(consumed).claimed.size() == 1); // A is empty for g now
  std::vector<std::shared_ptr<std::optional<actors::queue_pop_reply>>> parked;
  auto park_on_a = [&](int n) {
    for (int i = 0; i < n; ++i)
      parked.push_back(fx.request_later<actors::queue_pop_reply>(
          fx.broker, actors::pop_atom::value, std::string{"q"}, on_a(true)));
    fx.run();
  };
  park_on_a(1);
  auto with_one = push_to("B");
  park_on_a(99);
  auto with_hundred = push_to("B");
  INFO("events run by a push to B with 1 and with 100 pops parked on A: "
       << with_one << ", " << with_hundred);
  CHECK(with_hundred == with_one);
  for (auto& p : parked)
    CHECK_FALSE(*p); // still waiting: nothing came for them
  // A push to A serves them: the first parked gets the frame.
  push_to("A");
  REQUIRE(*parked[0]);
  CHECK((*parked[0])->claimed.size() == 1);
}
