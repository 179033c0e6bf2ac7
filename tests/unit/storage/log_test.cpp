// The append and read side of the partition log.

#include "unit/storage/fixture.hpp"

#include "cipher/envelope.hpp"
#include "cipher/keyring.hpp"

using namespace spool::test;
using spool::storage::ec;
using spool::storage::frame_result;
using spool::storage::offset;
using spool::storage::partition_log;

TEST_CASE("offsets are dense from 0 across appends and segments",
          "[storage][log]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 3, .max_bytes = 1 << 20}};
  std::int64_t expected_off = 0;
  for (int round = 0; round < 4; ++round) {
    auto r = fx.append(log, msgs(5, "r" + std::to_string(round) + "-"),
                       2'000'000 + round);
    REQUIRE(r);
    CHECK(r->mutations.size() == 2); // 5 frames, 3 per segment
    for (auto& res : r->results) {
      CHECK(res.status == frame_result::queued);
      CHECK(res.off == offset{expected_off++});
    }
  }
  auto all = fx.read(p, offset{0});
  REQUIRE(all.frames.size() == 20);
  for (std::size_t i = 0; i < all.frames.size(); ++i)
    CHECK(all.frames[i].off == offset{static_cast<std::int64_t>(i)});
  CHECK(all.frames[7].data.payload == "r1-2");
  CHECK(all.next == offset{20});
  CHECK(fx.stored(p).next_offset == offset{20});
}

TEST_CASE("segment cuts count the envelope of a payload being encrypted",
          "[storage][log][encryption]") {
  // A 40-byte payload with a generated id counts about 92 bytes, 125 once
  // its 33-byte envelope is added: two fit under 200 bytes in clear, one
  // when encrypted. Counting the clear size would let an encrypted segment
  // outgrow its limit.
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 100, .max_bytes = 200}};
  auto four = [] {
    std::vector<spool::storage::frame> out;
    for (int i = 0; i < 4; ++i)
      out.push_back(msg(std::string(40, static_cast<char>('a' + i))));
    return out;
  };
  auto clear = fx.append(log, four(), 1'000'000);
  REQUIRE(clear);
  CHECK(clear->mutations.size() == 2);
  fx.enc.encrypt_with(std::make_shared<const spool::cipher::keyring>(
      spool::cipher::keyring::from_hex(std::string(64, '7'), "test").value()));
  auto sealed = fx.append(log, four(), 2'000'000);
  REQUIRE(sealed);
  CHECK(sealed->mutations.size() == 4);
  auto all = fx.read(p, offset{4});
  REQUIRE(all.frames.size() == 4);
  CHECK(all.frames[3].data.payload.size()
        == 40 + spool::cipher::envelope_overhead);
}

TEST_CASE("created_at stays monotone when the wall clock steps back",
          "[storage][log]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, msgs(2), 5'000'000));
  auto back = fx.append(log, msgs(2), 3'000'000); // clock stepped back 2 s
  REQUIRE(back);
  CHECK(back->created_at == 5'000'000);
  auto later = fx.append(log, msgs(1), 6'000'000);
  REQUIRE(later);
  CHECK(later->created_at == 6'000'000);
  auto all = fx.read(p, offset{0});
  REQUIRE(all.frames.size() == 5);
  for (std::size_t i = 1; i < all.frames.size(); ++i)
    CHECK(all.frames[i - 1].created_at <= all.frames[i].created_at);
  CHECK(fx.stored(p).last_created_at == 6'000'000);
}

TEST_CASE("reads cross segment boundaries and honour frame and byte limits",
          "[storage][log]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 4, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, msgs(10), 1'000'000));
  auto mid = fx.read(p, offset{2}, 5);
  REQUIRE(mid.frames.size() == 5);
  CHECK(mid.frames.front().off == offset{2});
  CHECK(mid.frames.back().off == offset{6});
  CHECK(mid.next == offset{7});
  // Payloads are 2 bytes ("m0".."m9"): a 5-byte budget takes 2 frames.
  auto by_bytes = fx.read(p, offset{3}, 100, 5);
  CHECK(by_bytes.frames.size() == 2);
  // A budget smaller than one frame still returns one.
  auto one = fx.read(p, offset{3}, 100, 1);
  CHECK(one.frames.size() == 1);
  auto end = fx.read(p, offset{10});
  CHECK(end.frames.empty());
  CHECK(end.next == offset{10});
}

TEST_CASE("reads of a bad offset or unknown partition are errors",
          "[storage][log][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, msgs(3), 1'000'000));
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto beyond = spool::storage::read_frames(*t, p.queue, p.id, offset{4}, 10);
  REQUIRE(!beyond);
  CHECK(beyond.err().code == ec::offset_out_of_range);
  auto negative
      = spool::storage::read_frames(*t, p.queue, p.id, offset{-1}, 10);
  REQUIRE(!negative);
  CHECK(negative.err().code == ec::offset_out_of_range);
  auto unknown = spool::storage::read_frames(
      *t, p.queue, spool::storage::partition_id{999}, offset{0}, 10);
  REQUIRE(!unknown);
  CHECK(unknown.err().code == ec::unknown_partition);
  CHECK(unknown.err().message.find("999") != std::string::npos);
}

TEST_CASE("an append with an oversized frame fails and stores nothing",
          "[storage][log][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  spool::storage::frame_limits limits;
  limits.max_payload_bytes = 100;
  partition_log log{p, {}, limits};
  auto frames = msgs(3);
  frames[1].payload.assign(101, 'x');
  auto r = fx.append(log, frames, 1'000'000);
  REQUIRE(!r);
  CHECK(r.err().code == ec::frame_too_large);
  CHECK(r.err().message.find("frames[1]") != std::string::npos);
  CHECK(log.next_offset() == offset{0});
  CHECK(fx.stored(p).next_offset == offset{0});
  frames[1].headers.assign(65, {"k", "v"});
  frames[1].payload = "ok";
  auto too_many_headers = fx.append(log, frames, 1'000'000);
  REQUIRE(!too_many_headers);
  CHECK(too_many_headers.err().code == ec::frame_too_large);
}

TEST_CASE("an append to an unknown partition is refused by the writer",
          "[storage][log][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  auto ghost = p;
  ghost.id = spool::storage::partition_id{4242};
  partition_log log{ghost};
  auto r = fx.append(log, msgs(1), 1'000'000);
  REQUIRE(!r);
  CHECK(r.err().code == ec::unknown_partition);
}

TEST_CASE("a client transaction id is appended once per partition",
          "[storage][log][dedup]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  // Duplicate inside one request.
  auto first = fx.append(log, {msg("a", "tx-1"), msg("b", "tx-1"), msg("c")},
                         1'000'000);
  REQUIRE(first);
  CHECK(first->results[0].status == frame_result::queued);
  CHECK(first->results[1].status == frame_result::duplicate);
  CHECK(first->results[1].off == offset{0});
  CHECK(first->results[2].off == offset{1});
  // Duplicate in a later request, found in storage.
  auto later = fx.append(log, {msg("d", "tx-1"), msg("e", "tx-2")}, 2'000'000);
  REQUIRE(later);
  CHECK(later->results[0].status == frame_result::duplicate);
  CHECK(later->results[0].off == offset{0});
  CHECK(later->results[1].off == offset{2});
  // Only duplicates: nothing is written, offsets do not move.
  auto dup_only = fx.append(log, {msg("f", "tx-2")}, 3'000'000);
  REQUIRE(dup_only);
  CHECK(dup_only->mutations.empty());
  CHECK(fx.stored(p).next_offset == offset{3});
  // Another partition has its own ids.
  auto p2 = fx.make_partition("other");
  partition_log log2{p2};
  auto other = fx.append(log2, {msg("g", "tx-1")}, 3'000'000);
  REQUIRE(other);
  CHECK(other->results[0].status == frame_result::queued);
}

TEST_CASE("a duplicate of an id in flight is answered only if its original "
          "is stored",
          "[storage][log][dedup]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  auto seal = [&](const std::vector<spool::storage::frame>& frames) {
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto s = log.seal(*t, frames, 1'000'000, fx.enc);
    REQUIRE(s);
    return *s;
  };
  std::vector<spool::storage::frame> one{msg("a", "tx-9")};
  auto s1 = seal(one);
  auto s2 = seal(one);
  CHECK(s1.results[0].status == frame_result::queued);
  CHECK(s2.results[0].status == frame_result::duplicate);
  CHECK(s2.results[0].off == s1.results[0].off);
  SECTION("the original fails: so does the duplicate") {
    // s1's batch fails as a whole (it also names a missing partition).
    spool::storage::write_batch b1{s1.mutations};
    b1.mutations.emplace_back(spool::storage::mut::put_cursor{
        p.queue, spool::storage::partition_id{999}, "g", {}});
    spool::storage::write_batch b2{s2.mutations};
    std::vector<const spool::storage::write_batch*> group{&b1, &b2};
    auto results = spool::storage::commit_group(fx.store->db(), group);
    CHECK(!results[0]);
    REQUIRE(!results[1]);
    CHECK(results[1].err().code == ec::conflict);
    log.failed(s1);
    log.failed(s2);
    // The client's retry is appended for real.
    auto s3 = seal(one);
    CHECK(s3.results[0].status == frame_result::queued);
    REQUIRE(fx.commit(spool::storage::write_batch{s3.mutations}));
    CHECK(fx.read(p, offset{0}).frames.size() == 1);
  }
  SECTION("the original is stored: the duplicate holds") {
    REQUIRE(fx.commit(spool::storage::write_batch{s1.mutations}));
    REQUIRE(fx.commit(spool::storage::write_batch{s2.mutations}));
  }
}

TEST_CASE("a dedup window lets an old transaction id be appended again",
          "[storage][log][dedup]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, {msg("a", "tx")}, 1'000'000, 10));
  auto inside = fx.append(log, {msg("b", "tx")}, 9'000'000, 10);
  REQUIRE(inside);
  CHECK(inside->results[0].status == frame_result::duplicate);
  auto outside = fx.append(log, {msg("c", "tx")}, 12'000'000, 10);
  REQUIRE(outside);
  CHECK(outside->results[0].status == frame_result::queued);
  CHECK(outside->results[0].off == offset{1});
}

TEST_CASE("seals committed out of order become readable in offset order",
          "[storage][log]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  auto seal = [&](std::size_t n, spool::storage::micros now) {
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto s
        = log.seal(*t, msgs(n, "s" + std::to_string(now) + "-"), now, fx.enc);
    REQUIRE(s);
    return *s;
  };
  auto s1 = seal(10, 1'000'000);
  auto s2 = seal(10, 2'000'000);
  // The later seal commits first (its batch did not wait for another
  // partition); it is stored but not yet readable through the log.
  REQUIRE(fx.commit(spool::storage::write_batch{s2.mutations}));
  log.durable(s2);
  CHECK(log.record().next_offset == offset{0});
  CHECK(log.in_flight() == 1);
  REQUIRE(fx.commit(spool::storage::write_batch{s1.mutations}));
  log.durable(s1);
  CHECK(log.record().next_offset == offset{20});
  CHECK(log.in_flight() == 0);
  CHECK(log.record() == fx.stored(p));
  auto all = fx.read(p, offset{0});
  REQUIRE(all.frames.size() == 20);
  CHECK(all.frames[0].data.payload == "s1000000-0");
  CHECK(all.frames[10].data.payload == "s2000000-0");
}

TEST_CASE("a failed seal before a durable one leaves a gap readers skip",
          "[storage][log]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto s1 = log.seal(*t, msgs(5), 1'000'000, fx.enc);
  auto s2 = log.seal(*t, msgs(5, "b"), 1'000'000, fx.enc);
  t->abort();
  REQUIRE(s1);
  REQUIRE(s2);
  REQUIRE(fx.commit(spool::storage::write_batch{s2->mutations}));
  log.durable(*s2);
  log.failed(*s1);
  CHECK(log.record() == fx.stored(p));
  CHECK(log.record().next_offset == offset{10});
  CHECK(log.record().watermark == offset{5});
  auto r = fx.read(p, offset{0});
  REQUIRE(r.frames.size() == 5);
  CHECK(r.frames.front().off == offset{5});
}

TEST_CASE("a late segment may fill a hole but never overlap or break stamp "
          "order",
          "[storage][log][bad-input]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto s1 = log.seal(*t, msgs(5), 1'000'000, fx.enc);
  auto s2 = log.seal(*t, msgs(5), 2'000'000, fx.enc);
  t->abort();
  REQUIRE(fx.commit(spool::storage::write_batch{s2->mutations}));
  // A forged filler stamped after its successor is refused.
  spool::storage::segment_encoder enc;
  auto frames = msgs(5);
  auto late
      = std::get<spool::storage::mut::append_segment>(s1->mutations.front());
  late.created_at = 3'000'000;
  late.bytes = *enc.encode(offset{0}, 3'000'000, frames);
  auto r = fx.commit(spool::storage::write_batch{{late}});
  REQUIRE(!r);
  CHECK(r.err().message.find("stamped after") != std::string::npos);
  // One that overlaps the stored segment is refused.
  auto overlap
      = std::get<spool::storage::mut::append_segment>(s1->mutations.front());
  overlap.base = offset{3};
  overlap.bytes = *enc.encode(offset{3}, 1'000'000, frames);
  auto r2 = fx.commit(spool::storage::write_batch{{overlap}});
  REQUIRE(!r2);
  CHECK(r2.err().message.find("overlaps") != std::string::npos);
  // The real one fills the hole.
  REQUIRE(fx.commit(spool::storage::write_batch{s1->mutations}));
  CHECK(fx.read(p, offset{0}).frames.size() == 10);
}

TEST_CASE("a failed seal with nothing sealed after it gives its offsets back",
          "[storage][log]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  auto seal = [&](std::size_t n, const std::string& prefix) {
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto s = log.seal(*t, msgs(n, prefix), 1'000'000, fx.enc);
    REQUIRE(s);
    return *s;
  };
  SECTION("the newest seal fails: the next seal reuses its offsets") {
    auto s1 = seal(5, "a");
    log.failed(s1);
    CHECK(log.next_offset() == offset{0});
    auto s2 = seal(3, "b");
    CHECK(s2.first == offset{0});
    REQUIRE(fx.commit(spool::storage::write_batch{s2.mutations}));
    log.durable(s2);
    CHECK(log.record() == fx.stored(p));
    CHECK(log.record().watermark == offset{0});
    CHECK(fx.read(p, offset{0}).frames.size() == 3);
  }
  SECTION("two seals fail oldest first: both are given back") {
    auto s1 = seal(5, "a");
    auto s2 = seal(5, "b");
    log.failed(s1);
    CHECK(log.next_offset() == offset{10}); // s2 may still commit
    CHECK(log.in_flight() == 1);
    log.failed(s2);
    CHECK(log.next_offset() == offset{0});
    CHECK(log.in_flight() == 0);
  }
  SECTION("a failed seal before one that commits stays a gap") {
    auto s1 = seal(5, "a");
    auto s2 = seal(5, "b");
    log.failed(s1);
    REQUIRE(fx.commit(spool::storage::write_batch{s2.mutations}));
    log.durable(s2);
    CHECK(log.next_offset() == offset{10});
    CHECK(log.record() == fx.stored(p));
    CHECK(log.record().watermark == offset{5});
  }
}

TEST_CASE("a seal whose outcome is unknown keeps its offsets as a gap",
          "[storage][log]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto s1 = log.seal(*t, msgs(5, "a"), 1'000'000, fx.enc);
  auto s2 = log.seal(*t, msgs(5, "b"), 1'000'000, fx.enc);
  t->abort();
  REQUIRE(s1);
  REQUIRE(s2);
  log.lost(*s1);   // the writer could not answer: it may be stored
  log.failed(*s2); // refused: given back, but not past the lost one
  CHECK(log.next_offset() == offset{5});
  CHECK(log.in_flight() == 0);
}
