// The parking lot's wake rule (core/queue/parking_lot.hpp), driven directly: a
// wake reruns the parked pops of one chain (a group on a partition, or on
// any) one after the other in arrival order and stops at the first that
// finds nothing, so a push costs the pops it can serve.

#include <catch2/catch.hpp>

#include "core/queue/parking_lot.hpp"
#include "vocab/errors.hpp"

namespace lot_test {

using namespace spool;

struct test_request {
  std::string key;
  std::string group;
  int arrival = 0;
};

struct test_reply {
  std::vector<int> claimed;
  std::optional<api_error> failure;
  std::optional<mono_time> retry_at;
};

/// Where the lot answers a request: here, nowhere (the hooks record what
/// was served).
struct test_sink {
  void deliver(test_reply) {
  }
};

using lot_type = core::parking_lot<test_request, test_reply, test_sink>;

/// A lot over `frames` deliverable frames per group; counts the attempts
/// and records who was served, in order.
struct fixture {
  lot_type lot;
  std::map<std::string, int> frames;
  int attempts = 0;
  std::vector<int> served;
  /// The wake hint an attempt that finds nothing answers (none: no hint).
  std::optional<mono_time> hint;
  mono_time now = mono_time{} + std::chrono::hours{1};

  explicit fixture(bool chained) {
    lot_type::hooks h{
        .attempt =
            [this](const test_request& r, std::function<void(test_reply)> k) {
              ++attempts;
              test_reply reply;
              if (frames[r.group] > 0) {
                --frames[r.group];
                reply.claimed.push_back(r.arrival);
                served.push_back(r.arrival);
              } else {
                reply.retry_at = hint;
              }
              k(std::move(reply));
            },
        .nothing = &lot_type::nothing_claimed<test_reply>,
        .key = [](const test_request& r) { return r.key; },
        .topic = {},
        .busy = [](test_reply r) { return r; },
        .now = [this] { return now; },
        .rearm = [] {},
    };
    if (chained)
      h.chain = [](const test_request& r) { return r.group; };
    lot.setup(std::make_shared<std::atomic<std::size_t>>(0), 100'000,
              std::move(h));
  }

  void park(int n, const std::string& group, int first = 0) {
    for (int i = first; i < first + n; ++i)
      lot.submit({"k" + std::to_string(i), group, i}, {},
                 now + std::chrono::minutes{1}, true);
  }
};

} // namespace lot_test

using namespace lot_test;

TEST_CASE("a wake reruns a group's parked pops one after the other and stops "
          "at the first that finds nothing",
          "[sim][long-poll][parking-lot]") {
  fixture f{true};
  f.park(1000, "g");
  REQUIRE(f.attempts == 1000); // each ran once and parked
  f.attempts = 0;
  f.frames["g"] = 1; // a push of one frame
  f.lot.wake();
  CHECK(f.served == std::vector<int>{0}); // the first to arrive
  CHECK(f.attempts == 2); // it, then the next, which found nothing
  f.attempts = 0;
  f.frames["g"] = 3;
  f.lot.wake();
  CHECK(f.served == std::vector<int>{0, 1, 2, 3}); // in arrival order
  CHECK(f.attempts == 4);
  CHECK_FALSE(f.lot.empty()); // 996 still parked
}

TEST_CASE("chains are per group: a wake serves each group's first pops",
          "[sim][long-poll][parking-lot]") {
  fixture f{true};
  f.park(100, "a", 0);
  f.park(100, "b", 100);
  f.attempts = 0;
  f.frames["a"] = 1;
  f.frames["b"] = 1;
  f.lot.wake();
  CHECK(f.served == std::vector<int>{0, 100});
  CHECK(f.attempts == 4);
}

TEST_CASE("without chains every parked pop reruns on a wake (the cost the "
          "chains remove)",
          "[sim][long-poll][parking-lot]") {
  fixture f{false};
  f.park(1000, "g");
  f.attempts = 0;
  f.frames["g"] = 1;
  f.lot.wake();
  CHECK(f.served == std::vector<int>{0});
  CHECK(f.attempts == 1000);
}

TEST_CASE("a chain skips pops cancelled since the wake began",
          "[sim][long-poll][parking-lot]") {
  fixture f{true};
  f.park(3, "g");
  f.lot.cancel("k1");
  f.attempts = 0;
  f.frames["g"] = 2;
  f.lot.wake();
  CHECK(f.served == std::vector<int>{0, 2});
}

TEST_CASE("a chain's wake hint survives its holder: the next pop takes it "
          "over, and a hint that delivers continues the chain",
          "[sim][long-poll][parking-lot]") {
  fixture f{true};
  // Two pops; the first will hold the only hint (frames due at t + 10 s).
  f.lot.submit({"k0", "g", 0}, {}, f.now + std::chrono::seconds{5}, true);
  f.lot.submit({"k1", "g", 1}, {}, f.now + std::chrono::minutes{1}, true);
  f.hint = f.now + std::chrono::seconds{10};
  f.lot.wake(); // k0 reruns, finds nothing, parks with the hint
  f.hint.reset();
  CHECK(f.lot.next_due() == f.now + std::chrono::seconds{5});
  f.now += std::chrono::seconds{5};
  f.lot.expire(f.now); // k0's deadline: answered; k1 takes the hint
  CHECK(f.lot.next_due() == f.now + std::chrono::seconds{5});
  f.now += std::chrono::seconds{5};
  f.frames["g"] = 1; // the delayed frame is due
  f.lot.expire(f.now);
  CHECK(f.served == std::vector<int>{1});
}

TEST_CASE("a hint that delivers continues its chain to the next pops",
          "[sim][long-poll][parking-lot]") {
  fixture f{true};
  f.park(3, "g");
  f.hint = f.now + std::chrono::seconds{10};
  f.lot.wake(); // only the first reruns and takes the hint
  f.hint.reset();
  f.now += std::chrono::seconds{10};
  f.frames["g"] = 2;
  f.lot.expire(f.now);
  CHECK(f.served == std::vector<int>{0, 1});
}
