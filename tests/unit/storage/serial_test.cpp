// Serialization of records and write batches: round trips, garbage rejected.

#include <catch2/catch.hpp>

#include <random>

#include "storage/mutation.hpp"
#include "storage/serial.hpp"

using namespace spool::storage;

namespace {

write_batch sample_batch() {
  write_batch b;
  queue_record q;
  q.id = queue_id{7};
  q.name = "orders.eu";
  q.name_space = "orders";
  q.options.retry_backoff_ms = {100, 1000};
  q.options.window_buffer_max_s = 30;
  q.options.dead_letter_queue = false;
  b.mutations.emplace_back(mut::create_queue{q});
  mut::append_segment a;
  a.queue = queue_id{7};
  a.partition = partition_id{9};
  a.base = offset{1000};
  a.frame_count = 2;
  a.created_at = -5; // negative values survive zig-zag
  a.bytes = std::string("\0\x01\x02", 3);
  a.client_ids = {{"tx", offset{1000}}};
  b.mutations.emplace_back(a);
  cursor_record c;
  c.committed = offset{-1};
  c.lease_epoch = 3;
  c.isolated = std::pair{offset{4}, offset{9}};
  c.counters = {{offset{4}, 2, 1}};
  b.mutations.emplace_back(
      mut::put_cursor{queue_id{7}, partition_id{9}, "g", c});
  dlq_entry e;
  e.id = 11;
  e.partition = partition_id{9};
  e.message.off = offset{4};
  e.message.data.payload = "{}";
  e.error = "boom";
  b.mutations.emplace_back(mut::put_dlq{queue_id{7}, "g", e});
  b.mutations.emplace_back(mut::delete_segments{
      queue_id{7}, partition_id{9}, offset{100}, {"a", "b"}});
  return b;
}

} // namespace

TEST_CASE("a write batch round-trips through its serialization",
          "[storage][serial]") {
  auto b = sample_batch();
  auto bytes = to_bytes(b);
  write_batch back;
  REQUIRE(from_bytes(bytes, back));
  REQUIRE(back.mutations.size() == b.mutations.size());
  CHECK(to_bytes(back) == bytes);
  auto& a = std::get<mut::append_segment>(back.mutations[1]);
  CHECK(a.created_at == -5);
  CHECK(a.bytes == std::string("\0\x01\x02", 3));
  auto& c = std::get<mut::put_cursor>(back.mutations[2]);
  CHECK(c.rec.isolated == std::pair{offset{4}, offset{9}});
  CHECK(std::get<mut::create_queue>(back.mutations[0]).rec.options
        == std::get<mut::create_queue>(b.mutations[0]).rec.options);
}

TEST_CASE("truncated or garbage bytes never decode as a write batch",
          "[storage][serial][bad-input]") {
  auto bytes = to_bytes(sample_batch());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    write_batch back;
    CHECK(!from_bytes(std::string_view{bytes}.substr(0, n), back));
  }
  std::string longer = bytes + "x";
  write_batch back;
  CHECK(!from_bytes(longer, back));
  std::mt19937 rng{42};
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& ch : junk)
      ch = static_cast<char>(rng());
    write_batch w;
    (void)from_bytes(junk, w); // must not crash or allocate wildly
  }
}

TEST_CASE("an unknown mutation index is rejected",
          "[storage][serial][bad-input]") {
  std::string bytes;
  put_varint(bytes, 1);  // one mutation
  put_varint(bytes, 99); // no such alternative
  write_batch back;
  CHECK(!from_bytes(bytes, back));
}

TEST_CASE("an enum value beyond its type is rejected",
          "[storage][serial][bad-input]") {
  subscription_record rec;
  auto bytes = to_bytes(rec);
  bytes[0] = static_cast<char>(3); // mode: no such subscription mode
  subscription_record back;
  CHECK(!from_bytes(bytes, back));
  bytes[0] = static_cast<char>(2);
  CHECK(from_bytes(bytes, back));
  CHECK(back.mode == subscription_mode::timestamp);
}

TEST_CASE("a varint beyond 64 bits is rejected",
          "[storage][serial][bad-input]") {
  std::string max;
  put_varint(max, UINT64_MAX);
  std::string_view in = max;
  std::uint64_t x = 0;
  CHECK(get_varint(in, x));
  CHECK(x == UINT64_MAX);
  std::string over = max;
  over.back() = 0x02; // a 65th bit
  in = over;
  CHECK(!get_varint(in, x));
}

TEST_CASE("a hostile element count fails without decoding past the input",
          "[storage][serial][bad-input]") {
  std::string bytes;
  put_varint(bytes, 1'000'000); // claims a million mutations
  bytes.append(50, '\0');
  write_batch back;
  CHECK(!from_bytes(bytes, back));
  CHECK(back.mutations.size() <= 50);
}

namespace {

/// cursor_record as stored before `exempt` was added.
struct cursor_record_v1 {
  cursor_record r;
  template <class F>
  friend auto fields(F& f, cursor_record_v1& x) {
    return f(x.r.committed, x.r.lease_epoch, x.r.isolated, x.r.leased,
             x.r.counters, x.r.last_activity, x.r.requeued);
  }
};

} // namespace

TEST_CASE("a trailing field round-trips, and a record stored before it was "
          "added decodes with its default",
          "[storage][serial]") {
  cursor_record c;
  c.committed = offset{41};
  c.lease_epoch = 3;
  c.counters = {{offset{43}, 2, 1, true}};
  c.last_activity = 1'000;
  c.requeued = {{9, offset{5}, 0, 0, false}};
  c.exempt = offset{40};
  cursor_record back;
  REQUIRE(from_bytes(to_bytes(c), back));
  CHECK(back == c);
  cursor_record_v1 old{c};
  cursor_record from_old;
  REQUIRE(from_bytes(to_bytes(old), from_old));
  CHECK(from_old.exempt == offset{-1});
  from_old.exempt = c.exempt;
  CHECK(from_old == c);
  // A trailing field cut short is still an error, not a default.
  auto bytes = to_bytes(c);
  bytes.push_back('\xff');
  cursor_record bad;
  CHECK_FALSE(from_bytes(bytes, bad));
}
