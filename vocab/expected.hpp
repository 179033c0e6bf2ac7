#pragma once

/// `expected<T, E>`: a value or an error (C++23's std::expected, which this
/// compiler does not have). `E` defaults to the API's error; `storage/`
/// uses its own (`storage::expected<T>`). `concat` builds error messages.

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "vocab/errors.hpp"

namespace spool {

template <class T, class E = api_error>
class [[nodiscard]] expected {
public:
  expected(T value) : data_(std::in_place_index<0>, std::move(value)) {
  }
  expected(E err) : data_(std::in_place_index<1>, std::move(err)) {
  }
  /// An error of another component that reads as `E` (a storage error
  /// where an API error is expected).
  template <class G>
  requires(
      !std::is_same_v<
          std::decay_t<G>,
          E> && std::is_convertible_v<G, E> && !std::is_convertible_v<G, T>)
      expected(G&& err) :
      data_(std::in_place_index<1>, E(std::forward<G>(err))) {
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

  const E& err() const& {
    return std::get<1>(data_);
  }
  E&& err() && {
    return std::get<1>(std::move(data_));
  }

private:
  std::variant<T, E> data_;
};

/// expected<void>: success or an error.
template <class E>
class [[nodiscard]] expected<void, E> {
public:
  expected() = default;
  expected(E err) : err_(std::move(err)), failed_(true) {
  }
  template <class G>
  requires(!std::is_same_v<std::decay_t<G>, E> && std::is_convertible_v<G, E>)
      expected(G&& err) :
      err_(std::forward<G>(err)), failed_(true) {
  }

  explicit operator bool() const noexcept {
    return !failed_;
  }
  bool has_value() const noexcept {
    return !failed_;
  }
  const E& err() const& {
    return err_;
  }
  E&& err() && {
    return std::move(err_);
  }

private:
  E err_;
  bool failed_ = false;
};

/// The parts as one string: numbers in decimal, the rest appended.
template <class... Ts>
std::string concat(Ts&&... parts) {
  std::string msg;
  auto add = [&msg](auto&& part) {
    using part_t = std::decay_t<decltype(part)>;
    if constexpr (std::is_arithmetic_v<part_t>)
      msg += std::to_string(part);
    else
      msg += part;
  };
  (add(std::forward<Ts>(parts)), ...);
  return msg;
}

/// Builds an API error; `make_error(errc::x, "batch must be 1..", max)`.
template <class... Ts>
api_error make_error(errc code, Ts&&... parts) {
  return api_error{code, concat(std::forward<Ts>(parts)...)};
}

} // namespace spool

/// Returns the error of an `expected` expression from the enclosing function.
#define SPOOL_TRY(expr)                                                        \
  if (auto spool_try_result = (expr); !spool_try_result)                       \
    return std::move(spool_try_result).err();
