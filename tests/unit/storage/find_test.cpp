// Finding one message by transactionId without a scan: a generated id is
// the message id (it names its offset), a client-given one is in dedup.

#include "unit/storage/fixture.hpp"
#include "vocab/message_id.hpp"

using namespace spool::test;
using spool::storage::offset;
using spool::storage::partition_log;

namespace {

std::optional<spool::storage::stored_frame>
find(store_fixture& fx, const spool::storage::partition_record& p,
     std::string_view txid) {
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto rec = fx.stored(p);
  auto f = spool::storage::find_frame(*t, rec, rec.next_offset, txid);
  REQUIRE(f);
  return *f;
}

} // namespace

TEST_CASE("a message pushed without a transactionId is stored with its "
          "message id as one, and found by it",
          "[storage][find]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 3, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, msgs(11), 1'000'000));
  auto all = fx.read(p, offset{0});
  REQUIRE(all.frames.size() == 11);
  for (auto& f : all.frames)
    CHECK(f.data.transaction_id == spool::message_uuid(p.uuid, f.off.value));
  auto f = find(fx, p, spool::message_uuid(p.uuid, 5));
  REQUIRE(f);
  CHECK(f->off == offset{5});
  CHECK(f->data.payload == "m5");
  // Another partition's id of the same offset, an offset not written yet,
  // and the same id in upper case name nothing here.
  auto other = fx.make_partition("other");
  CHECK(!find(fx, p, spool::message_uuid(other.uuid, 5)));
  CHECK(!find(fx, p, spool::message_uuid(p.uuid, 11)));
  // Offset 10 ends in the digit `a`, so its upper case always differs (the
  // hash half may, once in a thousand partitions, have no letter at all).
  REQUIRE(find(fx, p, spool::message_uuid(p.uuid, 10)));
  auto upper = spool::message_uuid(p.uuid, 10);
  for (auto& c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  REQUIRE(upper != spool::message_uuid(p.uuid, 10));
  CHECK(!find(fx, p, upper));
}

TEST_CASE("a message above the readable end is not found", "[storage][find]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, {msg("a"), msg("b", "order-1"), msg("c")}, 1'000'000));
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto rec = fx.stored(p);
  // What a reader may not see yet (an earlier seal still in flight) stays
  // unfound, by message id and by client id alike.
  for (auto* id : {"gen", "order-1"}) {
    std::string txid = id == std::string{"gen"} ? spool::message_uuid(p.uuid, 2)
                                                : std::string{id};
    auto off = id == std::string{"gen"} ? 2 : 1;
    auto all = spool::storage::find_frame(*t, rec, rec.next_offset, txid);
    REQUIRE(all);
    REQUIRE(*all);
    auto below = spool::storage::find_frame(*t, rec, offset{off}, txid);
    REQUIRE(below);
    CHECK(!*below);
  }
}

TEST_CASE("a frame stored before generated ids were message ids is found by "
          "its message id",
          "[storage][find]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  auto old = msg("a");
  old.transaction_id = "6e1c-old-style"; // generated, not the message id
  REQUIRE(fx.append(log, {old}, 1'000'000));
  auto f = find(fx, p, spool::message_uuid(p.uuid, 0));
  REQUIRE(f);
  CHECK(f->data.transaction_id == "6e1c-old-style");
  CHECK(!find(fx, p, "6e1c-old-style")); // never indexed
  CHECK(!find(fx, p, ""));
}

TEST_CASE("a client-given transactionId is found through the dedup index",
          "[storage][find]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, {msg("a", "order-1"), msg("b"), msg("c", "order-2")},
                    1'000'000));
  auto f = find(fx, p, "order-2");
  REQUIRE(f);
  CHECK(f->off == offset{2});
  CHECK(f->data.payload == "c");
  CHECK(!find(fx, p, "order-3"));
  // A client id that looks like a message id of this partition but names
  // another offset's frame is still found by the index.
  auto lookalike = spool::message_uuid(p.uuid, 0);
  REQUIRE(fx.append(log, {msg("d", lookalike)}, 2'000'000));
  f = find(fx, p, lookalike);
  REQUIRE(f);
  CHECK(f->off == offset{3});
  CHECK(f->data.payload == "d");
}

TEST_CASE("a message retention deleted is not found", "[storage][find]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 2, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, {msg("a", "old"), msg("b")}, 1'000'000));
  REQUIRE(fx.append(log, {msg("c", "new"), msg("d")}, 5'000'000));
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto m = spool::storage::plan_retention(*t, p.queue, p.id,
                                          {.created_before = 2'000'000});
  t->abort();
  REQUIRE(m);
  REQUIRE(*m);
  REQUIRE(fx.commit(spool::storage::write_batch{{**m}}));
  CHECK(!find(fx, p, "old"));
  CHECK(!find(fx, p, spool::message_uuid(p.uuid, 1)));
  CHECK(find(fx, p, "new"));
  CHECK(find(fx, p, spool::message_uuid(p.uuid, 3)));
}

TEST_CASE("a message id reads its offset back only in its exact spelling",
          "[unit][vocab]") {
  auto id = spool::message_uuid("b895e5a5-8447-49e9-b115-13e01e3891b1",
                                0x1234'5678'9abcLL);
  CHECK(spool::message_uuid_offset("b895e5a5-8447-49e9-b115-13e01e3891b1", id)
        == 0x1234'5678'9abcLL);
  CHECK(!spool::message_uuid_offset("another", id));
  CHECK(!spool::message_uuid_offset("b895e5a5-8447-49e9-b115-13e01e3891b1",
                                    id.substr(1)));
  auto bad = id;
  bad[23] = '0'; // a dash replaced
  CHECK(
      !spool::message_uuid_offset("b895e5a5-8447-49e9-b115-13e01e3891b1", bad));
  CHECK(!spool::message_uuid_offset("b895e5a5-8447-49e9-b115-13e01e3891b1",
                                    "order-1"));
}
