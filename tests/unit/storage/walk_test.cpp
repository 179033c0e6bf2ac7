// The timestamp walk of the product document: committed = base_offset - 1 of
// the first retained segment with created_at >= ts; nothing that recent ->
// the last offset; the floor is the retention watermark.

#include "unit/storage/fixture.hpp"

#include <random>

using namespace spool::test;
using spool::storage::micros;
using spool::storage::offset;
using spool::storage::partition_log;

namespace {

constexpr micros minute = 60'000'000;
constexpr micros ten_o_clock = 1'785'000'000'000'000; // some day, 10:00

struct walk_fixture : store_fixture {
  spool::storage::partition_record p = make_partition();
  partition_log log{p, {.max_frames = 100, .max_bytes = 1 << 20}};

  /// Three segments: base 0 at 10:00, base 100 at 10:05, base 200 at 10:10.
  void three_segments() {
    for (int i = 0; i < 3; ++i)
      REQUIRE(append(log, msgs(100), ten_o_clock + i * 5 * minute));
  }

  offset walk(micros ts) {
    auto t = store->db().read();
    REQUIRE(t);
    auto by_index = spool::storage::resolve_timestamp(*t, p.queue, p.id, ts);
    auto by_walk
        = spool::storage::resolve_timestamp_by_walk(*t, p.queue, p.id, ts);
    REQUIRE(by_index);
    REQUIRE(by_walk);
    CHECK(*by_index == *by_walk);
    return *by_index;
  }
};

} // namespace

TEST_CASE("a timestamp equal to a segment's stamp lands just below that "
          "segment",
          "[storage][walk]") {
  walk_fixture fx;
  fx.three_segments();
  CHECK(fx.walk(ten_o_clock + 5 * minute) == offset{99});
  CHECK(fx.walk(ten_o_clock) == offset{-1});
}

TEST_CASE("a timestamp between stamps lands below the next segment",
          "[storage][walk]") {
  walk_fixture fx;
  fx.three_segments();
  CHECK(fx.walk(ten_o_clock + 3 * minute) == offset{99});
  CHECK(fx.walk(ten_o_clock + 5 * minute + 1) == offset{199});
}

TEST_CASE("a timestamp older than retention resolves to the oldest retained "
          "segment",
          "[storage][walk][retention]") {
  walk_fixture fx;
  fx.three_segments();
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto plan = spool::storage::plan_retention(
      *t, fx.p.queue, fx.p.id, {.created_before = ten_o_clock + 1});
  t->abort();
  REQUIRE(plan);
  REQUIRE(*plan);
  REQUIRE(fx.commit(spool::storage::write_batch{{**plan}}));
  CHECK(fx.stored(fx.p).watermark == offset{100});
  CHECK(fx.walk(ten_o_clock - 60 * minute) == offset{99});
  CHECK(fx.walk(ten_o_clock) == offset{99});
}

TEST_CASE("a timestamp newer than everything lands on the last offset",
          "[storage][walk]") {
  walk_fixture fx;
  fx.three_segments();
  CHECK(fx.walk(ten_o_clock + 11 * minute) == offset{299});
}

TEST_CASE("a timestamp walk on an empty partition lands on offset -1",
          "[storage][walk]") {
  walk_fixture fx;
  CHECK(fx.walk(ten_o_clock) == offset{-1});
  CHECK(fx.walk(0) == offset{-1});
}

TEST_CASE("segments with equal stamps resolve to the lowest base offset",
          "[storage][walk]") {
  walk_fixture fx;
  REQUIRE(fx.append(fx.log, msgs(10), ten_o_clock));
  REQUIRE(fx.append(fx.log, msgs(10), ten_o_clock + minute));
  // The clock steps back: the next segments keep the last stamp.
  REQUIRE(fx.append(fx.log, msgs(10), ten_o_clock));
  REQUIRE(fx.append(fx.log, msgs(10), ten_o_clock + minute));
  CHECK(fx.walk(ten_o_clock + minute) == offset{9});
  CHECK(fx.walk(ten_o_clock + 1) == offset{9});
}

TEST_CASE("the time index agrees with the forward walk on random logs",
          "[storage][walk][randomized]") {
  for (unsigned seed = 1; seed <= 25; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng{seed};
    walk_fixture fx;
    micros clock = ten_o_clock;
    std::vector<micros> stamps;
    int appends = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < appends; ++i) {
      // Mostly forward, sometimes backwards (clock step), sometimes equal.
      auto step = static_cast<std::int64_t>(rng() % 7) - 2;
      clock += step * minute / 3;
      auto sealed = fx.append(fx.log, msgs(1 + rng() % 250), clock);
      REQUIRE(sealed);
      stamps.push_back(sealed->created_at);
      if (rng() % 8 == 0) { // retention deletes some oldest segments
        auto t = fx.store->db().read();
        REQUIRE(t);
        auto plan = spool::storage::plan_retention(
            *t, fx.p.queue, fx.p.id,
            {.created_before = clock - static_cast<micros>(rng() % 5) * minute,
             .max_segments = 1 + rng() % 3});
        t->abort();
        REQUIRE(plan);
        if (*plan)
          REQUIRE(fx.commit(spool::storage::write_batch{{**plan}}));
      }
    }
    for (auto s : stamps)
      for (micros d : {micros{-1}, micros{0}, micros{1}})
        fx.walk(s + d);
    for (int i = 0; i < 50; ++i)
      fx.walk(ten_o_clock - 20 * minute
              + static_cast<micros>(rng() % (40 * 60)) * 1'000'000);
  }
}
