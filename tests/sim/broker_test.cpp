// The broker: queues created on first push, pushes across queues all or
// nothing, recovery of every queue at start.

#include "sim/broker_sim.hpp"

#include "actors/fan_out.hpp"

using namespace spool;
using namespace spool::test;
using storage::offset;

namespace {

struct broker_fixture : broker_sim {

  actors::queue_push_reply
  push(std::vector<std::tuple<std::string, std::string, std::string>> items) {
    std::vector<actors::broker_push_item> v;
    for (auto& [q, p, payload] : items)
      v.push_back({q, {p, msg(payload)}});
    auto r = request<actors::queue_push_reply>(broker, actors::push_atom::value,
                                               v);
    REQUIRE(r);
    return *r;
  }

  std::vector<std::string> queues() {
    auto r
        = request<std::vector<std::string>>(broker, actors::list_atom::value);
    REQUIRE(r);
    return *r;
  }
};

} // namespace

TEST_CASE("a push across queues is stored in one batch and answered in input "
          "order",
          "[sim][broker][push]") {
  broker_fixture fx;
  auto r = fx.push({{"orders.eu", "Default", "1"},
                    {"billing", "Default", "2"},
                    {"orders.eu", "x", "3"}});
  REQUIRE(!r.failure);
  REQUIRE(r.results.size() == 3);
  CHECK(r.target_of(0).queue == "orders.eu");
  CHECK(r.target_of(1).queue == "billing");
  CHECK(r.target_of(2).partition == "x");
  CHECK(r.target_of(0).partition == "Default");
  CHECK(r.targets.size() == 3); // one per partition the push touched
  CHECK(fx.queues() == std::vector<std::string>{"billing", "orders.eu"});
  auto t = fx.store.store->db().read();
  auto qs = storage::tables::all_queues(*t);
  REQUIRE(qs);
  auto it = std::find_if(qs->begin(), qs->end(),
                         [](auto& q) { return q.name == "orders.eu"; });
  REQUIRE(it != qs->end());
  CHECK(it->name_space == "orders");
  CHECK(it->task == "eu");
}

TEST_CASE("a push across more queues than the fan-out window stores every "
          "item and answers in input order",
          "[sim][broker][push]") {
  // The broker seals and settles the queues of one push at most
  // gather_window at a time (the window itself: fan_out_test).
  broker_fixture fx;
  constexpr std::size_t n = 2 * actors::gather_window + 3;
  std::vector<std::tuple<std::string, std::string, std::string>> items;
  for (std::size_t i = 0; i < n; ++i) // every queue twice, interleaved
    items.emplace_back("q" + std::to_string(i % (n / 2 + 1)), "Default",
                       std::to_string(i));
  auto r = fx.push(items);
  REQUIRE(!r.failure);
  REQUIRE(r.results.size() == n);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("item " << i);
    CHECK(r.target_of(i).queue == std::get<0>(items[i]));
    CHECK(r.results[i].result.status == storage::frame_result::queued);
    // A queue's first item is offset 0, its second offset 1.
    CHECK(r.results[i].result.off == offset{i <= n / 2 ? 0 : 1});
  }
  CHECK(fx.queues().size() == n / 2 + 1);
}

TEST_CASE("a push with an invalid item creates no queue and stores nothing",
          "[sim][broker][push][bad-input]") {
  broker_fixture fx;
  std::vector<actors::broker_push_item> v{{"a", {"Default", msg("ok")}},
                                          {"b", {"Default", msg("ok")}}};
  v[1].item.frame.headers.assign(65, {"k", "v"});
  auto r = fx.request<actors::queue_push_reply>(fx.broker,
                                                actors::push_atom::value, v);
  REQUIRE(r);
  REQUIRE(r->failure);
  CHECK(r->failure->message.find("items[1]") == 0);
  auto bad_queue = fx.push({{"a/b", "Default", "x"}});
  REQUIRE(bad_queue.failure);
  CHECK(bad_queue.failure->message.find("items[0].queue") == 0);
  CHECK(fx.queues().empty());
}

// Checked once, where a push enters (the broker): the queues trust it.
// Partitions read back: an invalid item creates none.
std::vector<std::string> partitions_of(broker_fixture& fx,
                                       const std::string& queue) {
  auto t = fx.store.store->db().read();
  auto qs = storage::tables::all_queues(*t);
  REQUIRE(qs);
  std::vector<std::string> out;
  for (auto& q : *qs)
    if (q.name == queue) {
      auto parts = storage::tables::partitions_of(*t, q.id);
      REQUIRE(parts);
      for (auto& p : *parts)
        out.push_back(p.name);
    }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("a push with an invalid item stores nothing of it",
          "[sim][broker][push][bad-input]") {
  broker_fixture fx;
  REQUIRE(!fx.push({{"q", "Default", "x"}}).failure);
  std::vector<actors::broker_push_item> items{{"q", {"a", msg("ok")}},
                                              {"q", {"b", msg("ok")}}};
  items[1].item.frame.payload.assign((8u << 20) + 1, 'x');
  auto r = fx.request<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, items);
  REQUIRE(r);
  REQUIRE(r->failure);
  CHECK(r->failure->message.find("items[1]") == 0);
  auto bad_name = fx.push({{"q", "__x", "1"}});
  REQUIRE(bad_name.failure);
  CHECK(bad_name.failure->message
        == "items[0].partition must not start "
           "with __ (reserved)");
  CHECK(partitions_of(fx, "q") == std::vector<std::string>{"Default"});
}

TEST_CASE("a push with several invalid items names the first in input order",
          "[sim][broker][push][bad-input]") {
  broker_fixture fx;
  REQUIRE(!fx.push({{"q", "Default", "x"}}).failure);
  auto big = [] {
    auto f = msg("x");
    f.payload.assign((8u << 20) + 1, 'x');
    return f;
  };
  // The refused push's error message (every item to queue q).
  auto refusal = [&](std::vector<actors::push_item> items) {
    std::vector<actors::broker_push_item> v;
    for (auto& i : items)
      v.push_back({"q", std::move(i)});
    auto r = fx.request<actors::queue_push_reply>(
        fx.broker, actors::push_atom::value, std::move(v));
    REQUIRE(r);
    REQUIRE(r->failure);
    return r->failure->message;
  };
  // A bad frame before a bad partition name (of a name seen before too).
  CHECK(refusal({{"a", msg("ok")},
                 {"a", big()},
                 {"b", msg("ok")},
                 {"__x", msg("ok")}})
            .find("items[1]: ")
        == 0);
  // A bad partition name before a bad frame.
  CHECK(refusal({{"a", msg("ok")}, {"__x", msg("ok")}, {"a", big()}})
            .find("items[1].partition")
        == 0);
  // Two bad names: the earlier one.
  CHECK(refusal({{"a", msg("ok")}, {"__x", msg("ok")}, {"__y", msg("ok")}})
            .find("items[1].partition")
        == 0);
  // A bad frame under a name that recurs after another.
  CHECK(refusal({{"a", msg("ok")},
                 {"b", msg("ok")},
                 {"a", big()},
                 {"__x", msg("ok")}})
            .find("items[2]: ")
        == 0);
  // One item with both: its name.
  CHECK(refusal({{"a", msg("ok")}, {"__x", big()}}).find("items[1].partition")
        == 0);
  CHECK(partitions_of(fx, "q") == std::vector<std::string>{"Default"});
}

TEST_CASE("the broker recovers every queue and its messages after a restart",
          "[sim][broker][restart]") {
  broker_fixture fx;
  fx.push({{"q1", "p", "a"}, {"q2", "Default", "b"}, {"q1", "p", "c"}});
  fx.start();
  CHECK(fx.queues() == std::vector<std::string>{"q1", "q2"});
  actors::queue_pop_request req;
  req.group = "g";
  req.batch = 10;
  req.lease_id = "L";
  auto r = fx.request<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q1"}, req);
  REQUIRE(r);
  REQUIRE(r->claimed.size() == 1);
  REQUIRE(r->claimed[0].reply.messages.size() == 2);
  CHECK(r->claimed[0].reply.messages[1].frame.data.payload == "c");
  auto none = fx.request<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"nope"}, req);
  REQUIRE(none);
  CHECK(none->reason == empty_reason::no_partition);
}
