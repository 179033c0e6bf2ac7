#pragma once

// Replays a store's slot logs into fresh stores and compares each slot's
// rows byte for byte (`check_replay`): what a follower applying the same
// entries in the same order must end with. Also truncates a replayed
// slot's tail and checks that it equals never having applied it, then
// truncates all of it and checks that the slot is empty.

#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <vector>

#include "storage/slot_log.hpp"
#include "storage/store.hpp"
#include "unit/storage/fixture.hpp"
#include "unit/storage/slot_rows.hpp"

namespace spool::test {

/// Every slot with a log, and where it stands.
inline std::vector<std::pair<slot_t, st::slot_log_meta>>
logged_slots(st::store& s) {
  std::vector<std::pair<slot_t, st::slot_log_meta>> out;
  auto t = s.db().read();
  REQUIRE(t);
  std::vector<slot_t> slots;
  REQUIRE(t->scan_prefix(t->db().slot_log, {}, [&](auto key, auto) {
    if (key.size() == 2)
      slots.push_back(
          static_cast<slot_t>((static_cast<std::uint8_t>(key[0]) << 8)
                              | static_cast<std::uint8_t>(key[1])));
    return true;
  }));
  for (auto slot : slots) {
    auto m = st::slot_log::meta(*t, slot);
    REQUIRE(m);
    out.emplace_back(slot, *m);
  }
  return out;
}

/// Applies entries [from, to] of `src`'s slot `slot` to `dst` in order, as
/// a follower would (in one write transaction: the test needs no fsync per
/// entry).
inline void ship(st::store& src, st::store& dst, slot_t slot,
                 std::uint64_t from, std::uint64_t to) {
  auto r = src.db().read();
  REQUIRE(r);
  auto w = dst.db().write();
  REQUIRE(w);
  for (auto seq = from; seq <= to; ++seq) {
    INFO("slot " << slot << " seq " << seq);
    auto got = st::slot_log::read_entry(*r, slot, seq);
    REQUIRE(got);
    REQUIRE(*got);
    REQUIRE(st::slot_log::apply_entry(*w, slot, seq, **got,
                                      dst.db().options().slot_log));
  }
  REQUIRE(w->commit());
}

/// A fresh store of `src`'s slot count in `dir`.
inline std::unique_ptr<st::store> fresh_like(st::store& src, temp_dir& dir) {
  st::store_options opts;
  opts.env.dir = dir.path / "db";
  opts.env.initial_map_bytes = std::size_t{64} << 20;
  opts.slot_count = src.slot_count();
  auto s = st::store::open(opts);
  REQUIRE(s);
  return std::move(*s);
}

/// Where two undo lists first differ ("" when equal), in a few words.
inline std::string undo_diff(const std::vector<st::undo_image>& a,
                             const std::vector<st::undo_image>& b) {
  auto hex = [](const std::string& k) {
    std::string out;
    static const char* d = "0123456789abcdef";
    for (unsigned char c : k.substr(0, 24)) {
      out += d[c >> 4];
      out += d[c & 15];
    }
    return out;
  };
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (!(a[i] == b[i]))
      return "image " + std::to_string(i) + ": table "
             + std::to_string(a[i].table) + "/" + std::to_string(b[i].table)
             + " key " + hex(a[i].key) + "/" + hex(b[i].key) + " before "
             + (a[i].before ? std::to_string(a[i].before->size()) : "none")
             + "/"
             + (b[i].before ? std::to_string(b[i].before->size()) : "none");
  if (a.size() != b.size())
    return "sizes " + std::to_string(a.size()) + "/" + std::to_string(b.size());
  return "";
}

struct replay_report {
  std::size_t slots = 0;
  std::uint64_t entries = 0;
  std::size_t rows = 0;
  std::size_t truncated = 0;
};

/// Replays every slot log of `src` into a fresh store and compares each
/// slot's rows (and the undo images the replay recorded) with `src`'s;
/// then truncates each replayed slot to half its entries, compares it with
/// a store that applied only that half, and applies the tail again.
inline replay_report check_replay(st::store& src) {
  replay_report rep;
  temp_dir d1, d2;
  auto replica = fresh_like(src, d1);
  auto half = fresh_like(src, d2);
  for (auto& [slot, meta] : logged_slots(src)) {
    INFO("slot " << slot);
    REQUIRE(meta.first_seq == 1); // the whole log is kept
    ship(src, *replica, slot, 1, meta.last_seq);
    auto rows = slot_rows(src, slot);
    CHECK(rows_diff(slot_rows(*replica, slot), rows) == "");
    {
      auto a = src.db().read();
      auto b = replica->db().read();
      REQUIRE(a);
      REQUIRE(b);
      for (auto seq = std::uint64_t{1}; seq <= meta.last_seq; ++seq) {
        auto ea = st::slot_log::read_entry(*a, slot, seq);
        auto eb = st::slot_log::read_entry(*b, slot, seq);
        INFO("seq " << seq);
        REQUIRE(ea);
        REQUIRE(eb);
        REQUIRE(*ea);
        REQUIRE(*eb);
        CHECK(undo_diff((*ea)->undo, (*eb)->undo) == "");
      }
    }
    ++rep.slots;
    rep.entries += meta.last_seq;
    rep.rows += rows.size();
    if (meta.last_seq < 2)
      continue;
    auto k = meta.last_seq / 2;
    ship(src, *half, slot, 1, k);
    {
      auto w = replica->db().write();
      REQUIRE(w);
      REQUIRE(st::slot_log::truncate(*w, slot, k));
      REQUIRE(w->commit());
    }
    CHECK(rows_diff(slot_rows(*replica, slot), slot_rows(*half, slot)) == "");
    ship(src, *replica, slot, k + 1, meta.last_seq);
    CHECK(rows_diff(slot_rows(*replica, slot), rows) == "");
    // Every undo image, all the way back: the slot is empty again.
    {
      auto w = replica->db().write();
      REQUIRE(w);
      REQUIRE(st::slot_log::truncate(*w, slot, 0));
      REQUIRE(w->commit());
    }
    CHECK(slot_rows(*replica, slot).empty());
    ++rep.truncated;
  }
  return rep;
}

} // namespace spool::test
