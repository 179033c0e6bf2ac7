// The replication simulation's seeds (sim_cluster.hpp). Built once with the
// real core, and once per planted bug (SPOOL_PLANT_*: tests/CMakeLists.txt),
// where the test instead requires that some seed finds the bug.
//
// SPOOL_SIM_SEEDS=N runs N seeds (default: sim_seeds below) from
// SPOOL_SIM_FIRST (default 1);
// SPOOL_SIM_SEED=S replays seed S alone and prints its trace.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <string>

#include "sim_cluster.hpp"

using namespace spool::cluster::sim;

namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

#if defined(SPOOL_SIM_SANITIZE)
constexpr std::uint64_t sim_seeds = 1000;
#else
constexpr std::uint64_t sim_seeds = 10000;
#endif

#if defined(SPOOL_PLANT_OLD_EPOCH_COMMIT)
#define PLANTED "a leader that counts acknowledgements sent in an older epoch"
#elif defined(SPOOL_PLANT_FENCE_BEFORE_SYNC)
#define PLANTED "a replica that answers a fence before the epoch is synced"
#elif defined(SPOOL_PLANT_NO_TRUNCATE)
#define PLANTED                                                                \
  "a follower that keeps a divergent tail instead of truncating it"
#endif

} // namespace

#ifndef PLANTED

TEST_CASE("replication keeps every invariant over thousands of seeded runs "
          "with crashes, partitions, lost, duplicated, reordered and corrupted "
          "messages",
          "[cluster][sim]") {
  if (auto one = env_or("SPOOL_SIM_SEED", 0)) {
    sim_options o;
    o.seed = one;
    o.trace_lines = 1000000;
    auto r = run(o);
    std::cout << r.trace << (r.ok ? "ok" : r.failure) << "\n";
    REQUIRE(r.ok);
    return;
  }
  auto seeds = env_or("SPOOL_SIM_SEEDS", sim_seeds);
  auto first = env_or("SPOOL_SIM_FIRST", 1);
  sim_result total;
  for (std::uint64_t seed = first; seed < first + seeds; ++seed) {
    auto r = run({seed});
    if (!r.ok) {
      std::cout << r.trace << r.failure << "\nreplay: SPOOL_SIM_SEED=" << seed
                << " "
                << "spool_cluster_sim_tests\n";
      FAIL(r.failure);
    }
    total.committed += r.committed;
    total.acknowledged += r.acknowledged;
    total.elections += r.elections;
    total.crashes += r.crashes;
    total.truncations += r.truncations;
    total.snapshots += r.snapshots;
    total.pieced_snapshots += r.pieced_snapshots;
  }
  // The runs did what they are for: writes committed and acknowledged
  // across crashes, elections, truncated tails and snapshots.
  std::cout << "replication sim: seeds " << seeds << ", committed "
            << total.committed << ", acknowledged " << total.acknowledged
            << ", elections " << total.elections << ", crashes "
            << total.crashes << ", truncations " << total.truncations
            << ", snapshots " << total.snapshots << " ("
            << total.pieced_snapshots << " in pieces)\n";
  INFO("seeds " << seeds << ", committed " << total.committed
                << ", acknowledged " << total.acknowledged << ", elections "
                << total.elections << ", crashes " << total.crashes
                << ", truncations " << total.truncations << ", snapshots "
                << total.snapshots << " (" << total.pieced_snapshots
                << " in pieces)");
  CHECK(total.acknowledged > seeds * 5);
  CHECK(total.crashes > seeds);
  CHECK(total.elections > seeds);
  CHECK(total.truncations > seeds / 20);
  CHECK(total.snapshots > seeds / 20);
  CHECK(total.pieced_snapshots > seeds / 40);
}

#else

namespace {

void find_planted_bug() {
  auto seeds = env_or("SPOOL_SIM_SEEDS", 20000);
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    auto r = run({seed});
    // A broken safety invariant, not only a cluster that never healed.
    if (!r.ok && r.failure.find("did not converge") == std::string::npos) {
      std::cout << "planted bug (" PLANTED ") found by " << r.failure << "\n";
      SUCCEED(r.failure);
      return;
    }
  }
  FAIL("no seed of " << seeds << " found the planted bug");
}

} // namespace

#if defined(SPOOL_PLANT_OLD_EPOCH_COMMIT)
TEST_CASE("the replication simulation finds a leader that counts "
          "acknowledgements sent in an older epoch",
          "[cluster][sim][planted]") {
  find_planted_bug();
}
#elif defined(SPOOL_PLANT_FENCE_BEFORE_SYNC)
TEST_CASE("the replication simulation finds a replica that answers a fence "
          "before the epoch is synced",
          "[cluster][sim][planted]") {
  find_planted_bug();
}
#elif defined(SPOOL_PLANT_NO_TRUNCATE)
TEST_CASE("the replication simulation finds a follower that keeps a "
          "divergent tail instead of truncating it",
          "[cluster][sim][planted]") {
  find_planted_bug();
}
#endif

#endif
