// The cursor's lease / ack / retry / delivery-count state machine
// (semantics.md §3–4), driven with explicit time.

#include <catch2/catch.hpp>

#include "core/cursor/cursor_core.hpp"

using namespace spool;
using namespace spool::core;
using namespace std::chrono_literals;

namespace {

const mono_time t0 = mono_time{} + 1000h; // away from zero

cursor_policy policy(std::int64_t retry_limit = 3) {
  cursor_policy p;
  p.lease_time = 30s;
  p.retry_limit = retry_limit;
  return p;
}

offset off(std::int64_t v) {
  return offset{v};
}

/// A cursor on a partition holding offsets 0..last.
struct cursor_fixture {
  cursor_core cur;
  offset last{9};
  int lease_no = 0;

  explicit cursor_fixture(cursor_policy p = policy()) :
      cur(spool::storage::cursor_record{}, std::move(p)) {
  }

  /// Pops up to `n` frames at `now`; returns the lease (or fails the test).
  lease_info pop(std::size_t n, mono_time now = t0) {
    auto plan = cur.plan(now, off(0), last, n);
    REQUIRE(std::holds_alternative<delivery_plan>(plan));
    auto& p = std::get<delivery_plan>(plan);
    auto g
        = cur.grant(p, p.deliver.size(), "L" + std::to_string(++lease_no), now);
    REQUIRE(g.lease);
    return *g.lease;
  }

  std::vector<offset> offsets_of(std::size_t n, mono_time now) {
    auto plan = cur.plan(now, off(0), last, n);
    if (!std::holds_alternative<delivery_plan>(plan))
      return {};
    return std::get<delivery_plan>(plan).deliver;
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
};

} // namespace

TEST_CASE("one batch is in flight per partition and group", "[cursor]") {
  cursor_fixture fx;
  auto l = fx.pop(3);
  CHECK(l.range == offset_range{off(0), off(2)});
  auto again = fx.cur.plan(t0, off(0), fx.last, 3);
  REQUIRE(std::holds_alternative<empty_reason>(again));
  CHECK(std::get<empty_reason>(again) == empty_reason::lease_held);
}

TEST_CASE("every new lease increases the lease epoch", "[cursor]") {
  cursor_fixture fx;
  auto a = fx.pop(1);
  fx.ack(a, 0);
  auto b = fx.pop(1);
  CHECK(b.epoch == a.epoch + 1);
  CHECK(fx.cur.record().lease_epoch == b.epoch);
}

TEST_CASE("a lease expires at exactly leaseTime", "[cursor][expiry]") {
  cursor_fixture fx;
  auto l = fx.pop(1);
  CHECK(l.expires == t0 + 30s);
  CHECK(fx.cur.next_deadline() == t0 + 30s);
  CHECK(!fx.cur.expire(t0 + 30s - 1ns).first);
  CHECK(fx.cur.lease());
  CHECK(fx.cur.expire(t0 + 30s).first);
  CHECK(!fx.cur.lease());
}

TEST_CASE("a completed ack commits the contiguous prefix of done frames",
          "[cursor][ack]") {
  cursor_fixture fx;
  auto l = fx.pop(5);
  CHECK(fx.ack(l, 2).changed);
  CHECK(fx.cur.committed() == off(-1));
  fx.ack(l, 0);
  CHECK(fx.cur.committed() == off(0));
  fx.ack(l, 1);
  CHECK(fx.cur.committed() == off(2));
  fx.ack(l, 3);
  auto last = fx.ack(l, 4);
  CHECK(fx.cur.committed() == off(4));
  CHECK(last.lease_released);
  CHECK(!fx.cur.lease());
}

TEST_CASE("a repeated completed ack succeeds and changes nothing",
          "[cursor][ack]") {
  cursor_fixture fx;
  auto l = fx.pop(3);
  fx.ack(l, 0);
  auto again = fx.ack(l, 0);
  CHECK(again.error == ack_error::none);
  CHECK(!again.changed);
  // Leaseless retry of an ack below committed, after the lease ended.
  fx.ack(l, 1);
  fx.ack(l, 2);
  ack_request late;
  late.off = off(1);
  auto r = fx.cur.ack(late, fx.last, t0);
  CHECK(r.error == ack_error::none);
  CHECK(!r.changed);
  CHECK(fx.cur.committed() == off(2));
}

TEST_CASE("acks never lower committed", "[cursor][ack]") {
  cursor_fixture fx;
  auto l = fx.pop(4);
  for (auto o : {3, 1, 0, 2})
    fx.ack(l, o);
  CHECK(fx.cur.committed() == off(3));
  auto l2 = fx.pop(2);
  auto r = fx.ack(l2, 1, ack_status::failed);
  CHECK(r.error == ack_error::none);
  CHECK(!r.changed);
  CHECK(fx.cur.committed() == off(3));
}

TEST_CASE("an ack naming another lease or a stale epoch is refused and "
          "changes nothing",
          "[cursor][ack]") {
  cursor_fixture fx;
  auto l = fx.pop(3);
  auto before = fx.cur.record();
  ack_request wrong;
  wrong.lease_id = "nope";
  wrong.off = off(0);
  CHECK(fx.cur.ack(wrong, fx.last, t0).error == ack_error::invalid_lease);
  ack_request stale;
  stale.lease_id = l.id;
  stale.lease_epoch = l.epoch - 1;
  stale.off = off(0);
  CHECK(fx.cur.ack(stale, fx.last, t0).error == ack_error::invalid_lease);
  // The lease expired by the clock, even before the expiry timer ran.
  CHECK(fx.ack(l, 0, ack_status::completed, t0 + 30s).error
        == ack_error::invalid_lease);
  CHECK(fx.cur.record() == before);
}

TEST_CASE("a leaseless ack settles a frame inside the live lease",
          "[cursor][ack]") {
  cursor_fixture fx;
  fx.pop(2);
  ack_request r;
  r.off = off(0);
  CHECK(fx.cur.ack(r, fx.last, t0).changed);
  CHECK(fx.cur.committed() == off(0));
}

TEST_CASE("an ack above the lease is not in lease, beyond the log not found",
          "[cursor][ack]") {
  cursor_fixture fx;
  auto l = fx.pop(2);
  CHECK(fx.ack(l, 5).error == ack_error::not_in_lease);
  CHECK(fx.ack(l, 10).error == ack_error::not_found);
  CHECK(fx.ack(l, -3).error == ack_error::not_found);
  ack_request leaseless;
  leaseless.off = off(4); // above committed, no lease covers it
  fx.ack(l, 0);
  fx.ack(l, 1);
  CHECK(fx.cur.ack(leaseless, fx.last, t0).error == ack_error::invalid_lease);
}

TEST_CASE("a failed ack charges the named frame and redelivers the unsettled "
          "remainder after retryDelay",
          "[cursor][retry]") {
  auto p = policy();
  p.retry_delay = 500ms;
  cursor_fixture fx{p};
  auto l = fx.pop(5);
  fx.ack(l, 0);
  fx.ack(l, 3);
  auto r = fx.ack(l, 2, ack_status::failed);
  CHECK(r.lease_released);
  CHECK(!r.dead);
  CHECK(fx.cur.head_failures() == 0); // frame 1 was not charged
  CHECK(fx.cur.record().counters.size() >= 2);
  CHECK(fx.cur.next_deadline() == t0 + 500ms);
  auto early = fx.cur.plan(t0 + 499ms, off(0), fx.last, 10);
  REQUIRE(std::holds_alternative<empty_reason>(early));
  CHECK(std::get<empty_reason>(early) == empty_reason::delayed);
  // Frames 1, 2, 4 come back in order; 3 stays done.
  CHECK(fx.offsets_of(10, t0 + 500ms)
        == std::vector<offset>{off(1), off(2), off(4), off(5), off(6), off(7),
                               off(8), off(9)});
}

TEST_CASE("retryBackoffMs picks the delay by failure count and delayMs "
          "overrides it",
          "[cursor][retry]") {
  auto p = policy(10);
  p.retry_backoff = {100ms, 1000ms};
  cursor_fixture fx{p};
  auto l = fx.pop(1);
  fx.ack(l, 0, ack_status::failed);
  CHECK(fx.cur.next_deadline() == t0 + 100ms);
  l = fx.pop(1, t0 + 100ms);
  fx.ack(l, 0, ack_status::failed, t0 + 100ms);
  CHECK(fx.cur.next_deadline() == t0 + 1100ms);
  l = fx.pop(1, t0 + 1100ms);
  fx.ack(l, 0, ack_status::failed, t0 + 1100ms); // past the list: last entry
  CHECK(fx.cur.next_deadline() == t0 + 2100ms);
  l = fx.pop(1, t0 + 2100ms);
  ack_request r;
  r.lease_id = l.id;
  r.off = off(0);
  r.status = ack_status::failed;
  r.delay = 7ms;
  fx.cur.ack(r, fx.last, t0 + 2100ms);
  CHECK(fx.cur.next_deadline() == t0 + 2107ms);
}

TEST_CASE("a frame failed past retryLimit goes to the dead-letter queue and "
          "counts as done",
          "[cursor][dlq]") {
  cursor_fixture fx{policy(2)};
  std::optional<dead_letter> dead;
  for (int i = 0; i < 3; ++i) {
    auto l = fx.pop(3);
    CHECK(l.range.first == off(0));
    dead = fx.ack(l, 0, ack_status::failed).dead;
    if (i < 2)
      CHECK(!dead);
  }
  REQUIRE(dead);
  CHECK(dead->off == off(0));
  CHECK(dead->failures == 3);
  CHECK(dead->deliveries == 3);
  CHECK(dead->error == "boom");
  CHECK(fx.cur.committed() == off(0)); // the cursor moved past it
  CHECK(fx.pop(1).range.first == off(1));
}

TEST_CASE("a dlq ack dead-letters at once and a retry ack charges nothing",
          "[cursor][dlq][retry]") {
  cursor_fixture fx;
  auto l = fx.pop(3);
  auto r = fx.ack(l, 0, ack_status::dlq);
  REQUIRE(r.dead);
  CHECK(r.dead->off == off(0));
  CHECK(fx.cur.committed() == off(0));
  CHECK(fx.cur.lease()); // 1 and 2 are still leased
  auto retry = fx.ack(l, 1, ack_status::retry);
  CHECK(retry.lease_released);
  CHECK(fx.cur.head_failures() == 0);
  CHECK(fx.offsets_of(2, t0) == std::vector<offset>{off(1), off(2)});
}

TEST_CASE("an expired single-frame lease charges its frame",
          "[cursor][expiry]") {
  cursor_fixture fx;
  fx.pop(1);
  auto [changed, dead] = fx.cur.expire(t0 + 30s);
  CHECK(changed);
  CHECK(dead.empty());
  CHECK(fx.cur.head_failures() == 1);
}

TEST_CASE("an expired multi-frame lease isolates its unsettled frames "
          "without charging them",
          "[cursor][expiry]") {
  cursor_fixture fx;
  auto l = fx.pop(5);
  fx.ack(l, 0);
  fx.cur.expire(t0 + 30s);
  CHECK(fx.cur.head_failures() == 0);
  REQUIRE(fx.cur.isolated());
  CHECK(*fx.cur.isolated() == offset_range{off(1), off(4)});
  // Delivered one frame per lease until committed passes the range.
  for (std::int64_t o = 1; o <= 4; ++o) {
    auto single = fx.pop(10, t0 + 31s);
    CHECK(single.range == offset_range{off(o), off(o)});
    fx.ack(single, o, ack_status::completed, t0 + 31s);
  }
  CHECK(!fx.cur.isolated());
  CHECK(fx.pop(10, t0 + 31s).range == offset_range{off(5), off(9)});
}

TEST_CASE("a poison message that crashes its consumer reaches the DLQ in at "
          "most retryLimit + 2 deliveries and innocent batch-mates never do",
          "[cursor][expiry][dlq]") {
  for (std::int64_t retry_limit : {0, 1, 3, 5}) {
    INFO("retryLimit " << retry_limit);
    cursor_fixture fx{policy(retry_limit)};
    fx.last = offset{19};
    const std::int64_t poison = 7;
    auto now = t0;
    std::vector<dead_letter> dead;
    std::uint32_t poison_deliveries = 0;
    // A consumer that processes in order and crashes on the poison message.
    while (fx.cur.committed() < fx.last) {
      auto plan = fx.cur.plan(now, off(0), fx.last, 10);
      REQUIRE(std::holds_alternative<delivery_plan>(plan));
      auto& p = std::get<delivery_plan>(plan);
      auto g = fx.cur.grant(p, p.deliver.size(), "L", now);
      REQUIRE(g.lease);
      bool crashed = false;
      for (auto o : p.deliver) {
        if (o == off(poison)) {
          ++poison_deliveries;
          crashed = true;
          break;
        }
        fx.ack(*g.lease, o.value, ack_status::completed, now);
      }
      if (crashed) {
        now += 31s;
        auto [_, d] = fx.cur.expire(now);
        dead.insert(dead.end(), d.begin(), d.end());
      }
      REQUIRE(poison_deliveries <= retry_limit + 2);
    }
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].off == off(poison));
    CHECK(poison_deliveries == retry_limit + 2);
  }
}

TEST_CASE("maxDeliveries dead-letters a frame whose delivery count reached it",
          "[cursor][dlq]") {
  auto p = policy(100);
  p.max_deliveries = 2;
  cursor_fixture fx{p};
  for (int i = 0; i < 2; ++i) {
    fx.pop(1);
    fx.cur.expire(t0 + 30s);
  }
  auto plan = fx.cur.plan(t0 + 30s, off(0), fx.last, 3);
  REQUIRE(std::holds_alternative<delivery_plan>(plan));
  auto& dp = std::get<delivery_plan>(plan);
  CHECK(dp.dead == std::vector<offset>{off(0)});
  CHECK(dp.deliver == std::vector<offset>{off(1), off(2), off(3)});
  auto g = fx.cur.grant(dp, 3, "L", t0 + 30s);
  REQUIRE(g.dead.size() == 1);
  CHECK(g.dead[0].deliveries == 2);
  CHECK(fx.cur.committed() == off(0));
}

TEST_CASE("a lease extend moves the expiry to max(current, now + seconds)",
          "[cursor][extend]") {
  cursor_fixture fx;
  auto l = fx.pop(1);
  auto shorter = fx.cur.extend(l.id, 10s, t0 + 5s);
  REQUIRE(std::holds_alternative<mono_time>(shorter));
  CHECK(std::get<mono_time>(shorter) == t0 + 30s);
  auto longer = fx.cur.extend(l.id, 60s, t0 + 5s);
  CHECK(std::get<mono_time>(longer) == t0 + 65s);
  CHECK(!fx.cur.expire(t0 + 64s).first);
  CHECK(std::get<extend_error>(fx.cur.extend("other", 10s, t0))
        == extend_error::not_found);
  CHECK(std::get<extend_error>(fx.cur.extend(l.id, 10s, t0 + 65s))
        == extend_error::expired);
  CHECK(std::string{to_string(extend_error::expired)}
        == "Lease already expired");
}

TEST_CASE("an unwritable pop response releases its lease and counts no "
          "delivery",
          "[cursor]") {
  cursor_fixture fx;
  auto l = fx.pop(3);
  CHECK(fx.cur.deliveries_of(off(0)) == 1);
  CHECK(fx.cur.release_unwritten(l.id));
  CHECK(!fx.cur.lease());
  CHECK(fx.cur.deliveries_of(off(0)) == 0);
  CHECK(fx.cur.head_failures() == 0);
  CHECK(fx.offsets_of(3, t0) == std::vector<offset>{off(0), off(1), off(2)});
  CHECK(!fx.cur.release_unwritten("other"));
}

TEST_CASE("a seek releases the lease and resets the retry budget",
          "[cursor][seek]") {
  cursor_fixture fx;
  auto l = fx.pop(3);
  fx.ack(l, 0, ack_status::failed);
  l = fx.pop(3);
  CHECK(fx.cur.head_failures() == 1);
  auto epoch = fx.cur.lease_epoch();
  fx.cur.seek(off(5));
  CHECK(!fx.cur.lease());
  CHECK(fx.cur.committed() == off(5));
  CHECK(fx.cur.head_failures() == 0);
  CHECK(fx.cur.lease_epoch() == epoch + 1);
  CHECK(fx.ack(l, 1).error == ack_error::invalid_lease);
  fx.cur.seek(off(-1)); // backwards too
  CHECK(fx.pop(2).range == offset_range{off(0), off(1)});
  CHECK(fx.cur.deliveries_of(off(0)) == 1);
}

TEST_CASE("the record a staged seek writes is the record the seek leaves",
          "[cursor][seek]") {
  cursor_fixture fx;
  // A cursor with failures, delivery counts, a live lease, an isolated
  // range after an expiry, a requeued dead letter and recorded activity.
  auto l = fx.pop(4);
  fx.ack(l, 0);
  fx.ack(l, 1, ack_status::failed);
  fx.pop(3);
  fx.cur.expire(t0 + std::chrono::hours(1));
  REQUIRE(fx.cur.requeue(7, off(2)) == cursor_core::requeue_result::added);
  fx.pop(1);
  fx.cur.touch(5'000);
  using spool::storage::micros;
  for (auto [to, wall] : {std::pair<offset, micros>{off(6), 9'000},
                          std::pair<offset, micros>{off(-1), 1'000}}) {
    auto staged = fx.cur.record_after_seek(to, wall);
    auto copy = fx.cur;
    copy.seek(to);
    copy.touch(wall);
    CHECK(staged == copy.record());
  }
}

TEST_CASE("a lease lost to a restart ends as an expiry", "[cursor][restart]") {
  SECTION("several unsettled frames are isolated") {
    cursor_fixture fx;
    auto l = fx.pop(4);
    fx.ack(l, 0);
    cursor_core after{fx.cur.record(), policy()};
    CHECK(!after.lease());
    auto [changed, dead] = after.recover_lost_lease();
    CHECK(changed);
    REQUIRE(after.isolated());
    CHECK(*after.isolated() == offset_range{off(1), off(3)});
    CHECK(after.head_failures() == 0);
    CHECK(after.deliveries_of(off(1)) == 1); // durable delivery count
  }
  SECTION("a single unsettled frame is charged") {
    cursor_fixture fx;
    fx.pop(1);
    cursor_core after{fx.cur.record(), policy()};
    after.recover_lost_lease();
    CHECK(after.head_failures() == 1);
    CHECK(!after.recover_lost_lease().first);
  }
}

TEST_CASE("a cursor below the watermark resumes at the oldest retained offset",
          "[cursor][retention]") {
  cursor_fixture fx;
  auto plan = fx.cur.plan(t0, off(4), fx.last, 2);
  REQUIRE(std::holds_alternative<delivery_plan>(plan));
  auto& p = std::get<delivery_plan>(plan);
  REQUIRE(p.skipped);
  CHECK(*p.skipped == offset_range{off(0), off(3)});
  CHECK(p.deliver == std::vector<offset>{off(4), off(5)});
  fx.cur.grant(p, 2, "L", t0);
  CHECK(fx.cur.committed() == off(3));
}

TEST_CASE("nothing beyond the visible end is delivered", "[cursor]") {
  cursor_fixture fx;
  auto plan = fx.cur.plan(t0, off(0), off(-1), 5);
  REQUIRE(std::holds_alternative<empty_reason>(plan));
  CHECK(std::get<empty_reason>(plan) == empty_reason::empty);
  CHECK(fx.offsets_of(5, t0).size() == 5);
}

TEST_CASE("delivery and failure counts survive in the durable record",
          "[cursor][restart]") {
  cursor_fixture fx;
  auto l = fx.pop(3);
  fx.ack(l, 1);
  fx.ack(l, 0, ack_status::failed);
  auto rec = fx.cur.record();
  cursor_core after{rec, policy()};
  CHECK(after.record() == rec);
  CHECK(after.committed() == off(-1));
  CHECK(after.head_failures() == 1);
  CHECK(after.deliveries_of(off(0)) == 1);
  auto plan = after.plan(t0, off(0), offset{9}, 3);
  REQUIRE(std::holds_alternative<delivery_plan>(plan));
  CHECK(std::get<delivery_plan>(plan).deliver
        == std::vector<offset>{off(0), off(2), off(3)});
}

TEST_CASE("a lease extend adds 1 s to lease.maxExtendSeconds, no more and no "
          "less",
          "[cursor][extend][limits]") {
  auto p = policy();
  p.max_extend = 3600s;
  cursor_fixture fx{p};
  auto l = fx.pop(1);
  for (auto by : {milliseconds{0}, milliseconds{999}, milliseconds{-1000},
                  milliseconds{3'600'001},
                  milliseconds{std::numeric_limits<std::int64_t>::max()}})
    CHECK(std::get<extend_error>(fx.cur.extend(l.id, by, t0))
          == extend_error::out_of_range);
  CHECK(fx.cur.lease()->expires == t0 + 30s); // nothing changed
  CHECK(std::holds_alternative<mono_time>(fx.cur.extend(l.id, 1s, t0)));
  auto most = fx.cur.extend(l.id, 3600s, t0);
  REQUIRE(std::holds_alternative<mono_time>(most));
  CHECK(std::get<mono_time>(most) == t0 + 3600s);
}

TEST_CASE("delayMs is 0..86400000 and a larger one cannot overflow the retry "
          "time",
          "[cursor][retry][limits]") {
  ack_request r;
  r.off = off(0);
  CHECK(check_ack(r));
  r.delay = milliseconds{0};
  CHECK(check_ack(r));
  r.delay = max_ack_delay;
  CHECK(check_ack(r));
  r.delay = max_ack_delay + 1ms;
  REQUIRE_FALSE(check_ack(r));
  CHECK(check_ack(r).err().message
        == "delayMs must be between 0 and 86400000, got 86400001");
  r.delay = -1ms;
  CHECK_FALSE(check_ack(r));
  // The core clamps what reaches it: no overflow of now + delay.
  cursor_fixture fx;
  auto l = fx.pop(1);
  ack_request huge;
  huge.lease_id = l.id;
  huge.off = off(0);
  huge.status = ack_status::retry;
  huge.delay = milliseconds{std::numeric_limits<std::int64_t>::max() / 2};
  fx.cur.ack(huge, fx.last, t0);
  CHECK(fx.cur.next_deadline() == t0 + max_ack_delay);
}

TEST_CASE("a group's lag counts the frames after what it consumed, "
          "retention's deletions counting as consumed",
          "[core][cursor][lag]") {
  auto l = lag_of(offset{3}, offset{0}, offset{9});
  CHECK(l.consumed == offset{3});
  CHECK(l.lag == 6);
  l = lag_of(offset{3}, offset{6}, offset{9}); // frames 0..5 deleted
  CHECK(l.consumed == offset{5});
  CHECK(l.lag == 4);
  CHECK(lag_of(offset{9}, offset{0}, offset{9}).lag == 0);
  CHECK(lag_of(offset{-1}, offset{0}, offset{-1}).lag == 0); // empty
}

TEST_CASE("introspection sees a lease only while it lives, and counts "
          "frames delivered more than once",
          "[core][cursor][lag]") {
  cursor_fixture f;
  auto l = f.pop(3);
  CHECK(f.cur.live_lease(t0)->id == l.id);
  CHECK_FALSE(f.cur.live_lease(t0 + 31s)); // lease_time 30 s
  CHECK(f.cur.redeliveries() == 0);
  (void)f.cur.expire(t0 + 31s); // several frames: isolated, none charged
  f.pop(1, t0 + 32s);
  CHECK(f.cur.redeliveries() == 1);
}

TEST_CASE("introspection counts the frames done above committed and the "
          "live lease's unsettled frames",
          "[core][cursor][lag]") {
  cursor_fixture f;
  auto l = f.pop(4);
  CHECK(f.cur.in_flight(t0, off(0)) == 4);
  CHECK(f.cur.in_flight(t0, off(1)) == 3); // frame 0 deleted under it
  f.ack(l, 2);                             // out of order
  f.ack(l, 3, ack_status::dlq);
  CHECK(f.cur.committed() == off(-1));
  CHECK(f.cur.done_above(off(0)) == 2);
  CHECK(f.cur.done_above(off(3)) == 1); // frames below 3 deleted
  CHECK(f.cur.in_flight(t0, off(0)) == 2);
  CHECK(f.cur.in_flight(t0 + 31s, off(0)) == 0); // the lease is over
  f.ack(l, 0);
  f.ack(l, 1);
  CHECK(f.cur.committed() == off(3));
  CHECK(f.cur.done_above(off(0)) == 0);
  CHECK(f.cur.in_flight(t0, off(0)) == 0);
}
