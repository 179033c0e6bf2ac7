// The gateway, driven directly: push, pop, ack, extend, release and cancel
// in the wire's identities (partition uuid, transactionId, lease id,
// request token; api.md), through the real broker and store.

#include <catch2/catch.hpp>

#include "sim/gateway_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;

TEST_CASE("a gateway push answers each item with its partition id, offset "
          "and transactionId",
          "[gateway][push]") {
  gateway_sim fx;
  node::push_item a;
  a.queue = "q";
  a.partition = "p";
  a.payload = R"({"n":1})";
  a.transaction_id = "client-1";
  node::push_item b = a;
  b.transaction_id.reset(); // the node makes one
  node::push_item dup = a;  // the same client id again
  auto r = fx.push_items({a, b, dup});
  REQUIRE(r.items.size() == 3);
  CHECK(r.items[0].transaction_id == "client-1");
  CHECK(r.items[0].status == node::push_status::queued);
  CHECK(r.items[0].offset == 0);
  CHECK_FALSE(r.items[1].transaction_id.empty());
  CHECK(r.items[1].transaction_id != "client-1");
  CHECK(r.items[1].offset == 1);
  CHECK(r.items[2].status == node::push_status::duplicate);
  CHECK(r.items[2].offset == 0);
  CHECK(r.items[0].partition_id == fx.partition("q", "p").uuid);
  CHECK(r.items[0].queue == "q");
  CHECK(r.items[0].partition == "p");
}

TEST_CASE("a gateway push of a malformed item stores nothing and names it",
          "[gateway][push]") {
  gateway_sim fx;
  node::push_item bad;
  bad.queue = "bad\nname"; // a control character
  auto r = fx.call<node::push_reply>(
      [&](auto k) { fx.gw->push(node::push_request{{bad}}, std::move(k)); });
  REQUIRE_FALSE(r);
  CHECK(r.err().code == errc::invalid_argument);
  CHECK(r.err().message.find("items[0].queue") != std::string::npos);
}

TEST_CASE("a gateway pop carries partition id, offset, transactionId, lease "
          "id and epoch, and a wall-clock expiry",
          "[gateway][pop]") {
  gateway_sim fx;
  auto pushed = fx.push_to("q", "p", {"a", "b"});
  auto req = fx.pop_of("q");
  auto token = req.token;
  auto r = fx.pop(req);
  REQUIRE(r);
  REQUIRE(r->messages.size() == 2);
  auto& m = r->messages[0];
  CHECK(r->queue == "q");
  CHECK(r->group == "g");
  CHECK(r->partitions_claimed == 1);
  CHECK(m.partition_id == pushed.items[0].partition_id);
  CHECK(m.partition == "p");
  CHECK(m.offset == 0);
  CHECK(m.transaction_id == pushed.items[0].transaction_id);
  CHECK(m.payload == "\"a\"");
  CHECK(m.lease_id == fx.lease_of("q", token)); // the token, behind q's id
  CHECK(m.lease_epoch == 1);
  CHECK(m.delivery_count == 1);
  // The default leaseTime (300 s) from now, on the wall clock.
  CHECK(m.lease_expires_at == fx.wall() + 300'000'000);
}

TEST_CASE("a gateway pop of a named partition and an empty pop's reason",
          "[gateway][pop]") {
  gateway_sim fx;
  fx.push_to("q", "a", {"x"});
  fx.push_to("q", "b", {"y"});
  auto req = fx.pop_of("q");
  req.partition = "b";
  auto r = fx.pop(req);
  REQUIRE(r);
  REQUIRE(r->messages.size() == 1);
  CHECK(r->messages[0].partition == "b");
  auto again = fx.pop_of("q");
  again.partition = "b";
  auto held = fx.pop(again);
  REQUIRE(held);
  CHECK(held->messages.empty());
  CHECK(held->reason == empty_reason::lease_held);
}

TEST_CASE("a gateway pop by namespace and task serves a queue of it",
          "[gateway][pop][namespace]") {
  gateway_sim fx;
  auto c = fx.call<node::configure_reply>([&](auto k) {
    node::configure_request req;
    req.queue = "jobs";
    req.name_space = "billing";
    req.task = "invoice";
    fx.gw->configure(std::move(req), std::move(k));
  });
  REQUIRE(c);
  fx.push_to("jobs", "Default", {"j"});
  node::pop_request req;
  req.token = fx.gw->new_token();
  req.name_space = "billing";
  req.task = "invoice";
  req.group = "g";
  auto r = fx.pop(req);
  REQUIRE(r);
  CHECK(r->queue == "jobs");
  REQUIRE(r->messages.size() == 1);
  CHECK(r->messages[0].queue == "jobs");
  CHECK(r->messages[0].partition_id == c->default_partition_id);
  CHECK(r->messages[0].lease_id == fx.lease_of("jobs", req.token));
}

TEST_CASE("a gateway ack by partition id and transactionId commits the frame",
          "[gateway][ack]") {
  gateway_sim fx;
  fx.push_to("q", "p", {"a", "b"});
  auto r = fx.pop(fx.pop_of("q"));
  REQUIRE(r);
  REQUIRE(r->messages.size() == 2);
  node::ack_request req;
  req.group = "g";
  node::ack_item a;
  a.partition_id = r->messages[1].partition_id;
  a.transaction_id = r->messages[1].transaction_id; // the second only
  req.items.push_back(a);
  auto acked = fx.ack(req);
  REQUIRE(acked);
  REQUIRE(acked->items.size() == 1);
  CHECK(acked->items[0].success);
  CHECK(acked->items[0].queue == "q");
  CHECK(acked->items[0].partition == "p");
  CHECK_FALSE(acked->items[0].lease_released);
  CHECK(fx.cursor_on(fx.cursors(), "p").committed == -1); // 0 is open
  a.transaction_id = r->messages[0].transaction_id;
  req.items = {a};
  acked = fx.ack(req);
  REQUIRE(acked);
  CHECK(acked->items[0].success);
  CHECK(acked->items[0].lease_released);
  CHECK(fx.cursor_on(fx.cursors(), "p").committed == 1);
}

TEST_CASE("one gateway ack list settles every partition of a lease",
          "[gateway][ack]") {
  gateway_sim fx;
  fx.push_to("q", "a", {"a0", "a1"});
  fx.push_to("q", "b", {"b0"});
  fx.push_to("q", "c", {"c0"});
  auto req = fx.pop_of("q");
  req.partitions = 3;
  auto r = fx.pop(req);
  REQUIRE(r);
  CHECK(r->partitions_claimed == 3);
  REQUIRE(r->messages.size() == 4);
  for (auto& m : r->messages)
    CHECK(m.lease_id
          == fx.lease_of("q", req.token)); // one lease over three partitions
  auto acked = fx.ack_all(*r);
  REQUIRE(acked);
  REQUIRE(acked->items.size() == 4);
  std::size_t released = 0;
  for (auto& item : acked->items) {
    CHECK(item.success);
    released += item.lease_released ? 1 : 0;
  }
  CHECK(released == 3); // the last ack on each partition ends it there
  auto cs = fx.cursors();
  CHECK(fx.cursor_on(cs, "a").committed == 1);
  CHECK(fx.cursor_on(cs, "b").committed == 0);
  CHECK(fx.cursor_on(cs, "c").committed == 0);
  // The lease ended everywhere: an extend finds it no more.
  fx.extend_refused(fx.lease_of("q", req.token), 60s, "Lease not found");
}

TEST_CASE("gateway ack items that name nothing known answer api.md's errors",
          "[gateway][ack]") {
  gateway_sim fx;
  fx.push_to("q", "p", {"a"});
  auto r = fx.pop(fx.pop_of("q"));
  REQUIRE(r);
  node::ack_request req;
  req.group = "g";
  node::ack_item unknown_partition;
  unknown_partition.partition_id = "no-such-uuid";
  unknown_partition.transaction_id = r->messages[0].transaction_id;
  node::ack_item unknown_txid;
  unknown_txid.partition_id = r->messages[0].partition_id;
  unknown_txid.transaction_id = "not-delivered";
  node::ack_item wrong_lease;
  wrong_lease.partition_id = r->messages[0].partition_id;
  wrong_lease.transaction_id = r->messages[0].transaction_id;
  wrong_lease.lease_id = "another";
  req.items = {unknown_partition, unknown_txid, wrong_lease};
  auto acked = fx.ack(req);
  REQUIRE(acked);
  REQUIRE(acked->items.size() == 3);
  CHECK(acked->items[0].error == "Message not found");
  CHECK(acked->items[0].queue.empty());
  CHECK(acked->items[1].error == "Message not in lease");
  CHECK(acked->items[2].error == "Invalid or expired lease");
  for (auto& item : acked->items)
    CHECK_FALSE(item.success);
  CHECK(fx.cursor_on(fx.cursors(), "p").committed == -1);
}

TEST_CASE("a gateway ack naming neither transactionId nor offset is refused "
          "whole",
          "[gateway][ack]") {
  gateway_sim fx;
  node::ack_request req;
  node::ack_item a;
  a.partition_id = "x";
  req.items = {a};
  auto acked = fx.ack(req);
  REQUIRE_FALSE(acked);
  CHECK(acked.err().code == errc::invalid_argument);
  CHECK(acked.err().message == "acknowledgments[0].transactionId is required");
}

TEST_CASE("a gateway extend by lease id moves the lease on all its partitions",
          "[gateway][extend]") {
  gateway_sim fx;
  auto [req, r] = fx.lease_over({"a", "b"});
  fx.advance(200s); // 100 s of the 300 s lease left
  auto ext = fx.extend(fx.lease_of("q", req.token), 600s);
  REQUIRE(ext);
  CHECK(ext->success);
  CHECK(ext->partitions.size() == 2);
  CHECK(ext->expires_at == fx.wall() + 600'000'000);
  auto cs = fx.cursors();
  for (auto& name : {"a", "b"}) {
    auto& c = fx.cursor_on(cs, name);
    REQUIRE(c.lease);
    CHECK(c.lease->id == fx.lease_of("q", req.token));
    CHECK(c.lease->expires_at == fx.wall() + 600'000'000);
  }
  // Past the old expiry the lease still holds: its acks succeed.
  fx.advance(200s);
  fx.ack_all_succeed(r);
}

TEST_CASE("a gateway extend of an unknown lease answers Lease not found",
          "[gateway][extend]") {
  gateway_sim fx;
  fx.extend_refused("nope", 60s, "Lease not found");
}

TEST_CASE("a gateway release by lease id frees every partition of the lease "
          "without counting a delivery",
          "[gateway][release]") {
  gateway_sim fx;
  fx.push_to("q", "a", {"a0"});
  fx.push_to("q", "b", {"b0"});
  auto req = fx.pop_of("q");
  req.partitions = 2;
  auto r = fx.pop(req);
  REQUIRE(r);
  REQUIRE(r->messages.size() == 2);
  auto released = fx.call<bool>([&](auto k) {
    fx.gw->release(fx.lease_of("q", req.token), std::move(k));
  });
  REQUIRE(released);
  CHECK(*released);
  auto next = fx.pop_of("q");
  next.partitions = 2;
  auto again = fx.pop(next);
  REQUIRE(again);
  REQUIRE(again->messages.size() == 2);
  for (auto& m : again->messages)
    CHECK(m.delivery_count == 1); // the unwritten delivery did not count
  auto twice = fx.call<bool>([&](auto k) {
    fx.gw->release(fx.lease_of("q", req.token), std::move(k));
  });
  REQUIRE(twice);
  CHECK_FALSE(*twice);
}

TEST_CASE("a gateway cancel answers the parked pop with that token at once",
          "[gateway][cancel]") {
  gateway_sim fx;
  auto [req, parked] = fx.waiting_pop(); // the default timeout: 30 s
  fx.run();
  CHECK_FALSE(*parked);
  fx.gw->cancel(req.token);
  fx.run();
  REQUIRE(*parked);
  REQUIRE(**parked);
  CHECK((**parked)->messages.empty());
  // It leased nothing: a push now goes to the next pop.
  fx.push_to("q", "Default", {"x"});
  auto r = fx.pop(fx.pop_of("q"));
  REQUIRE(r);
  CHECK(r->messages.size() == 1);
  fx.gw->cancel(req.token); // answered already: nothing happens
  fx.run();
}

TEST_CASE("a parked gateway pop is woken by a push through the gateway",
          "[gateway][pop][long-poll]") {
  gateway_sim fx;
  auto [req, parked] = fx.waiting_pop();
  fx.run();
  CHECK_FALSE(*parked);
  fx.push_to("q", "Default", {"x"});
  REQUIRE(*parked);
  REQUIRE(**parked);
  REQUIRE((**parked)->messages.size() == 1);
  CHECK((**parked)->messages[0].payload == "\"x\"");
}

TEST_CASE("a gateway extend after the lease expired answers Lease already "
          "expired, an extend out of range is refused",
          "[gateway][extend]") {
  gateway_sim fx;
  auto [req, r] = fx.lease_over({"a"});
  auto bad = fx.extend(fx.lease_of("q", req.token), 0s);
  REQUIRE_FALSE(bad);
  CHECK(bad.err().code == errc::invalid_argument);
  CHECK(bad.err().message == "Extend seconds out of range");
  fx.advance(301s); // past the 300 s lease
  fx.extend_refused(fx.lease_of("q", req.token), 60s, "Lease already expired");
}

TEST_CASE("gateway extends keep a lease past its first and second expiry",
          "[gateway][extend]") {
  gateway_sim fx;
  auto [req, r] = fx.lease_over({"a", "b"});
  fx.advance(250s);
  REQUIRE(fx.extend(fx.lease_of("q", req.token), 100s)->success); // until 350 s
  fx.advance(80s);                                                // 330 s
  auto second = fx.extend(fx.lease_of("q", req.token), 100s);     // until 430 s
  REQUIRE(second);
  CHECK(second->success);
  CHECK(second->expires_at == fx.wall() + 100'000'000);
  fx.advance(60s); // 390 s: past both earlier expiries
  fx.ack_all_succeed(r);
}

TEST_CASE("a gateway pop whose token is in flight is refused",
          "[gateway][pop]") {
  gateway_sim fx;
  auto [req, parked] = fx.waiting_pop();
  auto twin = fx.pop(req);
  REQUIRE_FALSE(twin);
  CHECK(twin.err().code == errc::invalid_argument);
  fx.gw->cancel(req.token); // the first is still the token's
  fx.run();
  REQUIRE(*parked);
  CHECK((**parked)->messages.empty());
}

TEST_CASE("after cancel_all a long-poll pop is answered empty at once, not "
          "parked for its timeout (a node shutting down)",
          "[gateway][cancel][shutdown]") {
  gateway_sim fx;
  auto [first, parked] = fx.waiting_pop();
  fx.run();
  CHECK(fx.gw->cancel_all() == 1);
  fx.run();
  REQUIRE(*parked);
  CHECK((**parked)->messages.empty());
  // A pop that arrives after the door began to drain (it passed the
  // router's check just before) does not park: answered at once.
  auto [late, answer] = fx.waiting_pop();
  fx.run();
  REQUIRE(*answer);
  REQUIRE(**answer);
  CHECK((**answer)->messages.empty());
  CHECK(fx.gw->pops_in_flight() == 0);
}

TEST_CASE("a gateway cancel sent right after its pop, before the pop reached "
          "the broker, still answers it at once",
          "[gateway][cancel]") {
  gateway_sim fx;
  auto [req, parked] = fx.waiting_pop();
  fx.gw->cancel(req.token); // nothing has run yet
  fx.run();
  REQUIRE(*parked);
  REQUIRE(**parked);
  CHECK((**parked)->messages.empty());
  fx.push_to("q", "Default", {"x"}); // it leased nothing
  auto r = fx.pop(fx.pop_of("q"));
  REQUIRE(r);
  CHECK(r->messages.size() == 1);
}
