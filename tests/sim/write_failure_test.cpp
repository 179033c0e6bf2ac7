// The rest of the write paths under injected failures (issue 11): dead
// lettering by an ack, DLQ requeue and delete, registration, subscription
// update, push with queue or partition creation, a live seek, queue
// deletion and a transaction. Each failed write answers its error, leaves
// memory equal to the stored rows (what the group is served next shows it)
// and its retry applies.

#include "sim/fault_sim.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

using ints = std::vector<std::int64_t>;

struct write_fault_sim : fault_fixture {
  /// The next write batch fails.
  void fail_next() {
    fault_plan f;
    f.nth = 1;
    f.times = 1;
    gate_st->inject(std::move(f));
  }

  /// The partition's share of a pop of (q, p) by `group`.
  actors::pop_reply pop_one(const std::string& q, const std::string& p,
                            const std::string& group, std::size_t batch = 10) {
    auto r = pop(q, pop_request(group, p, batch));
    if (r.claimed.empty())
      return {};
    return r.claimed.front().reply;
  }

  static ints offsets(const actors::pop_reply& r) {
    ints out;
    for (auto& m : r.messages)
      out.push_back(m.frame.off.value);
    return out;
  }

  std::vector<core::dlq_item> dlq(const std::string& group) {
    return dlq_of("q", group);
  }

  actors::dlq_count_reply dlq_call(bool requeue, std::uint64_t id) {
    core::dlq_filter f;
    f.ids = {id};
    auto r = requeue ? request<actors::dlq_count_reply>(
                 broker, actors::requeue_atom::value, f)
                     : request<actors::dlq_count_reply>(
                         broker, actors::dlq_del_atom::value, f);
    REQUIRE(r);
    return *r;
  }

  /// q/p holds a, b, c; g dead-lettered b and completed a and c. The id of
  /// b's entry.
  std::uint64_t bury_b(const std::string& q = "q") {
    push(q, "p", {"a", "b", "c"});
    auto r = pop_one(q, "p", "g");
    REQUIRE(offsets(r) == ints{0, 1, 2});
    auto lease = r.lease->id;
    REQUIRE(ack(q, "p", "g", lease, 0) == ack_error::none);
    REQUIRE(ack(q, "p", "g", lease, 1, ack_status::dlq) == ack_error::none);
    REQUIRE(ack(q, "p", "g", lease, 2) == ack_error::none);
    auto entries = dlq_of(q, "g");
    REQUIRE(entries.size() == 1);
    return entries[0].entry.id;
  }

  std::optional<storage::subscription_record>
  stored_subscription(const std::string& q, const std::string& group) {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto sub = storage::tables::get_subscription(*t, queue_id(q), group);
    REQUIRE(sub);
    return *sub;
  }

  /// Whether queue q is listed (in memory) and stored.
  bool queue_exists(const std::string& q) {
    auto r = request<actors::queues_reply>(broker, actors::info_atom::value,
                                           std::optional<std::string>{q});
    REQUIRE(r);
    auto t = store.store->db().read();
    REQUIRE(t);
    auto all = storage::tables::all_queues(*t);
    REQUIRE(all);
    bool stored = std::any_of(all->begin(), all->end(),
                              [&](auto& rec) { return rec.name == q; });
    CHECK(stored == !r->failure);
    return stored;
  }
};

} // namespace

TEST_CASE("a failed dead-lettering ack stores no entry and keeps the lease",
          "[failure][dlq]") {
  write_fault_sim fx;
  fx.push("q", "p", {"a", "b"});
  auto r = fx.pop_one("q", "p", "g");
  auto lease = r.lease->id;
  fx.fail_next();
  auto failed = fx.ack_reply("q", "p", "g", lease, 0, ack_status::dlq);
  REQUIRE(failed.failure);
  // The reply claims nothing of what did not happen.
  CHECK_FALSE(failed.dead_lettered);
  CHECK_FALSE(failed.lease_released);
  CHECK(fx.dlq("g").empty());
  CHECK(fx.cursor("q", "p", "g")->committed == offset{-1});
  // Counted as done only once durable; the failure is counted.
  CHECK(fx.metrics->messages_acked == 0);
  CHECK(fx.metrics->failed_writes == 1);
  // The lease still holds both frames: the retry dead-letters a.
  auto ok = fx.ack_reply("q", "p", "g", lease, 0, ack_status::dlq);
  REQUIRE_FALSE(ok.failure);
  CHECK(ok.dead_lettered);
  CHECK(fx.dlq("g").size() == 1);
  CHECK(fx.metrics->messages_acked == 1);
  fx.start(); // a restart shows the same
  CHECK(fx.dlq("g").size() == 1);
  CHECK(fx.offsets(fx.pop_one("q", "p", "g")) == ints{1});
}

TEST_CASE("a failed DLQ requeue leaves the entry dead, a retry requeues it",
          "[failure][dlq]") {
  write_fault_sim fx;
  auto id = fx.bury_b();
  fx.fail_next();
  auto failed = fx.dlq_call(true, id);
  REQUIRE(failed.failure);
  CHECK(failed.count == 0);
  CHECK_FALSE(fx.dlq("g").at(0).entry.requeued);
  CHECK(fx.pop_one("q", "p", "g").messages.empty()); // b is not delivered
  auto ok = fx.dlq_call(true, id);
  REQUIRE_FALSE(ok.failure);
  CHECK(ok.count == 1);
  CHECK(fx.offsets(fx.pop_one("q", "p", "g")) == ints{1});
}

TEST_CASE("a failed DLQ delete keeps the entry, a retry deletes it",
          "[failure][dlq]") {
  write_fault_sim fx;
  auto id = fx.bury_b();
  fx.fail_next();
  auto failed = fx.dlq_call(false, id);
  REQUIRE(failed.failure);
  CHECK(failed.count == 0);
  REQUIRE(fx.dlq("g").size() == 1);
  auto ok = fx.dlq_call(false, id);
  REQUIRE_FALSE(ok.failure);
  CHECK(ok.count == 1);
  CHECK(fx.dlq("g").empty());
}

TEST_CASE("a DLQ delete over two queues: each queue deletes its own rows, a "
          "failed write in one leaves the other's deletion done",
          "[failure][dlq]") {
  write_fault_sim fx;
  auto in_q = fx.bury_b("q");
  auto in_r = fx.bury_b("r");
  fx.fail_next(); // the first queue's write
  core::dlq_filter f;
  f.ids = {in_q, in_r};
  auto first = fx.request<actors::dlq_count_reply>(
      fx.broker, actors::dlq_del_atom::value, f);
  REQUIRE(first);
  REQUIRE(first->failure);
  CHECK(first->count == 1);
  CHECK(first->remaining == 0);
  auto left_q = fx.dlq_of("q", "g");
  auto left_r = fx.dlq_of("r", "g");
  REQUIRE(left_q.size() + left_r.size() == 1);
  // The retry names the entry left (an id already deleted is not found).
  f.ids = {left_q.empty() ? in_r : in_q};
  auto retry = fx.request<actors::dlq_count_reply>(
      fx.broker, actors::dlq_del_atom::value, f);
  REQUIRE(retry);
  REQUIRE_FALSE(retry->failure);
  CHECK(retry->count == 1);
  CHECK(fx.dlq_of("q", "g").empty());
  CHECK(fx.dlq_of("r", "g").empty());
}

TEST_CASE("a failed registration registers nothing: the retry is the first "
          "contact",
          "[failure][subscription]") {
  write_fault_sim fx;
  fx.push("q", "p", {"a", "b"});
  fx.gate_st->inject(fail_batches_with<storage::mut::put_subscription>(1));
  auto failed = fx.request<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"},
      fx.pop_request("g", std::string{"p"}));
  REQUIRE(failed);
  CHECK((failed->failure
         || (!failed->claimed.empty() && failed->claimed[0].reply.failure)));
  CHECK_FALSE(fx.stored_subscription("q", "g"));
  CHECK_FALSE(fx.cursor("q", "p", "g"));
  auto r = fx.pop_one("q", "p", "g");
  CHECK(fx.offsets(r) == ints{0, 1});
  CHECK(r.messages.at(0).delivery_count == 1);
  CHECK(fx.stored_subscription("q", "g"));
}

TEST_CASE("a failed subscription update keeps the old record: a partition "
          "created later is seeded from it",
          "[failure][subscription]") {
  write_fault_sim fx;
  fx.push("q", "p", {"a"});
  REQUIRE(fx.offsets(fx.pop_one("q", "p", "g")) == ints{0}); // mode all
  auto ahead = fx.wall() + 3'600'000'000;                    // an hour from now
  fx.gate_st->inject(fail_batches_with<storage::mut::update_subscription>(1));
  auto failed = fx.request<actors::sub_update_reply>(
      fx.broker, actors::sub_update_atom::value, std::string{"g"}, ahead);
  REQUIRE(failed);
  REQUIRE(failed->failure);
  CHECK(fx.stored_subscription("q", "g")->mode
        == storage::subscription_mode::all);
  // The queue's copy is the old one too: a new partition's backlog is
  // delivered (seeded from "all", not from an hour ahead).
  fx.push("q", "p2", {"x"});
  CHECK(fx.offsets(fx.pop_one("q", "p2", "g")) == ints{0});
  auto ok = fx.request<actors::sub_update_reply>(
      fx.broker, actors::sub_update_atom::value, std::string{"g"}, ahead);
  REQUIRE(ok);
  REQUIRE_FALSE(ok->failure);
  CHECK(ok->rows_updated == 1);
  fx.push("q", "p3", {"y"});
  CHECK(fx.pop_one("q", "p3", "g").messages.empty()); // seeded an hour ahead
}

TEST_CASE("a failed subscription update over two queues changes neither, "
          "its retry updates both",
          "[failure][subscription]") {
  write_fault_sim fx;
  fx.push("q", "p", {"a"});
  fx.push("r", "p", {"a"});
  REQUIRE(fx.offsets(fx.pop_one("q", "p", "g")) == ints{0});
  REQUIRE(fx.offsets(fx.pop_one("r", "p", "g")) == ints{0});
  auto ahead = fx.wall() + 3'600'000'000;
  fx.gate_st->inject(fail_batches_with<storage::mut::update_subscription>(1));
  auto failed = fx.request<actors::sub_update_reply>(
      fx.broker, actors::sub_update_atom::value, std::string{"g"}, ahead);
  REQUIRE(failed);
  REQUIRE(failed->failure);
  CHECK(failed->rows_updated == 0);
  for (auto q : {"q", "r"})
    CHECK(fx.stored_subscription(q, "g")->mode
          == storage::subscription_mode::all);
  auto ok = fx.request<actors::sub_update_reply>(
      fx.broker, actors::sub_update_atom::value, std::string{"g"}, ahead);
  REQUIRE(ok);
  REQUIRE_FALSE(ok->failure);
  CHECK(ok->rows_updated == 2);
  for (auto q : {"q", "r"}) {
    CHECK(fx.stored_subscription(q, "g")->mode
          == storage::subscription_mode::timestamp);
    CHECK(fx.stored_subscription(q, "g")->timestamp == ahead);
  }
  // Each settle left the group's gate on both queues: another update (it
  // waits for the gate) goes through.
  auto again = fx.request<actors::sub_update_reply>(
      fx.broker, actors::sub_update_atom::value, std::string{"g"}, ahead + 1);
  REQUIRE(again);
  CHECK(again->rows_updated == 2);
}

TEST_CASE("a push whose queue or partition creation fails creates nothing, "
          "its retry starts at offset 0",
          "[failure][push]") {
  write_fault_sim fx;
  std::vector<actors::broker_push_item> items{{"fresh", {"p", msg("a")}}};
  fx.gate_st->inject(fail_batches_with<storage::mut::create_queue>(1));
  auto failed = fx.request<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, items);
  REQUIRE(failed);
  REQUIRE(failed->failure);
  CHECK_FALSE(fx.queue_exists("fresh"));
  auto ok = fx.request<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, items);
  REQUIRE(ok);
  REQUIRE_FALSE(ok->failure);
  CHECK(ok->results.at(0).result.off == offset{0});
  // A new partition of an existing queue.
  std::vector<actors::broker_push_item> more{{"fresh", {"p2", msg("b")}}};
  fx.gate_st->inject(fail_batches_with<storage::mut::create_partition>(1));
  auto no_part = fx.request<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, more);
  REQUIRE(no_part);
  REQUIRE(no_part->failure);
  CHECK(fx.live("fresh", "p").name == "p");
  {
    auto t = fx.store.store->db().read();
    REQUIRE(t);
    auto parts = storage::tables::partitions_of(*t, fx.queue_id("fresh"));
    REQUIRE(parts);
    CHECK(parts->size() == 1);
  }
  auto again = fx.request<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, more);
  REQUIRE(again);
  REQUIRE_FALSE(again->failure);
  CHECK(again->results.at(0).result.off == offset{0});
  CHECK(fx.partition("fresh", "p2").next_offset == offset{1});
}

TEST_CASE("a failed seek of a live cursor leaves it where it was",
          "[failure][seek]") {
  write_fault_sim fx;
  fx.push("q", "p", {"a", "b", "c"});
  auto r = fx.pop_one("q", "p", "g", 2);
  REQUIRE(fx.ack("q", "p", "g", r.lease->id, 0) == ack_error::none);
  REQUIRE(fx.ack("q", "p", "g", r.lease->id, 1) == ack_error::none);
  core::seek_target start;
  start.to_start = true;
  auto seek = [&] {
    auto s = fx.request<actors::seek_reply>(
        fx.broker, actors::seek_atom::value, std::string{"q"},
        actors::seek_request{"g", std::nullopt, start, false});
    REQUIRE(s);
    return *s;
  };
  fx.fail_next();
  auto failed = seek();
  REQUIRE(failed.failure);
  CHECK(fx.cursor("q", "p", "g")->committed == offset{1});
  CHECK(fx.offsets(fx.pop_one("q", "p", "g")) == ints{2});
  fx.advance(301s); // that lease ends
  REQUIRE_FALSE(seek().failure);
  CHECK(fx.offsets(fx.pop_one("q", "p", "g")) == ints{0, 1, 2});
}

TEST_CASE("a failed queue deletion leaves the queue serving, a retry "
          "deletes it",
          "[failure][queues]") {
  write_fault_sim fx;
  fx.push("q", "p", {"a"});
  fx.gate_st->inject(fail_batches_with<storage::mut::delete_queue>(1));
  auto del = [&] {
    auto r = fx.request<actors::delete_queue_reply>(
        fx.broker, actors::delete_atom::value, std::string{"q"});
    REQUIRE(r);
    return *r;
  };
  auto failed = del();
  REQUIRE(failed.failure);
  CHECK(fx.queue_exists("q"));
  fx.push("q", "p", {"b"});
  CHECK(fx.offsets(fx.pop_one("q", "p", "g")) == ints{0, 1});
  auto ok = del();
  REQUIRE_FALSE(ok.failure);
  CHECK(ok.existed);
  CHECK_FALSE(fx.queue_exists("q"));
}

TEST_CASE("a transaction whose write fails stores nothing, keeps its leases, "
          "and its retry commits",
          "[failure][txn]") {
  write_fault_sim fx;
  fx.push("q", "p", {"a", "b"});
  auto r = fx.pop_one("q", "p", "g");
  core::txn_request req;
  core::txn_ack_op a{{}, fx.partition("q", "p").uuid, "g", {}};
  a.ack.lease_id = r.lease->id;
  a.ack.off = offset{0};
  req.ops.push_back(a);
  core::txn_push_op push;
  push.items.push_back({"q", "p", msg("result")}); // no creation write
  req.ops.push_back(push);
  auto run = [&] {
    auto t = fx.request<actors::txn_reply>(fx.broker, actors::txn_atom::value,
                                           req);
    REQUIRE(t);
    return *t;
  };
  fx.fail_next();
  auto failed = run();
  CHECK((failed.failure || !failed.result.success));
  CHECK(fx.cursor("q", "p", "g")->committed == offset{-1});
  CHECK(fx.partition("q", "p").next_offset == offset{2});
  auto ok = run();
  REQUIRE_FALSE(ok.failure);
  REQUIRE(ok.result.success);
  CHECK(fx.cursor("q", "p", "g")->committed == offset{0});
  CHECK(ok.result.results.at(1).items.at(0).off == offset{2});
  CHECK(fx.partition("q", "p").next_offset == offset{3});
}
