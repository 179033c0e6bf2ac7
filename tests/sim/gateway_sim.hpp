#pragma once

// The gateway over a broker under the test coordinator: each call's
// completion lands in a slot the test reads after running the actors.

#include "gateway/start.hpp"
#include "sim/broker_sim.hpp"

namespace spool::test {

struct gateway_sim : broker_sim {
  std::unique_ptr<gateway> gw;

  gateway_sim() {
    connect();
  }

  /// A gateway over the current broker (again after `start()`).
  void connect() {
    gw = make_gateway(sys, broker, [this] { return wall(); });
  }

  /// Calls `call(completion)` on the gateway, runs the actors, and returns
  /// what the completion got (the test fails if it was not called).
  template <class T, class Call>
  expected<T> call(Call call) {
    auto out = std::make_shared<std::optional<expected<T>>>();
    call([out](expected<T> r) { *out = std::move(r); });
    run();
    REQUIRE(out->has_value());
    return std::move(**out);
  }

  /// Like `call`, but does not run: the slot fills during later runs.
  template <class T, class Call>
  std::shared_ptr<std::optional<expected<T>>> call_later(Call call) {
    auto out = std::make_shared<std::optional<expected<T>>>();
    call([out](expected<T> r) { *out = std::move(r); });
    return out;
  }

  node::push_reply push_items(std::vector<node::push_item> items) {
    auto r = call<node::push_reply>([&](auto k) {
      gw->push(node::push_request{std::move(items)}, std::move(k));
    });
    REQUIRE(r);
    return *r;
  }

  /// Pushes one message to (queue, partition) per payload.
  node::push_reply push_to(const std::string& queue,
                           const std::string& partition,
                           std::vector<std::string> payloads) {
    std::vector<node::push_item> items;
    for (auto& p : payloads) {
      node::push_item item;
      item.queue = queue;
      item.partition = partition;
      item.payload = "\"" + p + "\"";
      items.push_back(std::move(item));
    }
    return push_items(std::move(items));
  }

  /// The lease id a pop with `token` gets from queue `queue`: the token
  /// behind the queue's id (`lease_id_of`).
  std::string lease_of(const std::string& queue, const std::string& token) {
    return lease_id_of(queue_id(queue).value, token);
  }

  node::pop_request pop_of(const std::string& queue,
                           std::optional<std::string> group = "g",
                           std::size_t batch = 10) {
    node::pop_request r;
    r.token = gw->new_token();
    r.queue = queue;
    r.group = std::move(group);
    r.batch = batch;
    return r;
  }

  /// A waiting pop of "g" on queue `q` (configured first), sent and not
  /// run: its answer fills the slot during later runs.
  std::pair<node::pop_request,
            std::shared_ptr<std::optional<expected<node::pop_reply>>>>
  waiting_pop() {
    configure("q", {});
    auto req = pop_of("q");
    req.wait = true;
    auto slot = call_later<node::pop_reply>(
        [&](auto k) { gw->pop(req, std::move(k)); });
    return {req, slot};
  }

  expected<node::pop_reply> pop(node::pop_request req) {
    return call<node::pop_reply>(
        [&](auto k) { gw->pop(std::move(req), std::move(k)); });
  }

  expected<node::ack_reply> ack(node::ack_request req) {
    return call<node::ack_reply>(
        [&](auto k) { gw->ack(std::move(req), std::move(k)); });
  }

  /// Acks (completed) every message of `r`, by partition id and
  /// transactionId, in one list for group "g".
  expected<node::ack_reply> ack_all(const node::pop_reply& r) {
    node::ack_request req;
    req.group = "g";
    for (auto& m : r.messages) {
      node::ack_item a;
      a.partition_id = m.partition_id;
      a.transaction_id = m.transaction_id;
      a.lease_id = m.lease_id;
      req.items.push_back(std::move(a));
    }
    return ack(std::move(req));
  }

  /// One message pushed to each partition of `q` named, then one wildcard
  /// pop of "g" claiming them all under one lease (must deliver).
  std::pair<node::pop_request, node::pop_reply>
  lease_over(std::vector<std::string> partitions) {
    for (auto& p : partitions)
      push_to("q", p, {p + "0"});
    auto req = pop_of("q");
    req.partitions = partitions.size();
    auto r = pop(req);
    REQUIRE(r);
    REQUIRE(r->partitions_claimed == partitions.size());
    return {req, *r};
  }

  expected<node::extend_reply> extend(const std::string& lease,
                                      milliseconds by) {
    return call<node::extend_reply>([&](auto k) {
      gw->extend(node::extend_request{lease, by}, std::move(k));
    });
  }

  /// An extend of `lease` that the node answers unsuccessful with `error`.
  void extend_refused(const std::string& lease, milliseconds by,
                      const std::string& error) {
    auto r = extend(lease, by);
    REQUIRE(r);
    CHECK_FALSE(r->success);
    CHECK(r->error == error);
  }

  expected<bool> release(const std::string& lease) {
    return call<bool>([&](auto k) { gw->release(lease, std::move(k)); });
  }

  expected<node::browse_reply> browse(const std::string& queue,
                                      const std::string& partition) {
    return call<node::browse_reply>([&](auto k) {
      node::browse_request req;
      req.queue = queue;
      req.partition = partition;
      gw->browse(std::move(req), std::move(k));
    });
  }

  /// Acks everything `r` delivered; every item must succeed.
  void ack_all_succeed(const node::pop_reply& r) {
    auto acked = ack_all(r);
    REQUIRE(acked);
    REQUIRE(acked->items.size() == r.messages.size());
    for (auto& item : acked->items)
      CHECK(item.success);
  }

  std::vector<node::cursor_view> cursors(const std::string& group = "g") {
    auto r = call<std::vector<node::cursor_view>>([&](auto k) {
      gw->groups(node::groups_request{group, std::nullopt}, std::move(k));
    });
    REQUIRE(r);
    return *r;
  }

  const node::cursor_view& cursor_on(const std::vector<node::cursor_view>& cs,
                                     const std::string& partition) {
    for (auto& c : cs)
      if (c.partition == partition)
        return c;
    FAIL("no cursor on " << partition);
    return cs.front();
  }
};

} // namespace spool::test
