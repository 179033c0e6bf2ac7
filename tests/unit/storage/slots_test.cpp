#include <catch2/catch.hpp>

#include "storage/mutation.hpp"
#include "storage/tables.hpp"
#include "tests/unit/storage/fixture.hpp"

using namespace spool;
using namespace spool::storage;
using spool::test::store_fixture;

namespace {

queue_record queue_named(store& s, std::string name) {
  queue_record q;
  q.name = std::move(name);
  q.id = s.next_queue_id(q.name);
  return q;
}

} // namespace

TEST_CASE("ids are minted per slot: a queue's id carries its name's slot, a "
          "partition's id and uuid its queue's",
          "[storage][slot]") {
  store_fixture fx;
  auto a = queue_named(*fx.store, "orders{eu}");
  auto b = queue_named(*fx.store, "refunds{eu}");
  auto c = queue_named(*fx.store, "orders");
  CHECK(slot_of_id(a.id.value) == fx.store->slot_of("eu"));
  CHECK(slot_of_id(b.id.value) == slot_of_id(a.id.value));
  CHECK(slot_local_id(b.id.value) == slot_local_id(a.id.value) + 1);
  CHECK(slot_of_id(c.id.value) == fx.store->slot_of("orders"));
  auto p = fx.store->next_partition_id(c.id);
  CHECK(slot_of_id(p.value) == slot_of_id(c.id.value));
  auto uuid = fx.store->make_partition_uuid(c.id, p);
  CHECK(slot_of_uuid(uuid) == slot_of_id(c.id.value));
  CHECK(queue_of_id(uuid) == c.id.value); // an ack is routed by it alone
  CHECK(uuid.size() == 36);
  CHECK(uuid[14] == '4'); // a version 4 UUID's shape
  CHECK(std::string{"89ab"}.find(uuid[19]) != std::string::npos);
  // Random in its tail; in a queue, in the order its partitions were made.
  CHECK(fx.store->make_partition_uuid(c.id, p) != uuid);
  auto later = fx.store->next_partition_id(c.id);
  CHECK(fx.store->make_partition_uuid(c.id, later) > uuid);
  CHECK(fx.store->make_partition_uuid(
            c.id, partition_id{slot_id(slot_of_id(c.id.value), 0x00100000)})
        > fx.store->make_partition_uuid(
            c.id, partition_id{slot_id(slot_of_id(c.id.value), 0x000fffff)}));
}

TEST_CASE("a queue or partition id of another slot than its name's is "
          "refused by apply",
          "[storage][slot]") {
  store_fixture fx;
  auto q = queue_named(*fx.store, "orders");
  auto wrong = q;
  wrong.id = queue_id{
      slot_id(static_cast<slot_t>((slot_of_id(q.id.value) + 1) % 256), 1)};
  auto r = fx.commit(write_batch{{mut::create_queue{wrong}}});
  REQUIRE(!r);
  CHECK(r.err().code == ec::invalid_argument);
  REQUIRE(fx.commit(write_batch{{mut::create_queue{q}}}));
  partition_record p;
  p.queue = q.id;
  p.id = partition_id{
      slot_id(static_cast<slot_t>((slot_of_id(q.id.value) + 1) % 256), 1)};
  p.name = "Default";
  r = fx.commit(write_batch{{mut::create_partition{p}}});
  REQUIRE(!r);
  CHECK(r.err().code == ec::invalid_argument);
}

TEST_CASE("the number of slots is fixed when a store is created",
          "[storage][slot]") {
  store_fixture fx;
  CHECK(fx.store->slot_count() == default_slot_count);
  fx.store.reset();
  fx.opts.slot_count = 16;
  fx.open();
  CHECK(fx.store->slot_count() == default_slot_count);

  spool::test::temp_dir other;
  store_options opts;
  opts.env.dir = other.path / "db";
  opts.slot_count = 16;
  auto s = store::open(opts);
  REQUIRE(s);
  CHECK((*s)->slot_count() == 16);
  CHECK(slot_of_id((*s)->next_queue_id("orders").value)
        == slot_of("orders", 16));
  s->reset();
  opts.slot_count = 0;
  spool::test::temp_dir third;
  opts.env.dir = third.path / "db";
  auto refused = store::open(opts);
  REQUIRE(!refused);
  CHECK(refused.err().code == ec::invalid_argument);
}

TEST_CASE("a store written before slots is refused on open with what to do",
          "[storage][slot]") {
  store_fixture fx;
  auto path = fx.opts.env.dir;
  fx.store.reset();
  // Make it look like a store of format 1: data and no format row.
  {
    auto e = env::open(fx.opts.env);
    REQUIRE(e);
    auto w = (*e)->write();
    REQUIRE(w);
    REQUIRE(w->del(w->db().meta, keys::format_key));
    REQUIRE(w->del(w->db().meta, keys::slot_count_key));
    REQUIRE(w->put(w->db().meta, "counters", "old"));
    REQUIRE(w->commit());
  }
  auto refused = store::open(fx.opts);
  REQUIRE(!refused);
  CHECK(refused.err().code == ec::invalid_argument);
  CHECK_THAT(refused.err().message,
             Catch::Contains("before slots")
                 && Catch::Contains("move the folder away"));
}

TEST_CASE("a store of format 2 (partition ids without their queue) is "
          "refused on open with what to do",
          "[storage][slot]") {
  store_fixture fx;
  fx.store.reset();
  {
    auto e = env::open(fx.opts.env);
    REQUIRE(e);
    auto w = (*e)->write();
    REQUIRE(w);
    REQUIRE(tables::put_format(*w, {2, 256}));
    REQUIRE(w->commit());
  }
  auto refused = store::open(fx.opts);
  REQUIRE(!refused);
  CHECK(refused.err().code == ec::invalid_argument);
  CHECK_THAT(refused.err().message,
             Catch::Contains("store format 2")
                 && Catch::Contains("move the folder away"));
}

TEST_CASE("a store of a later format is refused on open", "[storage][slot]") {
  store_fixture fx;
  fx.store.reset();
  {
    auto e = env::open(fx.opts.env);
    REQUIRE(e);
    auto w = (*e)->write();
    REQUIRE(w);
    REQUIRE(tables::put_format(*w, {store_format_version + 1, 256}));
    REQUIRE(w->commit());
  }
  auto refused = store::open(fx.opts);
  REQUIRE(!refused);
  CHECK(refused.err().code == ec::invalid_argument);
  CHECK_THAT(refused.err().message, Catch::Contains("has format 4"));
}
