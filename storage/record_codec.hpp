#pragma once

/// How a metadata record is stored: one version byte, then its
/// serialization. A record that does not decode is `ec::corrupt_record`
/// naming its table, never a crash. (Shared by the tables and the traces.)

#include <string>
#include <string_view>

#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "storage/serial.hpp"

namespace spool::storage::detail {

inline constexpr char record_version = 1;

template <class T>
expected<void> put_record(txn& t, MDB_dbi dbi, std::string_view key,
                          const T& rec) {
  std::string value(1, record_version);
  append_bytes(value, rec);
  return t.put(dbi, key, value);
}

template <class T>
expected<T> decode_record(std::string_view value, const char* table) {
  T rec;
  if (value.empty() || value[0] != record_version
      || !from_bytes(value.substr(1), rec))
    return make_error(ec::corrupt_record, "table ", table,
                      ": record does not decode");
  return rec;
}

} // namespace spool::storage::detail
