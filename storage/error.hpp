#pragma once

/// Errors of the storage component: an error code with a stable number and a
/// message that names what failed ("partition 3/7: offset 120 out of range").
/// Storage functions return `expected<T>`; LMDB and zstd errors stop here.

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "vocab/errors.hpp"
#include "vocab/expected.hpp"

namespace spool::storage {

/// Stable error numbers of the storage component. Never renumber.
enum class ec : std::uint8_t {
  none = 0,
  lmdb_error = 1,          ///< LMDB returned an unexpected error code.
  corrupt_segment = 2,     ///< Checksum, header or frame layout mismatch.
  corrupt_record = 3,      ///< A metadata record could not be decoded.
  unknown_queue = 4,       ///< No queue with that id.
  unknown_partition = 5,   ///< No partition with that id.
  offset_out_of_range = 6, ///< Offset negative or above the next offset.
  frame_too_large = 7,     ///< A frame or field exceeds its limit.
  invalid_argument = 8,    ///< A parameter is malformed (empty batch, ...).
  conflict = 9,            ///< A mutation contradicts stored state.
  compression_error = 10,  ///< zstd failed to compress or decompress.
  io_error = 11,           ///< File system error (open, sync, ...).
  storage_full = 12,       ///< The map could not grow (disk or limit).
  shutting_down = 13,      ///< The writer no longer takes batches.
  // 14 and 15 (busy, queue_full) were refusals of the actor layer; they
  // are API errors now (`spool::errc`). Not to be reused.
  not_found = 16,        ///< A named entry (a DLQ id, a group) does not exist.
  encryption_error = 17, ///< OpenSSL failed to encrypt a payload.
};

const char* to_string(ec code) noexcept;

struct error;

/// What a storage error is to a client (api.md's table): the map cannot grow
/// is `storage_full`, a stopped writer `unavailable`, an unknown queue or
/// partition `not_found`, a malformed argument `invalid_argument` (too
/// large: `too_large`); corruption and LMDB or file errors are `internal`.
/// The message keeps the storage detail.
api_error to_api(const error& err);

/// An error value: code plus human-readable context.
struct error {
  ec code = ec::none;
  std::string message;

  friend bool operator==(const error&, const error&) = default;

  /// Where the actor layer or the API expects an error, a storage error is
  /// the API error it means (`to_api`): the one mapping, applied at every
  /// such boundary.
  operator api_error() const {
    return to_api(*this);
  }
};

std::string to_string(const error& err);

/// A value or a storage error.
template <class T>
using expected = spool::expected<T, error>;

/// Builds an error; `make_error(ec::x, "partition ", id, ": ...")`.
template <class... Ts>
error make_error(ec code, Ts&&... parts) {
  return error{code, concat(std::forward<Ts>(parts)...)};
}

} // namespace spool::storage
