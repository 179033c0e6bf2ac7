// A group deletion's votes folded into one verdict, what it writes, and the
// idle sweep's choice (semantics.md §8, groupIdleSeconds).

#include "unit/storage/fixture.hpp"

#include "core/queue/group_deletion.hpp"
#include "storage/tables.hpp"

using namespace spool;
using namespace spool::core;
using outcome = deletion_verdict::outcome;

TEST_CASE("a group deletion deletes the rows of the partitions where the "
          "group had state, and of those that did not answer",
          "[core][deletion]") {
  std::vector<std::optional<delete_vote>> votes{
      delete_vote{true, false, false}, delete_vote{false, false, false},
      std::nullopt};
  auto v = fold_votes(votes, {false, false, false});
  CHECK(v.result == outcome::go);
  CHECK(v.rows == std::vector<std::size_t>{0, 2});
}

TEST_CASE("one active partition refuses the whole group deletion",
          "[core][deletion]") {
  std::vector<std::optional<delete_vote>> votes{delete_vote{true, false, false},
                                                delete_vote{true, true, false}};
  auto v = fold_votes(votes, {false, false});
  CHECK(v.result == outcome::active);
  CHECK(v.rows.empty());
}

TEST_CASE("a restarting cursor, or a dead partition with a stage open, "
          "refuses the deletion as restarting",
          "[core][deletion]") {
  std::vector<std::optional<delete_vote>> restarting{
      delete_vote{true, true, true}, delete_vote{true, true, false}};
  CHECK(fold_votes(restarting, {false, false}).result == outcome::restarting);

  std::vector<std::optional<delete_vote>> dead{delete_vote{true, false, false},
                                               std::nullopt};
  CHECK(fold_votes(dead, {false, true}).result == outcome::restarting);
  CHECK(fold_votes(dead, {false, false}).result == outcome::go);
}

TEST_CASE("an idle sweep deletes the groups idle for groupIdleSeconds, "
          "without a lease or a parked pop",
          "[core][deletion][idle]") {
  idle_sweep s;
  s.saw("old", 1'000, false);
  s.saw("old", 2'000, false); // its latest activity counts
  s.saw("fresh", 9'000, false);
  s.saw("leased", 1'000, true);
  s.saw("waiting", 1'000, false);
  s.parked("waiting");
  s.parked("unknown"); // a parked group with no cursor is not listed
  auto idle = s.idle(10'000, 5'000);
  REQUIRE(idle.size() == 1);
  CHECK(idle[0].group == "old");
  CHECK(idle[0].last == 2'000); // the deletion's cutoff
}

TEST_CASE("the idle sweep runs every groupIdleSeconds, within 1..60 s",
          "[core][deletion][idle]") {
  using std::chrono::seconds;
  CHECK(idle_sweep_interval(0) == seconds{1});
  CHECK(idle_sweep_interval(30) == seconds{30});
  CHECK(idle_sweep_interval(3600) == seconds{60});
}

namespace {

storage::dlq_entry dead_letter(std::uint64_t id, storage::partition_id p,
                               bool requeued) {
  storage::dlq_entry e;
  e.id = id;
  e.partition = p;
  e.error = "boom";
  e.deliveries = 3;
  e.requeued = requeued;
  return e;
}

} // namespace

TEST_CASE("a group deletion writes its cursor rows, its record when asked, "
          "and unmarks its dead letters pending requeue so retention applies "
          "to them again, keeping the entries",
          "[core][deletion]") {
  test::store_fixture fx;
  auto a = fx.make_partition("a");
  auto b = fx.make_partition("b");
  auto q = a.queue;
  storage::write_batch dlq;
  dlq.mutations.emplace_back(
      storage::mut::put_dlq{q, "g", dead_letter(1, a.id, true)});
  dlq.mutations.emplace_back(
      storage::mut::put_dlq{q, "g", dead_letter(2, a.id, false)});
  dlq.mutations.emplace_back(
      storage::mut::put_dlq{q, "h", dead_letter(3, b.id, true)});
  REQUIRE(fx.commit(std::move(dlq)));

  auto t = fx.store->db().read();
  REQUIRE(t);
  std::vector<storage::partition_id> rows{a.id, b.id};
  auto muts = deletion_mutations(*t, q, "g", rows, true);
  REQUIRE(muts);
  REQUIRE(muts->size() == 4);
  CHECK(std::get<storage::mut::delete_cursor>((*muts)[0]).partition == a.id);
  CHECK(std::get<storage::mut::delete_cursor>((*muts)[1]).partition == b.id);
  CHECK(std::get<storage::mut::delete_subscription>((*muts)[2]).group == "g");
  auto& unmarked = std::get<storage::mut::update_dlq>((*muts)[3]);
  CHECK(unmarked.group == "g");
  CHECK(unmarked.entry == dead_letter(1, a.id, false)); // the rest is kept

  // Only the record: still a deletion, the pending requeue is unmarked.
  auto record_only = deletion_mutations(*t, q, "g", {}, true);
  REQUIRE(record_only);
  CHECK(record_only->size() == 2);
  // Nothing of the group deleted: nothing unmarked either.
  auto nothing = deletion_mutations(*t, q, "g", {}, false);
  REQUIRE(nothing);
  CHECK(nothing->empty());
  t->abort();

  REQUIRE(fx.commit(storage::write_batch{std::move(*muts)}));
  auto after = fx.store->db().read();
  REQUIRE(after);
  auto g1 = storage::tables::get_dlq(*after, q, "g", 1);
  REQUIRE(g1);
  REQUIRE(*g1);
  CHECK_FALSE((*g1)->requeued);
  auto h3 = storage::tables::get_dlq(*after, q, "h", 3);
  REQUIRE(h3);
  REQUIRE(*h3);
  CHECK((*h3)->requeued); // another group's entry is not touched
}
