// Requeued dead letters in the cursor's state machine (semantics.md §4):
// delivered alone, ahead of new frames, once the current lease ends; acked
// with the ordinary ack even though their offset is at or below committed;
// back to the DLQ past the retry limit; durable across a restart.

#include <catch2/catch.hpp>

#include "core/cursor/cursor_core.hpp"

using namespace spool;
using namespace spool::core;
using namespace std::chrono_literals;
using requeue_result = cursor_core::requeue_result;

namespace {

const mono_time t0 = mono_time{} + 1000h;

offset off(std::int64_t v) {
  return offset{v};
}

cursor_policy policy(std::int64_t retry_limit = 1) {
  cursor_policy p;
  p.lease_time = 30s;
  p.retry_limit = retry_limit;
  return p;
}

struct requeue_fixture {
  cursor_core cur;
  offset last{9};
  int lease_no = 0;

  explicit requeue_fixture(cursor_policy p = policy()) :
      cur(spool::storage::cursor_record{}, std::move(p)) {
  }

  std::variant<delivery_plan, empty_reason> plan(std::size_t n,
                                                 mono_time now = t0) {
    return cur.plan(now, off(0), last, n);
  }

  grant_result pop(std::size_t n, mono_time now = t0) {
    auto p = plan(n, now);
    REQUIRE(std::holds_alternative<delivery_plan>(p));
    auto& dp = std::get<delivery_plan>(p);
    return cur.grant(dp, dp.deliver.size(), "L" + std::to_string(++lease_no),
                     now);
  }

  ack_outcome ack(const lease_info& l, std::int64_t o,
                  ack_status s = ack_status::completed, mono_time now = t0) {
    ack_request r;
    r.lease_id = l.id;
    r.off = off(o);
    r.status = s;
    r.error = "boom";
    return cur.ack(r, last, now);
  }

  /// Consumes 0..n-1 completely, so committed = n-1.
  void consume(std::int64_t n) {
    auto g = pop(static_cast<std::size_t>(n));
    REQUIRE(g.lease);
    for (std::int64_t o = 0; o < n; ++o)
      ack(*g.lease, o);
    REQUIRE(cur.committed() == off(n - 1));
  }
};

} // namespace

TEST_CASE("a requeued entry is delivered alone and before new frames",
          "[cursor][dlq][requeue]") {
  requeue_fixture fx;
  fx.consume(3);
  CHECK(fx.cur.requeue(7, off(1)) == requeue_result::added);
  auto g = fx.pop(5);
  REQUIRE(g.lease);
  CHECK(g.lease->requeued == std::optional<std::uint64_t>{7});
  CHECK(g.lease->range == offset_range{off(1), off(1)});
  REQUIRE(g.delivery_counts.size() == 1);
  CHECK(g.delivery_counts[0].second == 1);
  // One batch in flight: nothing else until the requeue lease ends.
  auto held = fx.plan(5);
  REQUIRE(std::holds_alternative<empty_reason>(held));
  CHECK(std::get<empty_reason>(held) == empty_reason::lease_held);
  auto done = fx.ack(*g.lease, 1);
  CHECK(done.error == ack_error::none);
  CHECK(done.changed);
  CHECK(done.requeue_done == std::optional<std::uint64_t>{7});
  CHECK(done.lease_released);
  CHECK(fx.cur.requeued().empty());
  CHECK(fx.cur.committed() == off(2)); // untouched
  // Then the new frames.
  auto next = fx.pop(5);
  REQUIRE(next.lease);
  CHECK(!next.lease->requeued);
  CHECK(next.lease->range.first == off(3));
}

TEST_CASE("an upTo ack at or above a requeued entry completes it, one below "
          "it is settled or not in the lease",
          "[cursor][dlq][requeue][upto]") {
  requeue_fixture fx;
  fx.consume(5); // committed 4
  CHECK(fx.cur.requeue(7, off(2)) == requeue_result::added);
  auto g = fx.pop(5);
  REQUIRE(g.lease);
  REQUIRE(g.lease->requeued);
  auto up_to = [&](std::int64_t o) {
    ack_request r;
    r.lease_id = g.lease->id;
    r.up_to = off(o);
    return fx.cur.ack(r, fx.last, t0);
  };
  // Below the entry and at or below committed: settled, nothing changes.
  auto below = up_to(1);
  CHECK(below.error == ack_error::none);
  CHECK_FALSE(below.changed);
  CHECK(fx.cur.lease());
  auto done = up_to(4);
  CHECK(done.error == ack_error::none);
  CHECK(done.requeue_done == std::optional<std::uint64_t>{7});
  CHECK(done.lease_released);
  CHECK(fx.cur.requeued().empty());
  CHECK(fx.cur.committed() == off(4));
}

TEST_CASE("a requeue waits for the current lease to end",
          "[cursor][dlq][requeue]") {
  requeue_fixture fx;
  fx.consume(2);
  auto g = fx.pop(2);
  REQUIRE(g.lease);
  CHECK(fx.cur.requeue(4, off(0)) == requeue_result::added);
  CHECK(std::get<empty_reason>(fx.plan(1)) == empty_reason::lease_held);
  fx.ack(*g.lease, 2);
  fx.ack(*g.lease, 3);
  auto r = fx.pop(3);
  REQUIRE(r.lease);
  CHECK(r.lease->requeued == std::optional<std::uint64_t>{4});
}

TEST_CASE("requeuing a pending entry again changes nothing",
          "[cursor][dlq][requeue]") {
  requeue_fixture fx;
  CHECK(fx.cur.requeue(3, off(0)) == requeue_result::added);
  CHECK(fx.cur.requeue(3, off(0)) == requeue_result::pending);
  CHECK(fx.cur.requeued().size() == 1);
}

TEST_CASE("a requeued entry that fails past retryLimit returns to the DLQ "
          "with its id",
          "[cursor][dlq][requeue]") {
  requeue_fixture fx(policy(1));
  fx.consume(2);
  fx.cur.requeue(9, off(0));
  auto a = fx.pop(1);
  REQUIRE(a.lease);
  auto first = fx.ack(*a.lease, 0, ack_status::failed);
  CHECK(first.error == ack_error::none);
  CHECK(!first.dead);
  CHECK(fx.cur.requeued().size() == 1);
  auto b = fx.pop(1);
  REQUIRE(b.lease);
  CHECK(b.delivery_counts[0].second == 2);
  auto second = fx.ack(*b.lease, 0, ack_status::failed);
  REQUIRE(second.dead);
  CHECK(second.dead->dlq_id == std::optional<std::uint64_t>{9});
  CHECK(second.dead->off == off(0));
  CHECK(second.dead->deliveries == 2);
  CHECK(second.dead->error == "boom");
  CHECK(fx.cur.requeued().empty());
  CHECK(fx.cur.committed() == off(1));
}

TEST_CASE("an expired requeue lease charges its entry", "[cursor][dlq]") {
  requeue_fixture fx(policy(0));
  fx.cur.requeue(5, off(0));
  auto a = fx.pop(1);
  REQUIRE(a.lease);
  auto [changed, dead] = fx.cur.expire(t0 + 30s);
  CHECK(changed);
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].dlq_id == std::optional<std::uint64_t>{5});
  CHECK(dead[0].error == "lease expired");
}

TEST_CASE("an ack of a requeued frame names the live requeue lease",
          "[cursor][dlq][ack]") {
  requeue_fixture fx;
  fx.consume(2);
  fx.cur.requeue(5, off(0));
  auto a = fx.pop(1);
  REQUIRE(a.lease);
  // A late ack of the expired lease is refused, not an idempotent success.
  ack_request late;
  late.off = off(0);
  CHECK(fx.cur.ack(late, fx.last, t0 + 31s).error == ack_error::invalid_lease);
  // A leaseless ack of the live lease settles it.
  auto ok = fx.cur.ack(late, fx.last, t0 + 1s);
  CHECK(ok.error == ack_error::none);
  CHECK(ok.requeue_done == std::optional<std::uint64_t>{5});
  // Later acks of the same offset are idempotent no-ops.
  auto again = fx.cur.ack(late, fx.last, t0 + 2s);
  CHECK(again.error == ack_error::none);
  CHECK(!again.changed);
}

TEST_CASE("a retry of a requeued frame delivers it again without a charge",
          "[cursor][dlq]") {
  requeue_fixture fx(policy(0));
  fx.cur.requeue(5, off(3));
  auto a = fx.pop(1);
  REQUIRE(a.lease);
  auto r = fx.ack(*a.lease, 3, ack_status::retry);
  CHECK(!r.dead);
  CHECK(fx.cur.requeued().front().failures == 0);
  auto b = fx.pop(1);
  REQUIRE(b.lease);
  CHECK(b.lease->requeued == std::optional<std::uint64_t>{5});
}

TEST_CASE("a pending requeue survives a restart and a leased one is charged",
          "[cursor][dlq][restart]") {
  requeue_fixture fx(policy(3));
  fx.cur.requeue(5, off(0));
  fx.cur.requeue(6, off(1));
  auto a = fx.pop(1);
  REQUIRE(a.lease);
  auto rec = fx.cur.record();
  REQUIRE(rec.requeued.size() == 2);
  CHECK(rec.requeued[0].leased);
  cursor_core after(rec, policy(3));
  auto [changed, dead] = after.recover_lost_lease();
  CHECK(changed);
  CHECK(dead.empty());
  REQUIRE(after.requeued().size() == 2);
  CHECK(after.requeued()[0].failures == 1);
  CHECK(!after.requeued()[0].leased);
  auto p = after.plan(t0, off(0), off(9), 5);
  REQUIRE(std::holds_alternative<delivery_plan>(p));
  CHECK(std::get<delivery_plan>(p).requeued == std::optional<std::uint64_t>{5});
}

TEST_CASE("a requeued entry whose DLQ entry is gone is forgotten",
          "[cursor][dlq]") {
  requeue_fixture fx;
  fx.cur.requeue(5, off(0));
  CHECK(fx.cur.drop_requeued(5));
  CHECK(fx.cur.requeued().empty());
  CHECK(!fx.cur.drop_requeued(5));
}

TEST_CASE("a response that cannot be written uncounts a requeued delivery",
          "[cursor][dlq]") {
  requeue_fixture fx;
  fx.cur.requeue(5, off(0));
  auto a = fx.pop(1);
  REQUIRE(a.lease);
  CHECK(fx.cur.release_unwritten(a.lease->id));
  CHECK(fx.cur.requeued().front().deliveries == 0);
  CHECK(!fx.cur.requeued().front().leased);
}

TEST_CASE("deadLetterQueue=false and dlqAfterMaxRetries=false drop dead "
          "letters, either alone keeps the DLQ",
          "[cursor][dlq][options]") {
  spool::storage::queue_options o;
  CHECK(!cursor_policy::from(o).drop_dead_letters);
  o.dead_letter_queue = false;
  CHECK(!cursor_policy::from(o).drop_dead_letters);
  o.dlq_after_max_retries = false;
  CHECK(cursor_policy::from(o).drop_dead_letters);
  o.dead_letter_queue = true;
  CHECK(!cursor_policy::from(o).drop_dead_letters);
  o.dead_letter_queue.reset();
  CHECK(!cursor_policy::from(o).drop_dead_letters);
}
