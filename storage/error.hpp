#pragma once

/// Errors of the storage component: an error code with a stable number and a
/// message that names what failed ("partition 3/7: offset 120 out of range").
/// Storage functions return `expected<T>`; LMDB and zstd errors stop here.

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

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
  busy = 14,               ///< A server-wide cap is reached (503).
  queue_full = 15,         ///< A queue's maxSize refuses the push (429).
};

const char* to_string(ec code) noexcept;

/// An error value: code plus human-readable context.
struct error {
  ec code = ec::none;
  std::string message;

  friend bool operator==(const error&, const error&) = default;
};

std::string to_string(const error& err);

/// Minimal expected<T, error>: holds either a value or an error.
template <class T>
class [[nodiscard]] expected {
public:
  expected(T value) : data_(std::in_place_index<0>, std::move(value)) {
  }
  expected(error err) : data_(std::in_place_index<1>, std::move(err)) {
  }

  explicit operator bool() const noexcept {
    return data_.index() == 0;
  }
  bool has_value() const noexcept {
    return data_.index() == 0;
  }

  T& value() & {
    return std::get<0>(data_);
  }
  const T& value() const& {
    return std::get<0>(data_);
  }
  T&& value() && {
    return std::get<0>(std::move(data_));
  }
  T& operator*() & {
    return value();
  }
  const T& operator*() const& {
    return value();
  }
  T* operator->() {
    return &value();
  }
  const T* operator->() const {
    return &value();
  }

  const error& err() const& {
    return std::get<1>(data_);
  }
  error&& err() && {
    return std::get<1>(std::move(data_));
  }

private:
  std::variant<T, error> data_;
};

/// expected<void>: success or an error.
template <>
class [[nodiscard]] expected<void> {
public:
  expected() = default;
  expected(error err) : err_(std::move(err)), failed_(true) {
  }

  explicit operator bool() const noexcept {
    return !failed_;
  }
  bool has_value() const noexcept {
    return !failed_;
  }
  const error& err() const& {
    return err_;
  }
  error&& err() && {
    return std::move(err_);
  }

private:
  error err_;
  bool failed_ = false;
};

/// Builds an error; `make_error(ec::x, "partition ", id, ": ...")`.
template <class... Ts>
error make_error(ec code, Ts&&... parts) {
  std::string msg;
  auto add = [&msg](auto&& part) {
    using part_t = std::decay_t<decltype(part)>;
    if constexpr (std::is_arithmetic_v<part_t>)
      msg += std::to_string(part);
    else
      msg += part;
  };
  (add(std::forward<Ts>(parts)), ...);
  return error{code, std::move(msg)};
}

} // namespace spool::storage

/// Returns the error of an `expected` expression from the enclosing function.
#define SPOOL_TRY(expr)                                                        \
  if (auto spool_try_result = (expr); !spool_try_result)                       \
    return std::move(spool_try_result).err();
