// The gateway's managing calls, driven directly: configure, listings,
// browse, purge, seek, the subscription update, consumer groups and lag,
// deletions, the DLQ and transactions.

#include <catch2/catch.hpp>

#include "sim/gateway_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;

TEST_CASE("a gateway configure creates the queue and lists it with its "
          "partitions",
          "[gateway][configure]") {
  gateway_sim fx;
  auto c = fx.call<node::configure_reply>([&](auto k) {
    node::configure_request req;
    req.queue = "q";
    req.options.lease_time_s = 45;
    fx.gw->configure(std::move(req), std::move(k));
  });
  REQUIRE(c);
  CHECK(c->created);
  CHECK(c->queue.name == "q");
  CHECK(c->queue.options.lease_time_s == 45);
  CHECK(c->default_partition_id == fx.partition("q", "Default").uuid);
  fx.push_to("q", "p", {"a", "b"});
  auto qs = fx.call<std::vector<node::queue_info>>(
      [&](auto k) { fx.gw->queues(std::string{"q"}, std::move(k)); });
  REQUIRE(qs);
  REQUIRE(qs->size() == 1);
  auto& q = qs->front();
  CHECK(q.options.lease_time_s == 45);
  REQUIRE(q.partitions.size() == 2);
  CHECK(q.partitions[1].name == "p");
  CHECK(q.partitions[1].last_offset == 1);
  auto none = fx.call<std::vector<node::queue_info>>(
      [&](auto k) { fx.gw->queues(std::string{"nope"}, std::move(k)); });
  REQUIRE_FALSE(none);
  CHECK(none.err().code == errc::not_found);
}

TEST_CASE("a gateway configure out of range is refused with the option named",
          "[gateway][configure]") {
  gateway_sim fx;
  auto c = fx.call<node::configure_reply>([&](auto k) {
    node::configure_request req;
    req.queue = "q";
    req.options.lease_time_s = -1;
    fx.gw->configure(std::move(req), std::move(k));
  });
  REQUIRE_FALSE(c);
  CHECK(c.err().code == errc::invalid_argument);
  CHECK(c.err().message.find("leaseTime") != std::string::npos);
}

TEST_CASE("a gateway browse reads by offset without a lease, and a purge "
          "moves the watermark",
          "[gateway][browse][purge]") {
  gateway_sim fx;
  fx.push_to("q", "p", {"a"});
  fx.push_to("q", "p", {"b"}); // a second segment
  auto b = fx.browse("q", "p");
  REQUIRE(b);
  REQUIRE(b->messages.size() == 2);
  CHECK(b->messages[1].payload == "\"b\"");
  CHECK(b->messages[1].lease_id.empty());
  CHECK(b->next == 2);
  auto purged = fx.call<std::size_t>([&](auto k) {
    node::purge_request req;
    req.queue = "q";
    req.below = 1;
    fx.gw->purge(std::move(req), std::move(k));
  });
  REQUIRE(purged);
  CHECK(*purged == 1);
  auto after = fx.browse("q", "p");
  REQUIRE(after);
  REQUIRE(after->messages.size() == 1);
  CHECK(after->messages[0].offset == 1);
  REQUIRE(after->skipped);
  CHECK(after->skipped->first == 0);
}

TEST_CASE("a gateway seek moves a group and a dry run changes nothing",
          "[gateway][seek]") {
  gateway_sim fx;
  fx.push_to("q", "p", {"a", "b", "c"});
  auto r = fx.pop(fx.pop_of("q"));
  REQUIRE(r);
  REQUIRE(fx.ack_all(*r));
  auto seek = [&](bool dry) {
    return fx.call<node::seek_reply>([&](auto k) {
      node::seek_request req;
      req.group = "g";
      req.queue = "q";
      req.target.to_start = true;
      req.dry_run = dry;
      fx.gw->seek(std::move(req), std::move(k));
    });
  };
  auto dry = seek(true);
  REQUIRE(dry);
  CHECK(dry->partitions_updated == 0);
  REQUIRE(dry->positions.size() == 1);
  CHECK(dry->positions[0].before == 2);
  CHECK(dry->positions[0].after == -1);
  CHECK(fx.cursor_on(fx.cursors(), "p").committed == 2);
  auto moved = seek(false);
  REQUIRE(moved);
  CHECK(moved->partitions_updated == 1);
  CHECK(fx.cursor_on(fx.cursors(), "p").committed == -1);
  auto unknown = fx.call<node::seek_reply>([&](auto k) {
    node::seek_request req;
    req.group = "g";
    req.queue = "nope";
    req.target.to_end = true;
    fx.gw->seek(std::move(req), std::move(k));
  });
  REQUIRE_FALSE(unknown);
  CHECK(unknown.err().message == "Queue not found or has no partitions");
}

TEST_CASE("a gateway subscription update rewrites the group's records",
          "[gateway][subscription]") {
  gateway_sim fx;
  fx.push_to("q", "p", {"a"});
  REQUIRE(fx.pop(fx.pop_of("q")));
  auto r = fx.call<node::subscription_reply>([&](auto k) {
    fx.gw->update_subscription(node::subscription_request{"g", fx.wall()},
                               std::move(k));
  });
  REQUIRE(r);
  CHECK(r->rows_updated == 1);
}

TEST_CASE("gateway consumer groups show committed, last offset, lag and the "
          "lease, and a group deletion removes them",
          "[gateway][groups]") {
  gateway_sim fx;
  fx.push_to("q", "p", {"a", "b", "c"});
  auto req = fx.pop_of("q", "g", 1);
  auto r = fx.pop(req);
  REQUIRE(r);
  auto cs = fx.cursors();
  auto& c = fx.cursor_on(cs, "p");
  CHECK(c.queue == "q");
  CHECK(c.partition_id == r->messages[0].partition_id);
  CHECK(c.committed == -1);
  CHECK(c.last_offset == 2);
  CHECK(c.lag == 3);
  REQUIRE(c.lease);
  CHECK(c.lease->id == fx.lease_of("q", req.token));
  CHECK(c.lease->first == 0);
  CHECK(c.lease->last == 0);
  REQUIRE(fx.ack_all(*r));
  CHECK(fx.cursor_on(fx.cursors(), "p").lag == 2);
  auto d = fx.call<node::delete_group_reply>([&](auto k) {
    fx.gw->delete_group(node::delete_group_request{"g", std::nullopt, true},
                        std::move(k));
  });
  REQUIRE(d);
  CHECK(d->deleted_partitions == 1);
  CHECK(d->metadata_deleted);
  CHECK(fx.cursors().empty());
}

TEST_CASE("a deleted queue's partition ids resolve no more at the gateway",
          "[gateway][delete]") {
  gateway_sim fx;
  auto pushed = fx.push_to("q", "p", {"a"});
  auto r = fx.pop(fx.pop_of("q"));
  REQUIRE(r);
  auto existed
      = fx.call<bool>([&](auto k) { fx.gw->delete_queue("q", std::move(k)); });
  REQUIRE(existed);
  CHECK(*existed);
  auto acked = fx.ack_all(*r);
  REQUIRE(acked);
  CHECK(acked->items[0].error == "Message not found");
  auto again
      = fx.call<bool>([&](auto k) { fx.gw->delete_queue("q", std::move(k)); });
  REQUIRE(again);
  CHECK_FALSE(*again);
  // Created again under the same name, with a partition of the same name:
  // the old partition id still names nothing (not the new partition).
  fx.push_to("q", "p", {"new"});
  auto fresh = fx.pop(fx.pop_of("q"));
  REQUIRE(fresh);
  REQUIRE(fresh->messages.size() == 1);
  CHECK(fresh->messages[0].partition_id != pushed.items[0].partition_id);
  node::ack_request stale;
  stale.group = "g";
  node::ack_item by_offset;
  by_offset.partition_id = pushed.items[0].partition_id;
  by_offset.offset = 0;
  stale.items = {by_offset};
  auto refused = fx.ack(stale);
  REQUIRE(refused);
  CHECK(refused->items[0].error == "Message not found");
  CHECK(fx.cursor_on(fx.cursors(), "p").committed == -1);
}

TEST_CASE("gateway DLQ calls list, requeue and delete dead letters",
          "[gateway][dlq]") {
  gateway_sim fx;
  fx.push_to("q", "p", {"a", "b"});
  auto r = fx.pop(fx.pop_of("q"));
  REQUIRE(r);
  node::ack_request req;
  req.group = "g";
  for (auto& m : r->messages) {
    node::ack_item a;
    a.partition_id = m.partition_id;
    a.transaction_id = m.transaction_id;
    a.status = ack_status::dlq;
    a.error = "bad " + m.payload;
    req.items.push_back(a);
  }
  auto acked = fx.ack(req);
  REQUIRE(acked);
  CHECK(acked->items[0].dead_lettered);
  dlq_query q;
  q.filter.queue = "q";
  auto page = fx.call<node::dlq_page>(
      [&](auto k) { fx.gw->dlq_list(q, std::move(k)); });
  REQUIRE(page);
  CHECK(page->total == 2);
  REQUIRE(page->messages.size() == 2);
  auto& newest = page->messages[0];
  CHECK(newest.group == "g");
  CHECK(newest.partition == "p");
  CHECK(newest.error == "bad " + newest.frame.payload);
  // The wire's partitionId: the uuid the pop handed out.
  CHECK(newest.frame.partition_id == r->messages[0].partition_id);
  CHECK(!newest.frame.partition_id.empty());
  dlq_filter one;
  one.ids = {newest.dlq_id};
  auto requeued = fx.call<node::dlq_count>(
      [&](auto k) { fx.gw->dlq_requeue(one, std::move(k)); });
  REQUIRE(requeued);
  CHECK(requeued->count == 1);
  auto again = fx.pop(fx.pop_of("q"));
  REQUIRE(again);
  REQUIRE(again->messages.size() == 1);
  CHECK(again->messages[0].requeued == newest.dlq_id);
  dlq_filter rest;
  rest.queue = "q";
  rest.ids = {page->messages[1].dlq_id};
  auto deleted = fx.call<node::dlq_count>(
      [&](auto k) { fx.gw->dlq_delete(rest, std::move(k)); });
  REQUIRE(deleted);
  CHECK(deleted->count == 1);
}

TEST_CASE("a gateway transaction pushes and acks by partition id and "
          "transactionId in one write",
          "[gateway][txn]") {
  gateway_sim fx;
  fx.push_to("in", "p", {"job"});
  auto r = fx.pop(fx.pop_of("in"));
  REQUIRE(r);
  REQUIRE(r->messages.size() == 1);
  node::txn_request t;
  t.transaction_id = "t-1";
  node::push_item out;
  out.queue = "out";
  out.payload = "\"done\"";
  node::txn_push push;
  push.items.push_back(out);
  t.operations.emplace_back(push);
  node::ack_item a;
  a.partition_id = r->messages[0].partition_id;
  a.transaction_id = r->messages[0].transaction_id;
  a.lease_id = r->messages[0].lease_id;
  a.group = "g";
  t.operations.emplace_back(node::txn_ack{a});
  auto done = fx.call<node::txn_reply>(
      [&](auto k) { fx.gw->transaction(t, std::move(k)); });
  REQUIRE(done);
  CHECK(done->success);
  CHECK(done->transaction_id == "t-1");
  REQUIRE(done->results.size() == 2);
  REQUIRE(done->results[0].items.size() == 1);
  CHECK(done->results[0].items[0].queue == "out");
  CHECK_FALSE(done->results[0].items[0].transaction_id.empty());
  CHECK(done->results[1].lease_released);
  CHECK(fx.cursor_on(fx.cursors(), "p").committed == 0);
  // An ack of an unknown partition id rolls the whole transaction back.
  node::txn_request bad;
  a.partition_id = "no-such-uuid";
  bad.operations.emplace_back(push);
  bad.operations.emplace_back(node::txn_ack{a});
  auto refused = fx.call<node::txn_reply>(
      [&](auto k) { fx.gw->transaction(bad, std::move(k)); });
  REQUIRE(refused);
  CHECK_FALSE(refused->success);
  CHECK(refused->error == "operations[1]: Message not found");
  auto listed = fx.call<std::vector<node::queue_info>>(
      [&](auto k) { fx.gw->queues(std::string{"out"}, std::move(k)); });
  REQUIRE(listed);
  CHECK(listed->front().partitions.front().last_offset == 0); // one push
}
