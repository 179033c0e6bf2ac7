// The slot log: what commits is numbered per slot in the same transaction,
// what fails is not, segments are referenced, the log is trimmed, and
// truncate undoes a tail exactly.

#include "storage/group_commit.hpp"
#include "storage/slot_log.hpp"
#include "unit/storage/fixture.hpp"
#include "unit/storage/replay.hpp"

using namespace spool;
using namespace spool::storage;
using namespace spool::test;

namespace {

/// A queue of its own (named `name`, so in `name`'s slot) with one
/// partition.
partition_record make_queue(store_fixture& fx, const std::string& name) {
  queue_record q;
  q.name = name;
  q.id = fx.store->next_queue_id(name);
  partition_record p;
  p.queue = q.id;
  p.id = fx.store->next_partition_id(q.id);
  p.name = "Default";
  p.uuid = fx.store->make_partition_uuid(q.id, p.id);
  REQUIRE(
      fx.commit(write_batch{{mut::create_queue{q}, mut::create_partition{p}}}));
  return p;
}

slot_log_meta meta_of(store_fixture& fx, slot_t s) {
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto m = slot_log::meta(*t, s);
  REQUIRE(m);
  return *m;
}

cursor_record at(std::int64_t committed) {
  cursor_record c;
  c.committed = offset{committed};
  return c;
}

/// A store whose slot log keeps `window`, with ten cursor rows written to
/// one partition's slot, one batch each.
struct windowed {
  store_fixture fx;
  partition_record p;
  slot_t s = 0;
  explicit windowed(log_window window) {
    fx.store.reset();
    fx.opts.env.slot_log = window;
    fx.open();
    p = fx.make_partition();
    s = slot_of_id(p.queue.value);
    for (int i = 0; i < 10; ++i)
      REQUIRE(
          fx.commit(write_batch{{mut::put_cursor{p.queue, p.id, "g", at(i)}}}));
  }
};

} // namespace

TEST_CASE("each committed batch is numbered in its slot's log, a failed one "
          "is never numbered",
          "[storage][slot_log]") {
  store_fixture fx;
  auto p = make_queue(fx, "orders");
  auto s = slot_of_id(p.queue.value);
  auto before = meta_of(fx, s).last_seq;
  write_batch ok1{{mut::put_cursor{p.queue, p.id, "g", at(1)}}};
  // Fails: a partition that does not exist.
  write_batch bad{
      {mut::put_cursor{p.queue, p.id, "g", at(5)},
       mut::append_segment{
           p.queue, partition_id{slot_id(s, 999)}, offset{0}, 1, 1, "x", {}}}};
  write_batch ok2{{mut::put_cursor{p.queue, p.id, "g", at(2)}}};
  const write_batch* group[] = {&ok1, &bad, &ok2};
  std::vector<std::vector<slot_seq>> numbers;
  auto results = commit_group(fx.store->db(), group, &numbers);
  REQUIRE(results.size() == 3);
  CHECK(results[0]);
  CHECK(!results[1]);
  CHECK(results[2]);
  CHECK(numbers[0] == std::vector<slot_seq>{{s, before + 1}});
  CHECK(numbers[1].empty());
  CHECK(numbers[2] == std::vector<slot_seq>{{s, before + 2}});
  CHECK(meta_of(fx, s).last_seq == before + 2);
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto e = slot_log::read_entry(*t, s, before + 2);
  REQUIRE(e);
  REQUIRE(*e);
  REQUIRE((*e)->mutations.size() == 1);
  CHECK(std::get<mut::put_cursor>((*e)->mutations[0]).rec.committed
        == offset{2});
  // The failed batch's cursor write is in no entry and not in the store.
  CHECK((**tables::get_cursor(*t, p.queue, p.id, "g")).committed == offset{2});
}

TEST_CASE("a batch over two slots commits once and carries each slot's own "
          "seq, and two queues of one {tag} share a slot's log",
          "[storage][slot_log]") {
  store_fixture fx;
  auto a = make_queue(fx, "orders{eu}");
  auto b = make_queue(fx, "refunds{eu}");
  auto c = make_queue(fx, "audit");
  auto sa = slot_of_id(a.queue.value);
  auto sc = slot_of_id(c.queue.value);
  REQUIRE(slot_of_id(b.queue.value) == sa);
  REQUIRE(sc != sa);
  auto ma = meta_of(fx, sa).last_seq;
  auto mc = meta_of(fx, sc).last_seq;
  write_batch both{{mut::put_cursor{a.queue, a.id, "g", at(1)},
                    mut::put_cursor{c.queue, c.id, "g", at(1)},
                    mut::put_cursor{b.queue, b.id, "g", at(1)}}};
  const write_batch* group[] = {&both};
  std::vector<std::vector<slot_seq>> numbers;
  REQUIRE(commit_group(fx.store->db(), group, &numbers)[0]);
  CHECK(numbers[0] == std::vector<slot_seq>{{sa, ma + 1}, {sc, mc + 1}});
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto ea = slot_log::read_entry(*t, sa, ma + 1);
  REQUIRE(ea);
  REQUIRE(*ea);
  CHECK((*ea)->mutations.size() == 2); // orders{eu} and refunds{eu}
  auto ec_ = slot_log::read_entry(*t, sc, mc + 1);
  REQUIRE(ec_);
  REQUIRE(*ec_);
  CHECK((*ec_)->mutations.size() == 1);
}

TEST_CASE("an appended segment's bytes are referenced by the log, not stored "
          "twice, and still found after retention deleted it",
          "[storage][slot_log]") {
  store_fixture fx;
  auto p = fx.make_partition();
  auto s = slot_of_id(p.queue.value);
  partition_log log{p, {.max_frames = 10, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, msgs(10, std::string(1000, 'x')), 1'000'000));
  auto seq = meta_of(fx, s).last_seq;
  std::string segment;
  {
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto raw = t->get(t->db().slot_log, [&] {
      std::string k{static_cast<char>(s >> 8), static_cast<char>(s & 0xff)};
      keys::put_u64(k, seq);
      return k;
    }());
    REQUIRE(raw);
    REQUIRE(*raw);
    CHECK((*raw)->size() < 1000); // ten 1000-byte payloads are not in it
    auto e = slot_log::read_entry(*t, s, seq);
    REQUIRE(e);
    REQUIRE(*e);
    auto& a = std::get<mut::append_segment>((*e)->mutations.at(0));
    segment = a.bytes;
    CHECK(
        segment
        == **t->get(t->db().segments, keys::segment(p.queue, p.id, offset{0})));
  }
  REQUIRE(fx.append(log, msgs(10), 2'000'000));
  REQUIRE(fx.commit(
      write_batch{{mut::delete_segments{p.queue, p.id, offset{10}, {}}}}));
  auto t = fx.store->db().read();
  REQUIRE(t);
  CHECK(!*t->get(t->db().segments, keys::segment(p.queue, p.id, offset{0})));
  auto e = slot_log::read_entry(*t, s, seq);
  REQUIRE(e);
  REQUIRE(*e);
  CHECK(std::get<mut::append_segment>((*e)->mutations.at(0)).bytes == segment);
}

TEST_CASE("a slot's log keeps its last entries, and what was trimmed cannot "
          "be truncated",
          "[storage][slot_log]") {
  windowed win{log_window{.entries = 3}};
  auto& fx = win.fx;
  auto& p = win.p;
  auto s = win.s;
  auto m = meta_of(fx, s);
  CHECK(m.last_seq - m.first_seq + 1 == 3);
  auto w = fx.store->db().write();
  REQUIRE(w);
  auto refused = slot_log::truncate(*w, s, m.first_seq - 2);
  REQUIRE(!refused);
  CHECK(refused.err().code == ec::invalid_argument);
  REQUIRE(slot_log::truncate(*w, s, m.first_seq - 1)); // all kept: fine
  REQUIRE(w->commit());
  CHECK(meta_of(fx, s).last_seq == m.first_seq - 1);
  auto t = fx.store->db().read();
  REQUIRE(t);
  CHECK((**tables::get_cursor(*t, p.queue, p.id, "g")).committed
        == offset{static_cast<std::int64_t>(10 - 3 - 1)});
}

TEST_CASE("an entry applies only as its slot's next seq",
          "[storage][slot_log]") {
  store_fixture fx;
  auto p = fx.make_partition();
  auto s = slot_of_id(p.queue.value);
  temp_dir other;
  auto replica = fresh_like(*fx.store, other);
  auto w = replica->db().write();
  REQUIRE(w);
  log_entry e;
  e.epoch = 1;
  auto r = slot_log::apply_entry(*w, s, 2, e, log_window{});
  REQUIRE(!r);
  CHECK(r.err().code == ec::conflict);
}

TEST_CASE("replaying every slot's log into a fresh store gives the same rows "
          "byte for byte, and truncating a tail equals never applying it",
          "[storage][slot_log]") {
  store_fixture fx;
  auto a = make_queue(fx, "orders{eu}");
  auto b = make_queue(fx, "refunds{eu}");
  auto c = make_queue(fx, "audit");
  partition_log la{a, {.max_frames = 4, .max_bytes = 1 << 20}};
  partition_log lc{c, {.max_frames = 4, .max_bytes = 1 << 20}};
  for (int i = 0; i < 5; ++i) {
    REQUIRE(
        fx.append(la, msgs(6, "a" + std::to_string(i)), 1'000'000 * (i + 1)));
    REQUIRE(fx.append(lc, {msg("c", "tx" + std::to_string(i))}, 1'000'000));
    REQUIRE(
        fx.commit(write_batch{{mut::put_cursor{a.queue, a.id, "g", at(i)},
                               mut::put_cursor{b.queue, b.id, "g", at(i)},
                               mut::put_cursor{c.queue, c.id, "g", at(i)}}}));
  }
  REQUIRE(fx.commit(
      write_batch{{mut::delete_segments{a.queue, a.id, offset{10}, {}}}}));
  REQUIRE(fx.commit(write_batch{{mut::delete_queue{b.queue}}}));
  REQUIRE(fx.commit(write_batch{{mut::sweep_queue{b.queue, 2}}}));
  auto rep = check_replay(*fx.store);
  CHECK(rep.slots == 2);
  CHECK(rep.truncated == 2);
}

TEST_CASE("a slot's log keeps no more than its bytes, but always its newest "
          "entry",
          "[storage][slot_log]") {
  windowed win{log_window{.entries = 1000, .bytes = 1}};
  auto& fx = win.fx;
  auto s = win.s;
  auto m = meta_of(fx, s);
  CHECK(m.first_seq == m.last_seq);
  auto t = fx.store->db().read();
  REQUIRE(t);
  std::string k{static_cast<char>(s >> 8), static_cast<char>(s & 0xff)};
  keys::put_u64(k, m.last_seq);
  auto newest = t->get(t->db().slot_log, k);
  REQUIRE(newest);
  REQUIRE(*newest);
  CHECK(m.bytes == (*newest)->size());
}
