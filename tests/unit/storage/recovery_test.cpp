// Recovery on open: partitions, metadata tables and id counters come back
// exactly.

#include "unit/storage/fixture.hpp"

using namespace spool::test;
using namespace spool::storage;

TEST_CASE("reopening recovers every partition and table exactly",
          "[storage][recovery]") {
  store_fixture fx;
  auto p = fx.make_partition();
  auto p2 = fx.make_partition("second");
  partition_log log{p, {.max_frames = 10, .max_bytes = 1 << 20}};
  partition_log log2{p2};
  REQUIRE(fx.append(log, msgs(25), 5'000'000));
  REQUIRE(fx.append(log, msgs(5), 4'000'000)); // clock stepped back
  REQUIRE(fx.append(log2, {msg("x", "tx-1")}, 7'000'000));
  auto t = fx.store->db().read();
  auto m = plan_retention(*t, p.queue, p.id, {.through = offset{9}});
  t->abort();
  REQUIRE(m);
  REQUIRE(*m);
  cursor_record c;
  c.committed = offset{12};
  c.counters = {{offset{13}, 2, 1}};
  dlq_entry e;
  e.id = fx.store->next_dlq_id(0);
  e.partition = p.id;
  e.error = "x";
  REQUIRE(fx.commit(
      write_batch{{**m, mut::put_cursor{p.queue, p.id, "g", c},
                   mut::put_subscription{p.queue,
                                         "g",
                                         {subscription_mode::new_only, 9,
                                          subscription_mode::new_only, 9}},
                   mut::put_dlq{p.queue, "g", e}}}));
  auto before = fx.store->load_catalog();
  REQUIRE(before);

  fx.reopen();

  auto& after = fx.store->recovered();
  CHECK(after.queues == before->queues);
  CHECK(after.partitions == before->partitions);
  auto rec = std::find_if(after.partitions.begin(), after.partitions.end(),
                          [&](auto& r) { return r.id == p.id; });
  REQUIRE(rec != after.partitions.end());
  CHECK(rec->next_offset == offset{30});
  CHECK(rec->last_created_at == 5'000'000);
  CHECK(rec->watermark == offset{10});
  auto r = fx.store->db().read();
  CHECK(**tables::get_cursor(*r, p.queue, p.id, "g") == c);
  CHECK(**tables::get_dlq(*r, p.queue, "g", e.id) == e);
  CHECK((*tables::get_subscription(*r, p.queue, "g"))->timestamp == 9);
  auto counters = tables::get_counters(*r, spool::slot_of_id(p.queue.value));
  REQUIRE(counters);
  CHECK(counters->next_queue > spool::slot_local_id(p.queue.value));
  CHECK(counters->next_partition > spool::slot_local_id(p.id.value));
  r->abort();
  // Appends after recovery continue the offsets and the stamps.
  partition_log again{*rec};
  auto next = fx.append(again, {msg("y")}, 1'000'000);
  REQUIRE(next);
  CHECK(next->results[0].off == offset{30});
  CHECK(next->created_at == 5'000'000);
  // Dedup ids survive the restart.
  auto rec2 = std::find_if(after.partitions.begin(), after.partitions.end(),
                           [&](auto& x) { return x.id == p2.id; });
  partition_log again2{*rec2};
  auto dup = fx.append(again2, {msg("x", "tx-1")}, 8'000'000);
  REQUIRE(dup);
  CHECK(dup->results[0].status == frame_result::duplicate);
}

TEST_CASE("ids are never reused, also after a queue is deleted and the store "
          "reopened",
          "[storage][recovery]") {
  store_fixture fx;
  auto p = fx.make_partition();
  REQUIRE(fx.commit(write_batch{{mut::delete_queue{p.queue}}}));
  fx.reopen();
  CHECK(fx.store->next_queue_id("orders") > p.queue);
  CHECK(fx.store->next_partition_id(p.queue) > p.id);
}

TEST_CASE("DLQ ids follow the clock, never repeat, and continue above every "
          "stored id after a reopen",
          "[storage][recovery][dlq]") {
  store_fixture fx;
  auto p = fx.make_partition();
  auto a = fx.store->next_dlq_id(5'000'000);
  auto b = fx.store->next_dlq_id(5'000'000); // the same microsecond
  auto c = fx.store->next_dlq_id(4'000'000); // the clock stepped back
  CHECK(a == 5'000'000);
  CHECK(b == a + 1);
  CHECK(c == b + 1);
  CHECK(fx.store->next_dlq_id(9'000'000) == 9'000'000);
  // A stored id far ahead of the clock (written on a machine whose clock
  // was ahead): after a reopen, new ids are above it.
  dlq_entry e;
  e.id = 7'000'000'000;
  e.partition = p.id;
  REQUIRE(fx.commit(write_batch{{mut::put_dlq{p.queue, "g", e}}}));
  fx.reopen();
  CHECK(fx.store->next_dlq_id(1'000'000) == e.id + 1);
}

TEST_CASE("a slot reloaded for serving continues its ids above what another "
          "leader stored there, reading only that slot's rows",
          "[storage][recovery][dlq][cluster]") {
  store_fixture fx;
  auto p = fx.make_partition();
  auto s = spool::slot_of_id(p.queue.value);
  // Rows applied as a follower: a DLQ id far ahead of this node's clock,
  // in this slot, and one further ahead in another slot.
  dlq_entry e;
  e.id = 7'000'000'000;
  e.partition = p.id;
  REQUIRE(fx.commit(write_batch{{mut::put_dlq{p.queue, "g", e}}}));
  queue_record q2;
  for (int i = 0; q2.name.empty() || fx.store->slot_of(q2.name) == s; ++i)
    q2.name = "elsewhere-" + std::to_string(i);
  q2.id = fx.store->next_queue_id(q2.name);
  partition_record other;
  other.queue = q2.id;
  other.id = fx.store->next_partition_id(q2.id);
  other.name = "Default";
  other.uuid = fx.store->make_partition_uuid(q2.id, other.id);
  REQUIRE(fx.commit(
      write_batch{{mut::create_queue{q2}, mut::create_partition{other}}}));
  dlq_entry far;
  far.id = 9'000'000'000;
  far.partition = other.id;
  REQUIRE(fx.commit(write_batch{{mut::put_dlq{other.queue, "g", far}}}));
  REQUIRE(fx.store->reload_slot(s));
  CHECK(fx.store->next_dlq_id(1'000'000) == e.id + 1);
  REQUIRE(fx.store->reload_slot(spool::slot_of_id(other.queue.value)));
  CHECK(fx.store->next_dlq_id(1'000'000) == far.id + 1);
  CHECK_FALSE(fx.store->reload_slot(
      static_cast<spool::slot_t>(fx.store->slot_count())));
}

TEST_CASE("a dead letter's write touches only its queue's keys: no node "
          "counter",
          "[storage][dlq]") {
  store_fixture fx;
  auto p = fx.make_partition();
  auto read_counters = [&] {
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto c = tables::get_counters(*t, spool::slot_of_id(p.queue.value));
    REQUIRE(c);
    return *c;
  };
  auto counters = read_counters();
  dlq_entry e;
  e.id = fx.store->next_dlq_id(1'000'000);
  e.partition = p.id;
  REQUIRE(fx.commit(write_batch{{mut::put_dlq{p.queue, "g", e}}}));
  CHECK(read_counters() == counters);
}

TEST_CASE("a stored DLQ id that leaves no id after it refuses the open",
          "[storage][recovery][dlq]") {
  store_fixture fx;
  auto p = fx.make_partition();
  dlq_entry e;
  e.id = UINT64_MAX; // only a corrupt row holds it
  e.partition = p.id;
  REQUIRE(fx.commit(write_batch{{mut::put_dlq{p.queue, "g", e}}}));
  fx.store.reset();
  auto s = store::open(fx.opts);
  REQUIRE_FALSE(s);
  CHECK(s.err().code == ec::corrupt_record);
}
