#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "vocab/slot.hpp"
#include "vocab/slot_ranges.hpp"

using namespace spool;

TEST_CASE("a queue's slot is its name's hash, or its {tag}'s when the name "
          "has one",
          "[vocab][slot]") {
  CHECK(hash_tag("orders") == "orders");
  CHECK(hash_tag("orders{eu}") == "eu");
  CHECK(hash_tag("{eu}.refunds") == "eu");
  CHECK(hash_tag("a{eu}b{us}") == "eu");     // the first tag only
  CHECK(hash_tag("a{}b{us}") == "a{}b{us}"); // an empty tag: the whole name
  CHECK(hash_tag("a{eu") == "a{eu");         // unclosed: the whole name
  CHECK(hash_tag("a}b{c}") == "c");
  CHECK(slot_of("orders{eu}", 256) == slot_of("refunds{eu}", 256));
  CHECK(slot_of("orders{eu}", 256) == slot_of("eu", 256));
  CHECK(slot_of("anything", 1) == 0);
  // Placement is part of a store's format: these values never change.
  CHECK(slot_of("orders", 256) == 117);
  CHECK(slot_of("payments", 256) == 184);
  CHECK(slot_of("orders", 16384) == 10101);
}

TEST_CASE("names spread over the slots", "[vocab][slot]") {
  std::set<slot_t> used;
  for (int i = 0; i < 4096; ++i)
    used.insert(slot_of("queue-" + std::to_string(i), 256));
  CHECK(used.size() == 256);
}

TEST_CASE("an id carries its slot in bits 32 to 47, below 2^48",
          "[vocab][slot]") {
  auto id = slot_id(513, 7);
  CHECK(slot_of_id(id) == 513);
  CHECK(slot_local_id(id) == 7);
  CHECK(slot_id(65535, UINT32_MAX) < (std::uint64_t{1} << 48));
  CHECK(slot_id(1, 1) > slot_id(0, UINT32_MAX)); // a slot's ids sort together
}

TEST_CASE("a uuid carries its slot in its first four hex digits",
          "[vocab][slot]") {
  CHECK(slot_of_uuid("00ff1234-0000-4000-8000-000000000000") == 255);
  CHECK(slot_of_uuid("ffff") == 65535);
  CHECK(!slot_of_uuid("00F1"));
  CHECK(!slot_of_uuid("0g00"));
  CHECK(!slot_of_uuid("001"));
}

TEST_CASE("a lease id carries its queue's id and slot before the token",
          "[vocab][slot]") {
  auto q = slot_id(300, 0xabcdef12);
  auto id = lease_id_of(q, "1234-5678-00000000002a");
  CHECK(id == "012cabcd-ef12-1234-5678-00000000002a"); // UUID-shaped
  CHECK(queue_of_id(id) == q);
  CHECK(slot_of_uuid(id) == 300);
  CHECK(queue_of_id(lease_id_of(0, "L1")) == 0u);
  CHECK(!queue_of_id("L1"));
  CHECK(!queue_of_id("012cabcd-ef12"));   // too short
  CHECK(!queue_of_id("012cabcd_ef12-x")); // not its shape
  CHECK(!queue_of_id("012CABCD-ef12-x")); // upper case: not ours
}

TEST_CASE("lowercase hex read once for every id Spool parses",
          "[vocab][slot]") {
  CHECK(lower_hex_of("00ff") == 255u);
  CHECK(lower_hex_of("0001-0002", 4) == 0x10002u);
  CHECK(!lower_hex_of("0001-0002")); // a dash where none is expected
  CHECK(!lower_hex_of("00FF"));      // not ours: upper case
  CHECK(lower_hex_of("") == 0u);
}

TEST_CASE("a list of slots is shown as ascending ranges, each slot once, "
          "and no slot as none",
          "[vocab][slot]") {
  CHECK(show_slot_ranges({}) == "none");
  CHECK(show_slot_ranges({7}) == "7");
  CHECK(show_slot_ranges({3, 0, 1, 2, 9, 12, 13, 15, 14, 9}) == "0-3,9,12-15");
  CHECK(show_slot_ranges({65535, 65534}) == "65534-65535");
}
