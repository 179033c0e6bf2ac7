// Bad input to every storage function is an error value with a message:
// never a crash, never stored.

#include "unit/storage/fixture.hpp"

#include "storage/keys.hpp"

using namespace spool::test;
using namespace spool::storage;

namespace {

template <class T>
void check_error(const expected<T>& r, ec code, const std::string& needle) {
  REQUIRE(!r);
  CHECK(r.err().code == code);
  CHECK_THAT(r.err().message, Catch::Contains(needle));
}

} // namespace

TEST_CASE("every read of an unknown partition is an error naming it",
          "[storage][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_id ghost{777};
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto name = describe_partition(p.queue, ghost);
  check_error(read_frames(*t, p.queue, ghost, offset{0}, 1),
              ec::unknown_partition, name);
  check_error(resolve_timestamp(*t, p.queue, ghost, 0), ec::unknown_partition,
              name);
  check_error(resolve_timestamp_by_walk(*t, p.queue, ghost, 0),
              ec::unknown_partition, name);
  check_error(plan_retention(*t, p.queue, ghost, {}), ec::unknown_partition,
              name);
}

TEST_CASE("a corrupt stored segment is reported with partition and offset",
          "[storage][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 10, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, msgs(30), 1'000'000));
  {
    // Flip one byte of the stored segment at offset 10 behind LMDB's back.
    auto w = fx.store->db().write();
    REQUIRE(w);
    auto key = keys::segment(p.queue, p.id, offset{10});
    auto v = w->get(w->db().segments, key);
    REQUIRE(v);
    REQUIRE(*v);
    std::string bad{**v};
    bad[bad.size() / 2] ^= 0x40;
    REQUIRE(w->put(w->db().segments, key, bad));
    REQUIRE(w->commit());
  }
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto where = describe_partition(p.queue, p.id) + ": segment at offset 10";
  // Frames before it are still readable; a read touching it is an error.
  auto before = read_frames(*t, p.queue, p.id, offset{0}, 10);
  REQUIRE(before);
  CHECK(before->frames.size() == 10);
  check_error(read_frames(*t, p.queue, p.id, offset{0}, 20),
              ec::corrupt_segment, where + ": checksum mismatch");
  check_error(read_frames(*t, p.queue, p.id, offset{15}, 1),
              ec::corrupt_segment, where);
  auto after = read_frames(*t, p.queue, p.id, offset{20}, 100);
  REQUIRE(after);
  CHECK(after->frames.size() == 10);
}

TEST_CASE("mutations that contradict stored state are refused",
          "[storage][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  queue_id ghost_q{888};
  partition_id ghost_p{999};
  auto refused = [&](mutation m, ec code, const std::string& needle) {
    auto r = fx.commit(write_batch{{std::move(m)}});
    check_error(r, code, needle);
  };
  queue_record q;
  q.id = p.queue;
  refused(mut::create_queue{q}, ec::conflict, "exists");
  q.id = ghost_q;
  refused(mut::update_queue{q}, ec::unknown_queue, "888");
  refused(mut::delete_queue{ghost_q}, ec::unknown_queue, "888");
  partition_record pr = p;
  refused(mut::create_partition{pr}, ec::conflict, "exists");
  pr.queue = ghost_q;
  refused(mut::create_partition{pr}, ec::unknown_queue, "888");
  refused(mut::put_cursor{p.queue, ghost_p, "g", {}}, ec::unknown_partition,
          "999");
  refused(mut::put_subscription{ghost_q, "g", {}}, ec::unknown_queue, "888");
  dlq_entry e;
  e.partition = ghost_p;
  refused(mut::put_dlq{p.queue, "g", e}, ec::unknown_partition, "999");
  refused(mut::delete_segments{p.queue, ghost_p, offset{1}, {}},
          ec::unknown_partition, "999");
  mut::append_segment junk;
  junk.queue = p.queue;
  junk.partition = p.id;
  junk.frame_count = 1;
  junk.bytes = "not a segment";
  refused(junk, ec::corrupt_segment, "segment at offset 0");
  // Nothing of any of them was stored.
  auto t = fx.store->db().read();
  REQUIRE(t);
  CHECK(tables::require_partition(*t, p.queue, p.id)->next_offset == offset{0});
  CHECK(!*tables::get_queue(*t, ghost_q));
}

TEST_CASE("an append without frames is refused", "[storage][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  auto r = fx.append(log, {}, 1'000'000);
  check_error(r, ec::invalid_argument, "without frames");
}

TEST_CASE("a segment damaged after encoding is never stored",
          "[storage][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto sealed = log.seal(*t, msgs(5), 1'000'000, fx.enc);
  t->abort();
  REQUIRE(sealed);
  auto m = std::get<mut::append_segment>(sealed->mutations.front());
  auto damaged = m;
  damaged.bytes.back() ^= 1; // a body bit: the header still parses
  check_error(fx.commit(write_batch{{damaged}}), ec::corrupt_segment,
              "checksum mismatch");
  auto ghost_id = m;
  ghost_id.client_ids = {{"ghost", offset{12345}}};
  check_error(fx.commit(write_batch{{ghost_id}}), ec::invalid_argument,
              "outside its segment");
  auto huge = m;
  huge.base = offset{INT64_MAX - 1};
  check_error(fx.commit(write_batch{{huge}}), ec::invalid_argument,
              "out of range");
  CHECK(fx.read(p, offset{0}).frames.empty());
  auto r = fx.store->db().read();
  CHECK(!*tables::get_dedup(*r, p.queue, p.id, "ghost"));
}
