#pragma once

// A slot's rows in every data table of a store, and where two such lists
// first differ: replicas of a slot must end with the same rows byte for
// byte (replay.hpp, replica_host_test.cpp, cluster_history_test.cpp).

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "storage/keys.hpp"
#include "storage/store.hpp"

namespace spool::test {

/// Slot `slot`'s rows in every data table: (table, key, value), in order.
using slot_rows_t
    = std::vector<std::tuple<std::size_t, std::string, std::string>>;
inline slot_rows_t slot_rows(storage::store& s, slot_t slot) {
  slot_rows_t out;
  auto t = s.db().read();
  REQUIRE(t);
  auto end = storage::keys::slot_end(slot);
  for (std::size_t i = 0; i < storage::dbis::data_tables; ++i) {
    auto cur = t->open_cursor(t->db().data_table(i));
    REQUIRE(cur);
    auto found = cur->seek(storage::keys::slot_begin(slot));
    while (found && *found && cur->key() < end) {
      out.emplace_back(i, std::string{cur->key()}, std::string{cur->value()});
      found = cur->next();
    }
    REQUIRE(found);
  }
  return out;
}

/// Slot `slot`'s rows in the store at `data` (a stopped spoold's data
/// directory).
inline slot_rows_t slot_rows_at(const std::filesystem::path& data,
                                slot_t slot) {
  storage::store_options opts;
  opts.env.dir = data;
  opts.env.initial_map_bytes = std::size_t{16} << 20;
  opts.slot_count = default_slot_count;
  auto s = storage::store::open(opts);
  REQUIRE(s);
  return slot_rows(**s, slot);
}

/// Where two slots' rows first differ ("" when equal), in a few words.
inline std::string rows_diff(const slot_rows_t& a, const slot_rows_t& b) {
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i])
      return "row " + std::to_string(i) + ": table "
             + std::to_string(std::get<0>(a[i])) + "/"
             + std::to_string(std::get<0>(b[i])) + ", key of "
             + std::to_string(std::get<1>(a[i]).size()) + "/"
             + std::to_string(std::get<1>(b[i]).size()) + " bytes, value of "
             + std::to_string(std::get<2>(a[i]).size()) + "/"
             + std::to_string(std::get<2>(b[i]).size()) + " bytes";
  if (a.size() != b.size())
    return "rows " + std::to_string(a.size()) + "/" + std::to_string(b.size());
  return "";
}

} // namespace spool::test
