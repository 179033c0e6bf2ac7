// Retention: whole oldest segments, the watermark, reads below it, dedup ids
// forgotten with their segment, bounded steps.

#include <random>

#include "unit/storage/fixture.hpp"

using namespace spool::test;
using spool::storage::ec;
using spool::storage::frame_result;
using spool::storage::offset;
using spool::storage::partition_log;

namespace {

std::optional<spool::storage::mut::delete_segments>
plan(store_fixture& fx, const spool::storage::partition_record& p,
     spool::storage::retention_rule rule) {
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto r = spool::storage::plan_retention(*t, p.queue, p.id, rule);
  REQUIRE(r);
  return *r;
}

} // namespace

TEST_CASE("retention deletes whole oldest segments and moves the watermark",
          "[storage][retention]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 10, .max_bytes = 1 << 20}};
  for (int i = 0; i < 5; ++i)
    REQUIRE(fx.append(log, msgs(10), 1'000'000 * (i + 1)));
  // Segments stamped 1..5 s; delete those older than 3.5 s.
  auto m = plan(fx, p, {.created_before = 3'500'000});
  REQUIRE(m);
  CHECK(m->new_watermark == offset{30});
  REQUIRE(fx.commit(spool::storage::write_batch{{*m}}));
  auto rec = fx.stored(p);
  CHECK(rec.watermark == offset{30});
  CHECK(rec.next_offset == offset{50}); // lastOffset does not go down
  auto all = fx.read(p, offset{30});
  CHECK(all.frames.size() == 20);
  CHECK(!all.skipped);
}

TEST_CASE("retention only deletes segments at or below the given offset",
          "[storage][retention]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 10, .max_bytes = 1 << 20}};
  for (int i = 0; i < 4; ++i)
    REQUIRE(fx.append(log, msgs(10), 1'000'000));
  // A group committed up to 24: segments 0-9 and 10-19 are fully consumed.
  auto m = plan(fx, p, {.through = offset{24}});
  REQUIRE(m);
  CHECK(m->new_watermark == offset{20});
  CHECK(!plan(fx, p, {.through = offset{8}}));
}

TEST_CASE("a retention step is bounded", "[storage][retention]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 1, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, msgs(20), 1'000'000));
  auto m = plan(fx, p, {.max_segments = 4});
  REQUIRE(m);
  CHECK(m->new_watermark == offset{4});
}

TEST_CASE("a read below the watermark resumes at the oldest retained offset",
          "[storage][retention]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 10, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, msgs(30), 1'000'000));
  auto m = plan(fx, p, {.through = offset{19}});
  REQUIRE(m);
  REQUIRE(fx.commit(spool::storage::write_batch{{*m}}));
  auto r = fx.read(p, offset{5}, 3);
  REQUIRE(r.skipped);
  CHECK(r.skipped->first == offset{5});
  CHECK(r.skipped->second == offset{19});
  REQUIRE(r.frames.size() == 3);
  CHECK(r.frames[0].off == offset{20});
  CHECK(r.frames[0].data.payload == "m20");
}

TEST_CASE("deleting everything leaves the watermark at lastOffset + 1",
          "[storage][retention]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 10, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, msgs(25), 1'000'000));
  auto m = plan(fx, p, {});
  REQUIRE(m);
  REQUIRE(fx.commit(spool::storage::write_batch{{*m}}));
  auto rec = fx.stored(p);
  CHECK(rec.watermark == offset{25});
  CHECK(rec.last_offset() == offset{24});
  auto r = fx.read(p, offset{0});
  CHECK(r.frames.empty());
  CHECK(r.next == offset{25});
  // Appends continue at the next offset and move the watermark onto them.
  log.watermark_moved(offset{25});
  REQUIRE(fx.append(log, msgs(2), 2'000'000));
  CHECK(fx.stored(p).watermark == offset{25});
  CHECK(fx.read(p, offset{0}).frames.front().off == offset{25});
}

TEST_CASE("a dedup id is forgotten when its segment is deleted",
          "[storage][retention][dedup]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 2, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, {msg("a", "tx-old"), msg("b")}, 1'000'000));
  REQUIRE(fx.append(log, {msg("c", "tx-kept")}, 2'000'000));
  auto m = plan(fx, p, {.created_before = 1'500'000});
  REQUIRE(m);
  CHECK(m->forget_ids == std::vector<std::string>{"tx-old"});
  REQUIRE(fx.commit(spool::storage::write_batch{{*m}}));
  log.watermark_moved(m->new_watermark);
  auto again
      = fx.append(log, {msg("a2", "tx-old"), msg("c2", "tx-kept")}, 3'000'000);
  REQUIRE(again);
  CHECK(again->results[0].status == frame_result::queued);
  CHECK(again->results[1].status == frame_result::duplicate);
  CHECK(again->results[1].off == offset{2});
}

TEST_CASE("a watermark inside a segment is refused and deletes nothing",
          "[storage][retention][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 10, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, msgs(20), 1'000'000));
  spool::storage::mut::delete_segments bad{p.queue, p.id, offset{15}, {}};
  auto r = fx.commit(spool::storage::write_batch{{bad}});
  REQUIRE(!r);
  CHECK(r.err().code == ec::invalid_argument);
  CHECK(fx.read(p, offset{0}).frames.size() == 20);
  CHECK(fx.stored(p).watermark == offset{0});
  spool::storage::mut::delete_segments beyond{p.queue, p.id, offset{21}, {}};
  auto r2 = fx.commit(spool::storage::write_batch{{beyond}});
  REQUIRE(!r2);
  CHECK(r2.err().code == ec::offset_out_of_range);
}

TEST_CASE("retention across a failed write moves the watermark to the next "
          "stored segment",
          "[storage][retention]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 10, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, msgs(10), 1'000'000));
  {
    // Offsets 10..19 are sealed but their commit fails after 20..29 were
    // sealed and committed: a gap for good.
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto lost = log.seal(*t, msgs(10), 1'000'000, fx.enc);
    REQUIRE(lost);
    auto kept = log.seal(*t, msgs(10), 2'000'000, fx.enc);
    REQUIRE(kept);
    t->abort();
    REQUIRE(fx.commit(spool::storage::write_batch{kept->mutations}));
    log.durable(*kept);
    log.failed(*lost);
  }
  auto m = plan(fx, p, {.created_before = 1'500'000});
  REQUIRE(m);
  CHECK(m->new_watermark == offset{20});
  REQUIRE(fx.commit(spool::storage::write_batch{{*m}}));
  log.watermark_moved(m->new_watermark);
  CHECK(fx.stored(p).watermark == offset{20});
  CHECK(log.record().watermark == offset{20});
  auto r = fx.read(p, offset{0}, 1);
  REQUIRE(r.skipped);
  CHECK(r.skipped->second == offset{19});
  CHECK(r.frames.front().off == offset{20});
}

TEST_CASE("a late segment below what retention deleted is refused",
          "[storage][retention][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto s1 = log.seal(*t, msgs(5), 1'000'000, fx.enc);
  auto s2 = log.seal(*t, msgs(5), 1'000'000, fx.enc);
  t->abort();
  REQUIRE(fx.commit(spool::storage::write_batch{s2->mutations}));
  auto m = plan(fx, p, {});
  REQUIRE(m);
  CHECK(m->new_watermark == offset{10});
  REQUIRE(fx.commit(spool::storage::write_batch{{*m}}));
  auto r = fx.commit(spool::storage::write_batch{s1->mutations});
  REQUIRE(!r);
  CHECK(r.err().code == ec::conflict);
  CHECK(r.err().message.find("retention") != std::string::npos);
}

TEST_CASE("a retention step deletes at most its bytes of segments, but "
          "always one segment",
          "[storage][retention]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 1, .max_bytes = 1 << 20}};
  fx.append_big_segments(log, 4);
  auto m = plan(fx, p, {.max_bytes = 250'000});
  REQUIRE(m);
  CHECK(m->new_watermark == offset{2});
  m = plan(fx, p, {.max_bytes = 1});
  REQUIRE(m);
  CHECK(m->new_watermark == offset{1});
}
