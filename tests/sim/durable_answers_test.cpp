// Answers that write nothing wait for what they read to be durable
// (issue 35): with a durability policy the test releases by hand, a
// duplicate push and the DLQ list are answered only once the batch they
// read is durable.

#include "sim/broker_sim.hpp"
#include "sim/held_policy.hpp"

using namespace spool;
using namespace spool::test;

namespace {

struct held_broker : broker_sim {
  std::shared_ptr<held_policy> policy;
  explicit held_broker(std::shared_ptr<held_policy> p) :
      broker_sim(p), policy(std::move(p)) {
  }
  held_broker() : held_broker(std::make_shared<held_policy>()) {
  }
  ~held_broker() {
    release();
  }
  /// Declares every write durable until none waits.
  void release() {
    run();
    while (policy->pending()) {
      policy->release_all();
      run();
    }
  }
  /// Creates queue `queue` with partition "p" holding one message, all
  /// durable.
  void create(const std::string& queue) {
    auto r = push_later(queue, msg("first"));
    release();
    REQUIRE(*r);
    REQUIRE_FALSE((*r)->failure);
  }
  std::shared_ptr<std::optional<actors::queue_push_reply>>
  push_later(const std::string& queue, storage::frame f) {
    std::vector<actors::broker_push_item> v{{queue, {"p", std::move(f)}}};
    return request_later<actors::queue_push_reply>(broker,
                                                   actors::push_atom::value, v);
  }
};

} // namespace

TEST_CASE("a duplicate of a stored push that is not durable yet is answered "
          "only once that push is durable",
          "[sim][durability][push]") {
  held_broker fx;
  fx.create("q");
  auto first = fx.push_later("q", msg("a", "tx-1"));
  fx.run();
  CHECK_FALSE(*first); // committed, not durable
  // A fresh broker over the same store (as a new leader would be): the
  // duplicate is found among the stored rows, and writes nothing.
  fx.start();
  auto again = fx.push_later("q", msg("a", "tx-1"));
  fx.run();
  CHECK_FALSE(*again); // what it read is not durable yet
  fx.release();
  REQUIRE(*again);
  REQUIRE_FALSE((*again)->failure);
  REQUIRE((*again)->results.size() == 1);
  CHECK((*again)->results[0].result.status == storage::frame_result::duplicate);
}

TEST_CASE("the DLQ list is answered only once what its queue's slot held "
          "when it read is durable",
          "[sim][durability][dlq]") {
  held_broker fx;
  fx.create("q");
  core::dlq_query query;
  query.filter.queue = "q";
  auto at_once = fx.request_later<actors::dlq_list_reply>(
      fx.broker, actors::dlq_list_atom::value, query);
  fx.run();
  REQUIRE(*at_once); // everything it read was durable
  auto pushed = fx.push_later("q", msg("a"));
  fx.run();
  auto waiting = fx.request_later<actors::dlq_list_reply>(
      fx.broker, actors::dlq_list_atom::value, query);
  fx.run();
  CHECK_FALSE(*waiting);
  fx.release();
  REQUIRE(*waiting);
  CHECK_FALSE((*waiting)->failure);
  REQUIRE(*pushed);
}
