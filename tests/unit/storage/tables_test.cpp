// Metadata tables and all-or-nothing write batches.

#include <random>

#include "unit/storage/fixture.hpp"

#include "storage/group_commit.hpp"
#include "storage/keys.hpp"

using namespace spool::test;
using namespace spool::storage;

TEST_CASE("metadata tables store, return and list typed records",
          "[storage][tables]") {
  store_fixture fx;
  auto p = fx.make_partition();
  auto p2 = fx.make_partition("second");
  cursor_record c;
  c.committed = offset{41};
  c.lease_epoch = 7;
  c.counters = {{offset{42}, 3, 2}};
  subscription_record s{subscription_mode::timestamp, 123,
                        subscription_mode::new_only, 100};
  dlq_entry e;
  e.id = fx.store->next_dlq_id(0);
  e.partition = p.id;
  e.message.off = offset{5};
  e.message.data.payload = "poison";
  e.error = "boom";
  e.deliveries = 4;
  write_batch b;
  b.mutations.emplace_back(mut::put_cursor{p.queue, p.id, "billing", c});
  b.mutations.emplace_back(mut::put_cursor{p.queue, p.id, "billing-eu", c});
  b.mutations.emplace_back(mut::put_cursor{p.queue, p2.id, "billing", c});
  b.mutations.emplace_back(mut::put_subscription{p.queue, "billing", s});
  b.mutations.emplace_back(mut::put_dlq{p.queue, "billing", e});
  b.mutations.emplace_back(mut::put_dlq{p.queue, "billing-eu", e});
  REQUIRE(fx.commit(b));

  auto t = fx.store->db().read();
  REQUIRE(t);
  auto got = tables::get_cursor(*t, p.queue, p.id, "billing");
  REQUIRE(got);
  REQUIRE(*got);
  CHECK(**got == c);
  auto missing = tables::get_cursor(*t, p.queue, p.id, "nobody");
  REQUIRE(missing);
  CHECK(!*missing);
  auto cursors = tables::cursors_of(*t, p.queue, p.id);
  REQUIRE(cursors);
  REQUIRE(cursors->size() == 2);
  CHECK((*cursors)[0].first == "billing");
  CHECK((*cursors)[1].first == "billing-eu");
  auto subs = tables::subscriptions_of(*t, p.queue);
  REQUIRE(subs);
  REQUIRE(subs->size() == 1);
  CHECK(subs->front().second == s);
  std::vector<dlq_entry> entries;
  REQUIRE(tables::scan_dlq(*t, p.queue, "billing", [&](const dlq_entry& x) {
    entries.push_back(x);
    return true;
  }));
  REQUIRE(entries.size() == 1); // "billing-eu" is another group
  CHECK(entries.front() == e);
  auto parts = tables::partitions_of(*t, p.queue);
  REQUIRE(parts);
  CHECK(parts->size() == 2);
  auto q = tables::get_queue(*t, p.queue);
  REQUIRE(q);
  REQUIRE(*q);
  CHECK((*q)->name == "orders");
}

TEST_CASE("a queue's dead letters are scanned with their group, and pending "
          "requeues are stored",
          "[storage][tables][dlq]") {
  store_fixture fx;
  auto p = fx.make_partition();
  queue_record oq;
  oq.name = "other-queue";
  oq.id = fx.store->next_queue_id(oq.name);
  partition_record other;
  other.queue = oq.id;
  other.id = fx.store->next_partition_id(oq.id);
  other.name = "x";
  write_batch b;
  b.mutations.emplace_back(mut::create_queue{oq});
  b.mutations.emplace_back(mut::create_partition{other});
  std::uint64_t id = 0;
  for (auto g : {"billing-eu", "billing", "b"}) {
    dlq_entry e;
    e.id = ++id;
    e.partition = p.id;
    e.requeued = id == 2;
    b.mutations.emplace_back(mut::put_dlq{p.queue, g, e});
  }
  dlq_entry elsewhere;
  elsewhere.id = ++id;
  elsewhere.partition = other.id;
  b.mutations.emplace_back(mut::put_dlq{other.queue, "billing", elsewhere});
  cursor_record c;
  c.requeued = {{2, offset{5}, 1, 0, true}};
  b.mutations.emplace_back(mut::put_cursor{p.queue, p.id, "billing", c});
  REQUIRE(fx.commit(b));
  auto t = fx.store->db().read();
  REQUIRE(t);
  std::vector<std::pair<std::string, std::uint64_t>> seen;
  REQUIRE(tables::scan_queue_dlq(*t, p.queue,
                                 [&](std::string_view g, const dlq_entry& e) {
                                   seen.emplace_back(std::string{g}, e.id);
                                   return true;
                                 }));
  // Ordered by the group's length byte, then name, then id; the other
  // queue's entry is not there.
  CHECK(seen
        == std::vector<std::pair<std::string, std::uint64_t>>{
            {"b", 3}, {"billing", 2}, {"billing-eu", 1}});
  auto got = tables::get_dlq(*t, p.queue, "billing", 2);
  REQUIRE(got);
  REQUIRE(*got);
  CHECK((*got)->requeued);
  auto cur = tables::get_cursor(*t, p.queue, p.id, "billing");
  REQUIRE(cur);
  REQUIRE(*cur);
  CHECK((*cur)->requeued == c.requeued);
}

TEST_CASE("a write batch spanning tables and partitions is all or nothing",
          "[storage][tables][group-commit]") {
  store_fixture fx;
  auto p = fx.make_partition();
  auto p2 = fx.make_partition("second");
  partition_log log{p};
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto sealed = log.seal(*t, msgs(3), 1'000'000, fx.enc);
  t->abort();
  REQUIRE(sealed);
  write_batch doomed{sealed->mutations};
  doomed.mutations.emplace_back(mut::put_cursor{p.queue, p2.id, "g", {}});
  doomed.mutations.emplace_back(mut::put_subscription{p.queue, "g", {}});
  // The last mutation fails: its partition does not exist.
  doomed.mutations.emplace_back(
      mut::put_cursor{p.queue, partition_id{999}, "g", {}});
  write_batch fine{{mut::put_cursor{p.queue, p2.id, "other", {}}}};
  std::vector<const write_batch*> group{&doomed, &fine};
  auto results = commit_group(fx.store->db(), group);
  REQUIRE(results.size() == 2);
  REQUIRE(!results[0]);
  CHECK(results[0].err().code == ec::unknown_partition);
  CHECK(results[1]);
  auto r = fx.store->db().read();
  REQUIRE(r);
  CHECK(tables::require_partition(*r, p.queue, p.id)->next_offset == offset{0});
  CHECK(!*tables::get_cursor(*r, p.queue, p2.id, "g"));
  CHECK(!*tables::get_subscription(*r, p.queue, "g"));
  CHECK(*tables::get_cursor(*r, p.queue, p2.id, "other"));
  auto segs = read_frames(*r, p.queue, p.id, offset{0}, 10);
  REQUIRE(segs);
  CHECK(segs->frames.empty());
}

TEST_CASE("a segment that contradicts stored offsets is refused",
          "[storage][tables][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, msgs(5), 1'000'000));
  // A second writer that believes the partition is empty.
  partition_log stale{p};
  auto r = fx.append(stale, msgs(1), 2'000'000);
  REQUIRE(!r);
  CHECK(r.err().code == ec::conflict);
  CHECK(fx.read(fx.stored(p), offset{0}).frames.size() == 5);
}

TEST_CASE("a record that does not decode is an error naming its table",
          "[storage][tables][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  {
    auto w = fx.store->db().write();
    REQUIRE(w);
    REQUIRE(w->put(w->db().cursors, keys::partition_named(p.queue, p.id, "g"),
                   std::string("\x01\xff\xff", 3)));
    REQUIRE(w->commit());
  }
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto c = tables::get_cursor(*t, p.queue, p.id, "g");
  REQUIRE(!c);
  CHECK(c.err().code == ec::corrupt_record);
  CHECK(c.err().message.find("cursors") != std::string::npos);
  auto all = tables::cursors_of(*t, p.queue, p.id);
  CHECK(!all);
}

TEST_CASE("deleting a queue is one small write, its rows go in bounded sweep "
          "steps, the last one clearing the doomed mark, and nothing else goes",
          "[storage][tables][bounded]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, {msg("a", "tx"), msg("b", "ty")}, 1'000'000));
  dlq_entry dead;
  dead.id = 1;
  dead.partition = p.id;
  REQUIRE(fx.commit(write_batch{{mut::put_cursor{p.queue, p.id, "g", {}},
                                 mut::put_subscription{p.queue, "g", {}},
                                 mut::put_dlq{p.queue, "g", dead}}}));
  // A second queue that must survive.
  queue_record q2;
  q2.name = "other";
  q2.id = fx.store->next_queue_id(q2.name);
  partition_record p2;
  p2.queue = q2.id;
  p2.id = fx.store->next_partition_id(q2.id);
  p2.name = "Default";
  REQUIRE(fx.commit(
      write_batch{{mut::create_queue{q2}, mut::create_partition{p2}}}));
  // A live queue is never swept.
  auto live = fx.commit(write_batch{{mut::sweep_queue{q2.id, 100}}});
  REQUIRE(!live);
  CHECK(live.err().code == ec::conflict);
  REQUIRE(fx.commit(write_batch{{mut::delete_queue{p.queue}}}));
  // A write in flight at the deletion fails: the rows it would add to are
  // not there for it.
  for (auto late : {mutation{mut::put_cursor{p.queue, p.id, "h", {}}},
                    mutation{mut::put_dlq{p.queue, "g", dead}}}) {
    auto refused = fx.commit(write_batch{{late}});
    REQUIRE(!refused);
    CHECK(refused.err().code == ec::unknown_partition);
  }
  CHECK(!fx.append(log, {msg("late")}, 2'000'000));
  {
    auto t = fx.store->db().read();
    REQUIRE(t);
    CHECK(!*tables::get_queue(*t, p.queue));
    CHECK(*tables::is_doomed(*t, p.queue));
    CHECK(*tables::doomed_queues(*t) == std::vector<queue_id>{p.queue});
  }
  // Recovery serves none of it meanwhile.
  fx.reopen();
  auto& cat = fx.store->recovered();
  CHECK(cat.doomed == std::vector<queue_id>{p.queue});
  for (auto& part : cat.partitions)
    CHECK(part.queue != p.queue);
  int steps = 0;
  for (;;) {
    REQUIRE(fx.commit(write_batch{{mut::sweep_queue{p.queue, 2}}}));
    ++steps;
    auto t = fx.store->db().read();
    REQUIRE(t);
    if (!*tables::is_doomed(*t, p.queue))
      break;
    REQUIRE(steps < 100);
  }
  // segments, segment_time, partition, cursor, subscription, 2 dedup, dlq:
  // 8 keys, 2 per step.
  CHECK(steps == 4);
  auto t = fx.store->db().read();
  REQUIRE(t);
  CHECK(!*tables::get_partition(*t, p.queue, p.id));
  CHECK(!*tables::get_cursor(*t, p.queue, p.id, "g"));
  CHECK(!*tables::get_subscription(*t, p.queue, "g"));
  CHECK(!*tables::get_dedup(*t, p.queue, p.id, "tx"));
  CHECK(!*tables::get_dlq(*t, p.queue, "g", 1));
  CHECK(rows_under(*t, p.queue) == 0);
  CHECK(*tables::get_partition(*t, q2.id, p2.id));
  CHECK(tables::doomed_queues(*t)->empty());
  t->abort();
  // Swept already: nothing to do; deleted already: refused.
  CHECK(fx.commit(write_batch{{mut::sweep_queue{p.queue, 2}}}));
  auto again = fx.commit(write_batch{{mut::delete_queue{p.queue}}});
  REQUIRE(!again);
  CHECK(again.err().code == ec::unknown_queue);
}

TEST_CASE("a DLQ entry rewritten after its deletion stays deleted",
          "[storage][tables][dlq]") {
  store_fixture fx;
  auto p = fx.make_partition();
  dlq_entry e;
  e.id = fx.store->next_dlq_id(0);
  e.partition = p.id;
  e.message.off = offset{5};
  e.error = "first";
  REQUIRE(fx.commit(write_batch{{mut::put_dlq{p.queue, "g", e}}}));
  auto stored = [&]() -> std::optional<dlq_entry> {
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto got = tables::get_dlq(*t, p.queue, "g", e.id);
    REQUIRE(got);
    return *got;
  };
  auto changed = e;
  changed.error = "again";
  changed.requeued = true;
  SECTION("while stored, the rewrite applies") {
    REQUIRE(fx.commit(write_batch{{mut::update_dlq{p.queue, "g", changed}}}));
    REQUIRE(stored());
    CHECK(stored()->error == "again");
    CHECK(stored()->requeued);
  }
  SECTION("a deletion committed first wins, without an error") {
    REQUIRE(fx.commit(write_batch{{mut::delete_dlq{p.queue, "g", e.id}}}));
    REQUIRE(fx.commit(write_batch{{mut::update_dlq{p.queue, "g", changed}}}));
    CHECK(!stored());
  }
}

TEST_CASE("a subscription update read from one registration does not "
          "rewrite the group registered again after a deletion",
          "[storage][tables][subscription]") {
  store_fixture fx;
  auto p = fx.make_partition();
  subscription_record first;
  first.registered_at = 1'000;
  first.mode = first.registered_mode = subscription_mode::all;
  REQUIRE(fx.commit(write_batch{{mut::put_subscription{p.queue, "g", first}}}));
  // An update computed from the first registration...
  auto update = first;
  update.mode = subscription_mode::timestamp;
  update.timestamp = 5'000;
  auto stored = [&] {
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto got = tables::get_subscription(*t, p.queue, "g");
    REQUIRE(got);
    REQUIRE(*got);
    return **got;
  };
  SECTION("applies while that registration is stored") {
    REQUIRE(fx.commit(
        write_batch{{mut::update_subscription{p.queue, "g", update}}}));
    CHECK(stored().mode == subscription_mode::timestamp);
  }
  SECTION("is dropped once the group was deleted and registered again") {
    subscription_record second;
    second.registered_at = 2'000;
    second.mode = second.registered_mode = subscription_mode::new_only;
    REQUIRE(
        fx.commit(write_batch{{mut::delete_subscription{p.queue, "g"},
                               mut::put_subscription{p.queue, "g", second}}}));
    REQUIRE(fx.commit(
        write_batch{{mut::update_subscription{p.queue, "g", update}}}));
    CHECK(stored().mode == subscription_mode::new_only);
    CHECK(stored().registered_at == 2'000);
  }
}

TEST_CASE("a dead letter of a group over 255 bytes is refused: the DLQ key's "
          "length byte never wraps",
          "[storage][tables][dlq][limits]") {
  store_fixture fx;
  auto p = fx.make_partition();
  // 256 bytes would wrap to 0 and 257 to 1: "b" + 256 more would list as
  // group "b" with a malformed rest.
  std::string long_group = "b" + std::string(256, 'x');
  dlq_entry e;
  e.id = 1;
  e.partition = p.id;
  auto refused = fx.commit(write_batch{{mut::put_dlq{p.queue, long_group, e}}});
  REQUIRE_FALSE(refused);
  CHECK(refused.err().code == ec::invalid_argument);
  dlq_entry short_one;
  short_one.id = 2;
  short_one.partition = p.id;
  REQUIRE(fx.commit(write_batch{{mut::put_dlq{p.queue, "b", short_one}}}));
  auto t = fx.store->db().read();
  REQUIRE(t);
  std::vector<std::uint64_t> seen;
  REQUIRE(tables::scan_queue_dlq(*t, p.queue,
                                 [&](std::string_view, const dlq_entry& x) {
                                   seen.push_back(x.id);
                                   return true;
                                 }));
  CHECK(seen == std::vector<std::uint64_t>{2});
  std::string max_group(255, 'y');
  dlq_entry at_max;
  at_max.id = 3;
  at_max.partition = p.id;
  REQUIRE(fx.commit(write_batch{{mut::put_dlq{p.queue, max_group, at_max}}}));
}

TEST_CASE("a DLQ summary scan gives every field a listing filters on, as the "
          "full entries have them, without their messages",
          "[storage][tables][dlq]") {
  store_fixture fx;
  auto p = fx.make_partition();
  write_batch b;
  std::vector<dlq_entry> written;
  for (std::uint64_t i = 1; i <= 3; ++i) {
    dlq_entry e;
    e.id = 10 * i;
    e.partition = p.id;
    e.message.off = offset{static_cast<std::int64_t>(i * 7)};
    e.message.created_at = 123;
    e.message.data = msg(std::string(1000 * i, 'x'), "tx" + std::to_string(i));
    e.message.data.headers = {{"k", "v"}};
    e.message.data.trace_id = "trace";
    e.error = "bad " + std::to_string(i);
    e.deliveries = static_cast<std::uint32_t>(i + 1);
    e.failed_at = 5'000 + static_cast<micros>(i);
    e.requeued = i == 2;
    written.push_back(e);
    b.mutations.emplace_back(mut::put_dlq{p.queue, i == 3 ? "h" : "g", e});
  }
  REQUIRE(fx.commit(b));
  auto t = fx.store->db().read();
  REQUIRE(t);
  std::vector<std::pair<std::string, tables::dlq_summary>> all;
  REQUIRE(tables::scan_dlq_summaries(
      *t, p.queue, std::nullopt,
      [&](std::string_view g, const tables::dlq_summary& s) {
        all.emplace_back(std::string{g}, s);
        return true;
      }));
  REQUIRE(all.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    auto& [g, s] = all[i];
    auto& e = written[i];
    CHECK(g == (i == 2 ? "h" : "g"));
    CHECK(s.id == e.id);
    CHECK(s.partition == e.partition);
    CHECK(s.off == e.message.off);
    CHECK(s.deliveries == e.deliveries);
    CHECK(s.failed_at == e.failed_at);
    CHECK(s.requeued == e.requeued);
  }
  std::vector<std::uint64_t> of_g;
  REQUIRE(tables::scan_dlq_summaries(
      *t, p.queue, std::string_view{"g"},
      [&](std::string_view, const tables::dlq_summary& s) {
        of_g.push_back(s.id);
        return true;
      }));
  CHECK(of_g == std::vector<std::uint64_t>{10, 20});
}

TEST_CASE("a sweep step deletes at most its bytes, but always one key",
          "[storage][tables][sweep]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 1, .max_bytes = 1 << 20}};
  fx.append_big_segments(log, 4); // ~100 KB each, incompressible
  REQUIRE(fx.commit(write_batch{{mut::delete_queue{p.queue}}}));
  auto segments_left = [&] {
    auto t = fx.store->db().read();
    REQUIRE(t);
    std::size_t n = 0;
    REQUIRE(
        t->scan_prefix(t->db().segments, keys::queue(p.queue), [&](auto, auto) {
          ++n;
          return true;
        }));
    return n;
  };
  mut::sweep_queue step{p.queue, 10'000, 150'000};
  REQUIRE(fx.commit(write_batch{{step}}));
  CHECK(segments_left() == 3); // a second segment would pass 150 KB
  step.max_bytes = 1;
  REQUIRE(fx.commit(write_batch{{step}}));
  CHECK(segments_left() == 2); // one key whatever its size
  step.max_bytes = 250'000;
  REQUIRE(fx.commit(write_batch{{step}}));
  CHECK(segments_left() == 0);
}
