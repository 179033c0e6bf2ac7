// A lease id names the queue that granted it (and so its slot): an extend
// and a release are routed by the id alone, with no directory of leases.

#include <catch2/catch.hpp>

#include "sim/gateway_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;

namespace {

/// Pops one message of `queue` for group "g" and answers its lease id.
std::string leased(gateway_sim& fx, const std::string& queue) {
  fx.push_to(queue, "p", {"m"});
  auto r = fx.pop(fx.pop_of(queue));
  REQUIRE(r);
  REQUIRE(r->messages.size() == 1);
  return r->messages[0].lease_id;
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
    CHECK(queue_of_lease_id(id) == fx.queue_id(q).value);
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
  auto deleted
      = fx.call<bool>([&](auto k) { fx.gw->delete_queue("q", std::move(k)); });
  REQUIRE(deleted);
  REQUIRE(*deleted);
  auto fresh = leased(fx, "q"); // created again by its first push
  CHECK(queue_of_lease_id(fresh) != queue_of_lease_id(old));
  fx.extend_refused(old, 60s, "Lease not found");
  auto gone = fx.call<bool>([&](auto k) { fx.gw->release(old, std::move(k)); });
  REQUIRE(gone);
  CHECK_FALSE(*gone);
  CHECK(fx.extend(fresh, 60s)->success);
}
