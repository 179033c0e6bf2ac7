// What a cursor write does to its group's DLQ (core/dlq/dead_letters.hpp):
// new entries, requeued entries returning, dropping, acked and marked
// requeues.

#include <catch2/catch.hpp>

#include <map>

#include "core/dlq/dead_letters.hpp"

using namespace spool;
using namespace spool::core;
namespace st = spool::storage;

namespace {

struct dlq_world {
  std::map<std::uint64_t, st::dlq_entry> entries;
  std::map<std::int64_t, st::stored_frame> frames;
  std::uint64_t next = 100;
  std::string group = "g";

  /// Stored entry `id`, to fill in.
  st::dlq_entry& entry(std::uint64_t id) {
    auto& e = entries[id];
    e.id = id;
    return e;
  }

  dlq_written plan(const dlq_changes& changes, st::write_batch& batch,
                   bool drop = false) {
    dlq_writer w{st::queue_id{1}, st::partition_id{2}, group, drop, 5'000};
    return plan_dlq_writes(
        w, changes, batch,
        [&](std::uint64_t id) -> std::optional<st::dlq_entry> {
          auto it = entries.find(id);
          if (it == entries.end())
            return std::nullopt;
          return it->second;
        },
        [&](st::offset off) -> const st::stored_frame* {
          auto it = frames.find(off.value);
          return it == frames.end() ? nullptr : &it->second;
        },
        [&](st::micros now) {
          auto id
              = std::max<std::uint64_t>(next, static_cast<std::uint64_t>(now));
          next = id + 1;
          return id;
        });
  }
};

template <class M>
const M& nth(const st::write_batch& b, std::size_t i) {
  REQUIRE(i < b.mutations.size());
  REQUIRE(std::holds_alternative<M>(b.mutations[i]));
  return std::get<M>(b.mutations[i]);
}

} // namespace

TEST_CASE("a new dead letter keeps the frame as delivered, or its offset "
          "once retention deleted it",
          "[dlq][dead_letters]") {
  dlq_world world;
  st::stored_frame f;
  f.off = st::offset{7};
  f.data.payload = "kept";
  world.frames[7] = f;
  dlq_changes changes;
  changes.dead.push_back({st::offset{7}, "boom", 3, 2, std::nullopt});
  changes.dead.push_back({st::offset{9}, "gone", 1, 1, std::nullopt});
  st::write_batch batch;
  auto out = world.plan(changes, batch);
  REQUIRE(batch.mutations.size() == 2);
  auto& first = nth<st::mut::put_dlq>(batch, 0).entry;
  CHECK(first.id == 5'000); // fresh, from the clock
  CHECK(first.partition == st::partition_id{2});
  CHECK(first.message.data.payload == "kept");
  CHECK(first.error == "boom");
  CHECK(first.deliveries == 3);
  CHECK(first.failed_at == 5'000);
  CHECK_FALSE(first.requeued);
  auto& second = nth<st::mut::put_dlq>(batch, 1).entry;
  CHECK(second.id != first.id);
  CHECK(second.message.off == st::offset{9});
  CHECK(second.message.data.payload.empty());
  CHECK(out.failed_at == std::vector<st::micros>{5'000, 5'000});
  CHECK(out.dropped == 0);
}

TEST_CASE("a requeued entry returning keeps its id, adds its deliveries and "
          "is no longer pending, one deleted meanwhile stays deleted",
          "[dlq][dead_letters]") {
  dlq_world world;
  auto& e = world.entry(42);
  e.error = "first";
  e.deliveries = 4;
  e.failed_at = 1'000;
  e.requeued = true;
  dlq_changes changes;
  changes.dead.push_back({st::offset{3}, "again", 2, 2, 42});
  changes.dead.push_back({st::offset{4}, "lost", 1, 1, 43}); // deleted
  st::write_batch batch;
  auto out = world.plan(changes, batch);
  REQUIRE(batch.mutations.size() == 1);
  auto& back = nth<st::mut::update_dlq>(batch, 0).entry;
  CHECK(back.id == 42);
  CHECK(back.error == "again");
  CHECK(back.deliveries == 6);
  CHECK(back.failed_at == 5'000);
  CHECK_FALSE(back.requeued);
  CHECK(out.failed_at == std::vector<st::micros>{5'000});
}

TEST_CASE("a queue that keeps no dead letters drops them: nothing new is "
          "stored and a returning entry is deleted",
          "[dlq][dead_letters]") {
  dlq_world world;
  world.entry(42);
  dlq_changes changes;
  changes.dead.push_back({st::offset{3}, "x", 1, 1, std::nullopt});
  changes.dead.push_back({st::offset{4}, "y", 1, 1, 42});
  st::write_batch batch;
  auto out = world.plan(changes, batch, true);
  REQUIRE(batch.mutations.size() == 1);
  CHECK(nth<st::mut::delete_dlq>(batch, 0).id == 42);
  CHECK(out.dropped == 2);
  CHECK(out.failed_at.empty());
  CHECK(world.next == 100); // no id taken
}

TEST_CASE("an acked requeue leaves the DLQ and a new requeue is marked "
          "pending",
          "[dlq][dead_letters]") {
  dlq_world world;
  world.entry(8);
  dlq_changes changes;
  changes.done = {5};
  changes.marked = {8, 9}; // 9 was deleted meanwhile: nothing to mark
  st::write_batch batch;
  world.plan(changes, batch);
  REQUIRE(batch.mutations.size() == 2);
  CHECK(nth<st::mut::delete_dlq>(batch, 0).id == 5);
  auto& marked = nth<st::mut::update_dlq>(batch, 1).entry;
  CHECK(marked.id == 8);
  CHECK(marked.requeued);
}
