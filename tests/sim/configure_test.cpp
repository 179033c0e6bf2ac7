// configure (semantics.md §8, §9): queues created with default options plus
// the named ones, existing queues changed only in the options named, bad
// options refused with nothing stored, changes applied to live cursors; and
// the one-creation-at-a-time rule for queues and partitions.

#include "sim/broker_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;

namespace {

struct configure_fixture : broker_sim {
  actors::configure_reply configure(const std::string& queue,
                                    core::options_patch opts,
                                    std::optional<std::string> ns = {}) {
    actors::configure_request req;
    req.queue = queue;
    req.options = std::move(opts);
    req.name_space = std::move(ns);
    auto r = request<actors::configure_reply>(
        broker, actors::configure_atom::value, req);
    REQUIRE(r);
    return *r;
  }

  void push(const std::string& queue, const std::string& partition,
            const std::string& payload) {
    std::vector<actors::broker_push_item> v{{queue, {partition, msg(payload)}}};
    auto r = request<actors::queue_push_reply>(broker, actors::push_atom::value,
                                               v);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
  }

  actors::queue_pop_reply pop(const std::string& queue,
                              const std::string& lease) {
    actors::queue_pop_request req;
    req.group = "g";
    req.lease_id = lease;
    auto r = request<actors::queue_pop_reply>(broker, actors::pop_atom::value,
                                              queue, req);
    REQUIRE(r);
    return *r;
  }

  std::vector<storage::queue_record> stored_queues() {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto qs = storage::tables::all_queues(*t);
    REQUIRE(qs);
    return *qs;
  }

  std::vector<storage::partition_record> stored_partitions() {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto ps = storage::tables::all_partitions(*t);
    REQUIRE(ps);
    return *ps;
  }
};

} // namespace

TEST_CASE("configure creates a queue with default options plus the named "
          "ones and its Default partition",
          "[sim][configure]") {
  configure_fixture fx;
  core::options_patch p;
  p.lease_time_s = 60;
  p.priority = 4;
  auto r = fx.configure("orders", p, "shop");
  REQUIRE_FALSE(r.failure);
  CHECK(r.created);
  CHECK(r.queue.name == "orders");
  CHECK(r.queue.name_space == "shop");
  storage::queue_options want;
  want.lease_time_s = 60;
  want.priority = 4;
  CHECK(r.queue.options == want);
  CHECK_FALSE(r.default_partition_uuid.empty());
  auto qs = fx.stored_queues();
  REQUIRE(qs.size() == 1);
  CHECK(qs[0].options == want);
  auto ps = fx.stored_partitions();
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].name == "Default");
  CHECK(ps[0].uuid == r.default_partition_uuid);
}

TEST_CASE("configure on an existing queue changes only the options it names",
          "[sim][configure]") {
  configure_fixture fx;
  fx.push("orders.eu", "p1", "a"); // auto-created: default options
  core::options_patch p;
  p.lease_time_s = 60;
  auto first = fx.configure("orders.eu", p);
  REQUIRE_FALSE(first.failure);
  CHECK_FALSE(first.created);
  CHECK(first.queue.name_space == "orders"); // derived, not named: kept
  core::options_patch q;
  q.retry_limit = 1;
  auto second = fx.configure("orders.eu", q);
  REQUIRE_FALSE(second.failure);
  CHECK(second.queue.options.lease_time_s == 60);
  CHECK(second.queue.options.retry_limit == 1);
  CHECK(second.queue.id == first.queue.id);
  // Durable, and the Default partition was added beside p1.
  fx.start();
  auto qs = fx.stored_queues();
  REQUIRE(qs.size() == 1);
  CHECK(qs[0].options.lease_time_s == 60);
  CHECK(qs[0].options.retry_limit == 1);
  CHECK(fx.stored_partitions().size() == 2);
  auto again = fx.configure("orders.eu", {});
  REQUIRE_FALSE(again.failure);
  CHECK(again.queue.options == qs[0].options);
  CHECK(again.default_partition_uuid == second.default_partition_uuid);
}

TEST_CASE("configure with an option out of range stores nothing",
          "[sim][configure][bad-input]") {
  configure_fixture fx;
  core::options_patch bad;
  bad.lease_time_s = 0;
  auto r = fx.configure("fresh", bad);
  REQUIRE(r.failure);
  CHECK(r.failure->code == errc::invalid_argument);
  CHECK(r.failure->message.find("option leaseTime") != std::string::npos);
  CHECK(fx.stored_queues().empty());
  CHECK(fx.stored_partitions().empty());
  fx.push("kept", "p", "a");
  auto before = fx.stored_queues();
  bad.retry_limit = 2; // named beside the bad one: not applied either
  auto r2 = fx.configure("kept", bad);
  REQUIRE(r2.failure);
  CHECK(fx.stored_queues() == before);
  CHECK(fx.stored_partitions().size() == 1); // no Default either
  auto bad_name = fx.configure("a/b", {});
  REQUIRE(bad_name.failure);
  CHECK(bad_name.failure->message.find("queue must not contain '/'")
        != std::string::npos);
  CHECK(fx.stored_queues() == before);
}

TEST_CASE("a changed leaseTime applies to the next lease of a live cursor",
          "[sim][configure][lease]") {
  configure_fixture fx;
  fx.push("q", "Default", "a");
  fx.push("q", "Default", "b");
  // The group's cursor is live and leased with the default 300 s.
  auto first = fx.pop("q", "L1");
  REQUIRE(first.claimed.size() == 1);
  core::options_patch p;
  p.lease_time_s = 10;
  REQUIRE_FALSE(fx.configure("q", p).failure);
  // The running lease keeps its expiry: 10 s later it still holds.
  fx.advance(10s);
  CHECK(fx.pop("q", "L2").reason == empty_reason::lease_held);
  fx.advance(290s);
  // Expired at 300 s; the redelivery takes a 10 s lease.
  auto second = fx.pop("q", "L3");
  REQUIRE(second.claimed.size() == 1);
  CHECK(second.claimed[0].reply.messages[0].delivery_count == 2);
  fx.advance(10s);
  auto third = fx.pop("q", "L4");
  REQUIRE(third.claimed.size() == 1);
  CHECK(third.claimed[0].reply.messages[0].delivery_count == 3);
}

TEST_CASE("concurrent first pushes to a new queue and partition create each "
          "once",
          "[sim][broker][push]") {
  configure_fixture fx;
  std::vector<std::shared_ptr<std::optional<actors::queue_push_reply>>> rs;
  for (int i = 0; i < 4; ++i) {
    std::vector<actors::broker_push_item> v{
        {"q", {"p", msg("m" + std::to_string(i))}}};
    rs.push_back(fx.request_later<actors::queue_push_reply>(
        fx.broker, actors::push_atom::value, v));
  }
  // And a configure racing them.
  actors::configure_request c;
  c.queue = "q";
  c.options.retry_limit = 9;
  auto conf = fx.request_later<actors::configure_reply>(
      fx.broker, actors::configure_atom::value, c);
  fx.run();
  for (auto& r : rs) {
    REQUIRE(*r);
    CHECK_FALSE((*r)->failure);
  }
  REQUIRE(*conf);
  CHECK_FALSE((*conf)->failure);
  auto qs = fx.stored_queues();
  REQUIRE(qs.size() == 1);
  CHECK(qs[0].options.retry_limit == 9);
  auto ps = fx.stored_partitions();
  CHECK(
      std::count_if(ps.begin(), ps.end(), [](auto& p) { return p.name == "p"; })
      == 1);
  // After a restart all four messages are in the one partition.
  fx.start();
  actors::queue_pop_request req;
  req.group = "g";
  req.partition = "p";
  req.batch = 10;
  req.lease_id = "L";
  auto r = fx.request<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, req);
  REQUIRE(r);
  REQUIRE(r->claimed.size() == 1);
  CHECK(r->claimed[0].reply.messages.size() == 4);
}

TEST_CASE("dedupWindowSeconds: a repeated transactionId is a duplicate inside "
          "the window and queued again after it",
          "[sim][push][dedup]") {
  configure_fixture fx;
  core::options_patch p;
  p.dedup_window_s = 10;
  REQUIRE_FALSE(fx.configure("q", p).failure);
  auto push = [&](const std::string& txid) {
    std::vector<actors::broker_push_item> v{{"q", {"Default", msg("x", txid)}}};
    auto r = fx.request<actors::queue_push_reply>(fx.broker,
                                                  actors::push_atom::value, v);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    return r->results.at(0).result;
  };
  auto first = push("t1");
  CHECK(first.status == storage::frame_result::queued);
  fx.advance(5s);
  auto repeat = push("t1");
  CHECK(repeat.status == storage::frame_result::duplicate);
  CHECK(repeat.off == first.off);
  fx.advance(6s); // 11 s after the original
  auto later = push("t1");
  CHECK(later.status == storage::frame_result::queued);
  CHECK(later.off == first.off + 1);
}
