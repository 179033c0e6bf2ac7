// The gateway as a restricted token sees it (protocol/api/scoped.hpp),
// over the real broker and store under the test coordinator: acks split
// between covered and uncovered queues, ids resolved through the queue
// listing, a namespace pop held to the queues claim, extend held to the
// groups claim.

#include <catch2/catch.hpp>

#include "protocol/api/scoped.hpp"
#include "sim/gateway_sim.hpp"

using namespace spool;
using namespace spool::test;

namespace {

struct scoped_sim : gateway_sim {
  std::shared_ptr<api::queue_directory> dir
      = std::make_shared<api::queue_directory>();

  /// The gateway for a token with these claims (none: that claim unset).
  api::scoped_gateway scoped(std::optional<std::vector<std::string>> queues,
                             std::optional<std::vector<std::string>> groups
                             = std::nullopt) {
    auto ctx = std::make_shared<api::scope_context>();
    ctx->who.granted = auth::role::admin;
    ctx->who.queue_prefixes = std::move(queues);
    ctx->who.groups = std::move(groups);
    return api::scoped_gateway{*gw, dir, std::move(ctx)};
  }

  node::ack_item completed(const node::message& m) {
    node::ack_item a;
    a.partition_id = m.partition_id;
    a.transaction_id = m.transaction_id;
    a.lease_id = m.lease_id;
    return a;
  }
};

} // namespace

TEST_CASE("a restricted ack applies the items of covered queues and answers "
          "the others as unknown, in the client's order",
          "[gateway][scope]") {
  scoped_sim fx;
  fx.push_to("a.q", "p", {"a0"});
  fx.push_to("b.q", "p", {"b0"});
  auto a = fx.pop(fx.pop_of("a.q"));
  auto b = fx.pop(fx.pop_of("b.q"));
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(a->messages.size() == 1);
  REQUIRE(b->messages.size() == 1);
  // The directory learned nothing yet: the ids are read from the listing.
  auto gw = fx.scoped(std::vector<std::string>{"a."});
  node::ack_request req;
  req.group = "g";
  req.items = {fx.completed(b->messages[0]), fx.completed(a->messages[0]),
               fx.completed(b->messages[0])};
  auto r = fx.call<node::ack_reply>(
      [&](auto k) { gw.ack(std::move(req), std::move(k)); });
  REQUIRE(r);
  REQUIRE(r->items.size() == 3);
  CHECK_FALSE(r->items[0].success);
  CHECK(r->items[0].error == "Message not found");
  CHECK(r->items[1].success);
  CHECK(r->items[1].queue == "a.q");
  CHECK_FALSE(r->items[2].success);
  // b.q's message was not touched: its lease still settles it.
  node::ack_request again;
  again.group = "g";
  again.items = {fx.completed(b->messages[0])};
  auto direct = fx.ack(std::move(again));
  REQUIRE(direct);
  CHECK(direct->items[0].success);
}

TEST_CASE("a token with only a groups claim acks by id without the queue "
          "listing, and only as its groups",
          "[gateway][scope]") {
  scoped_sim fx;
  fx.push_to("c.q", "p", {"c0"});
  auto popped = fx.pop(fx.pop_of("c.q"));
  REQUIRE(popped);
  auto gw = fx.scoped(std::nullopt, std::vector<std::string>{"g"});
  node::ack_request other;
  other.group = "h";
  other.items = {fx.completed(popped->messages[0])};
  auto refused = fx.call<node::ack_reply>(
      [&](auto k) { gw.ack(std::move(other), std::move(k)); });
  REQUIRE_FALSE(refused);
  CHECK(refused.err().code == errc::forbidden);
  node::ack_request mine;
  mine.group = "g";
  mine.items = {fx.completed(popped->messages[0])};
  auto r = fx.call<node::ack_reply>(
      [&](auto k) { gw.ack(std::move(mine), std::move(k)); });
  REQUIRE(r);
  CHECK(r->items[0].success);
  CHECK_FALSE(fx.dir->name_of(*queue_of_id(popped->messages[0].partition_id)));
}

TEST_CASE("a restricted namespace pop serves only the queues its claim "
          "covers",
          "[gateway][scope]") {
  scoped_sim fx;
  fx.push_to("shop.a", "p", {"a0"});
  fx.push_to("shop.b", "p", {"b0"});
  auto gw = fx.scoped(std::vector<std::string>{"shop.b"});
  auto pop_ns = [&] {
    node::pop_request req;
    req.token = gw.new_token();
    req.name_space = "shop";
    req.group = "g";
    req.batch = 10;
    return fx.call<node::pop_reply>(
        [&](auto k) { gw.pop(std::move(req), std::move(k)); });
  };
  auto first = pop_ns();
  REQUIRE(first);
  REQUIRE(first->messages.size() == 1);
  CHECK(first->messages[0].queue == "shop.b");
  auto second = pop_ns();
  REQUIRE(second);
  CHECK(second->messages.empty()); // shop.a's message is never served
}

TEST_CASE("a token with a groups claim extends only its groups' leases",
          "[gateway][scope]") {
  scoped_sim fx;
  fx.push_to("d.q", "p", {"d0"});
  auto mine = fx.pop(fx.pop_of("d.q", "g"));
  auto theirs = fx.pop(fx.pop_of("d.q", "h"));
  REQUIRE(mine);
  REQUIRE(theirs);
  REQUIRE(mine->messages.size() == 1);
  REQUIRE(theirs->messages.size() == 1);
  auto gw = fx.scoped(std::vector<std::string>{"d."},
                      std::vector<std::string>{"g"});
  auto extend = [&](const std::string& lease) {
    return fx.call<node::extend_reply>([&](auto k) {
      gw.extend(node::extend_request{lease, std::chrono::seconds{30}},
                std::move(k));
    });
  };
  auto ok = extend(mine->messages[0].lease_id);
  REQUIRE(ok);
  CHECK(ok->success);
  auto refused = extend(theirs->messages[0].lease_id);
  REQUIRE(refused);
  CHECK_FALSE(refused->success);
  CHECK(refused->error == "Lease not found");
}
