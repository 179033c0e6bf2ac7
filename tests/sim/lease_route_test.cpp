// A lease id names the queue that granted it, a partition uuid the queue
// that owns it (and so each its slot): an extend, a release, an ack and a
// find are routed by the id alone, with no node-wide directory.

#include <catch2/catch.hpp>

#include "sim/gateway_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;

namespace {

/// Pushes one message to (`queue`, "p") and pops it for group "g".
node::pop_reply one_popped(gateway_sim& fx, const std::string& queue) {
  fx.push_to(queue, "p", {"m"});
  auto r = fx.pop(fx.pop_of(queue));
  REQUIRE(r);
  REQUIRE(r->messages.size() == 1);
  return *r;
}

/// The lease id of one message of `queue` popped for group "g".
std::string leased(gateway_sim& fx, const std::string& queue) {
  return one_popped(fx, queue).messages[0].lease_id;
}

/// Deletes queue `queue` (it must have existed).
void delete_queue(gateway_sim& fx, const std::string& queue) {
  auto deleted = fx.call<bool>(
      [&](auto k) { fx.gw->delete_queue(queue, std::move(k)); });
  REQUIRE(deleted);
  REQUIRE(*deleted);
}

} // namespace

TEST_CASE("a lease id carries its queue's id and slot: extends and releases "
          "reach that queue alone, across slots and in a shared {tag} slot",
          "[gateway][extend][slot]") {
  gateway_sim fx;
  std::vector<std::string> names{"orders{eu}", "refunds{eu}", "audit"};
  auto slots = fx.store.store->slot_count();
  REQUIRE(slot_of(names[0], slots) == slot_of(names[1], slots));
  REQUIRE(slot_of(names[0], slots) != slot_of(names[2], slots));
  std::vector<std::string> leases;
  for (auto& q : names) {
    auto id = leased(fx, q);
    CHECK(queue_of_id(id) == fx.queue_id(q).value);
    CHECK(slot_of_uuid(id) == slot_of(q, slots));
    CHECK(id.size() == 36); // UUID-shaped, as Queen's clients expect
    leases.push_back(id);
  }
  for (auto& id : leases) {
    auto ext = fx.extend(id, 600s);
    REQUIRE(ext);
    CHECK(ext->success);
    CHECK(ext->partitions == std::vector<std::string>{"p"});
  }
  // A release reaches only its own queue: the others' leases still hold.
  auto released
      = fx.call<bool>([&](auto k) { fx.gw->release(leases[0], std::move(k)); });
  REQUIRE(released);
  CHECK(*released);
  fx.extend_refused(leases[0], 60s, "Lease not found");
  CHECK(fx.extend(leases[1], 60s)->success);
  CHECK(fx.extend(leases[2], 60s)->success);
}

TEST_CASE("a lease of a queue deleted and created again under its name is "
          "not found: the new queue has another id",
          "[gateway][extend][slot]") {
  gateway_sim fx;
  auto old = leased(fx, "q");
  delete_queue(fx, "q");
  auto fresh = leased(fx, "q"); // created again by its first push
  CHECK(queue_of_id(fresh) != queue_of_id(old));
  fx.extend_refused(old, 60s, "Lease not found");
  auto gone = fx.call<bool>([&](auto k) { fx.gw->release(old, std::move(k)); });
  REQUIRE(gone);
  CHECK_FALSE(*gone);
  CHECK(fx.extend(fresh, 60s)->success);
}

namespace {

/// A find by (partition uuid, transactionId).
expected<node::message> find(gateway_sim& fx, const std::string& partition_id,
                             const std::string& txid) {
  return fx.call<node::message>([&](auto k) {
    fx.gw->find(node::find_request{partition_id, txid}, std::move(k));
  });
}

} // namespace

TEST_CASE("a partition uuid carries its queue's id and slot: one ack list "
          "across slots and a shared {tag} slot reaches each queue by the "
          "uuid alone, and so does a find",
          "[gateway][ack][slot]") {
  gateway_sim fx;
  std::vector<std::string> names{"orders{eu}", "refunds{eu}", "audit"};
  auto slots = fx.store.store->slot_count();
  REQUIRE(slot_of(names[0], slots) == slot_of(names[1], slots));
  REQUIRE(slot_of(names[0], slots) != slot_of(names[2], slots));
  node::pop_reply all;
  for (auto& q : names) {
    fx.push_to(q, "p", {"m1", "m2"});
    auto r = fx.pop(fx.pop_of(q));
    REQUIRE(r);
    REQUIRE(r->messages.size() == 2);
    for (auto& m : r->messages) {
      CHECK(queue_of_id(m.partition_id) == fx.queue_id(q).value);
      CHECK(slot_of_uuid(m.partition_id) == slot_of(q, slots));
      all.messages.push_back(m);
    }
  }
  auto& some = all.messages[3]; // refunds{eu}
  auto found = find(fx, some.partition_id, some.transaction_id);
  REQUIRE(found);
  CHECK(found->queue == "refunds{eu}");
  CHECK(found->partition == some.partition);
  CHECK(found->payload == some.payload);
  auto acked = fx.ack_all(all); // one list over the three queues
  REQUIRE(acked);
  REQUIRE(acked->items.size() == all.messages.size());
  for (std::size_t i = 0; i < all.messages.size(); ++i) {
    CHECK(acked->items[i].success);
    CHECK(acked->items[i].queue == all.messages[i].queue);
    CHECK(acked->items[i].partition == all.messages[i].partition);
    // Each queue's second ack ends its lease, which leaves that queue's
    // lease directory: an extend of it finds nothing.
    CHECK(acked->items[i].lease_released == (i % 2 == 1));
  }
  for (std::size_t i = 0; i < all.messages.size(); i += 2)
    fx.extend_refused(all.messages[i].lease_id, 60s, "Lease not found");
  // Acked means acked: nothing is left for the group.
  for (auto& q : names)
    CHECK(fx.pop(fx.pop_of(q))->messages.empty());
}

TEST_CASE("an ack by partition uuid that ends a lease wakes the group's "
          "parked pop",
          "[gateway][ack][long-poll]") {
  gateway_sim fx;
  auto [req, parked] = fx.waiting_pop(); // "q" configured, nothing there
  fx.run();
  CHECK_FALSE(*parked);
  fx.push_to("q", "Default", {"a", "b"}); // the parked pop takes both
  REQUIRE(*parked);
  REQUIRE(**parked);
  auto first = ***parked;
  REQUIRE(first.messages.size() == 2);
  // A second waiting pop parks: the only partition is leased.
  auto again = fx.pop_of("q");
  again.wait = true;
  auto second = fx.call_later<node::pop_reply>(
      [&](auto k) { fx.gw->pop(again, std::move(k)); });
  fx.run();
  CHECK_FALSE(*second);
  fx.push_to("q", "Default", {"c"}); // behind the lease: still parked
  CHECK_FALSE(*second);
  fx.ack_all_succeed(first); // by uuid; the lease ends and wakes it
  REQUIRE(*second);
  REQUIRE(**second);
  REQUIRE((**second)->messages.size() == 1);
  CHECK((**second)->messages[0].payload == "\"c\"");
}

TEST_CASE("a partition uuid of a queue deleted and created again under its "
          "name is not found: the new queue has another id",
          "[gateway][ack][slot]") {
  gateway_sim fx;
  auto popped = one_popped(fx, "q");
  auto old = popped.messages[0];
  delete_queue(fx, "q");
  auto fresh = one_popped(fx, "q"); // created again, with another id
  CHECK(queue_of_id(fresh.messages[0].partition_id)
        != queue_of_id(old.partition_id));
  auto stale = fx.ack_all(popped);
  REQUIRE(stale);
  REQUIRE(stale->items.size() == 1);
  CHECK_FALSE(stale->items[0].success);
  CHECK(stale->items[0].error == "Message not found");
  CHECK(stale->items[0].queue.empty());
  CHECK_FALSE(find(fx, old.partition_id, old.transaction_id));
  // A uuid of a live queue that is none of its partitions: not found.
  auto forged = old;
  forged.partition_id = fresh.messages[0].partition_id.substr(0, 14)
                        + old.partition_id.substr(14);
  node::pop_reply one;
  one.messages.push_back(forged);
  auto refused = fx.ack_all(one);
  REQUIRE(refused);
  CHECK(refused->items[0].error == "Message not found");
  CHECK(fx.ack_all(fresh)->items[0].success);
}
