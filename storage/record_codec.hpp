#pragma once

/// How a metadata record is stored: one version byte, then its
/// serialization. A record that does not decode is `ec::corrupt_record`
/// naming its table, never a crash. (Shared by the tables and the traces.)

#include <optional>
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

/// Decodes the records under `prefix` in key order and hands each to
/// `f(key, T&&)`, until it returns false; a record that does not decode
/// stops the scan with its error.
template <class T, class F>
expected<void> scan_records(txn& t, MDB_dbi dbi, std::string_view prefix,
                            const char* table, F f) {
  std::optional<error> failure;
  auto scanned = t.scan_prefix(dbi, prefix, [&](auto key, auto value) {
    auto rec = decode_record<T>(value, table);
    if (!rec) {
      failure = std::move(rec).err();
      return false;
    }
    return f(key, std::move(*rec));
  });
  if (!scanned)
    return std::move(scanned).err();
  if (failure)
    return std::move(*failure);
  return {};
}

} // namespace spool::storage::detail
