#pragma once

/// Compact binary serialization for every type with a `fields` overload
/// (records, mutations, frames). Integers are LEB128 varints (signed ones
/// zig-zag), strings and vectors are length-prefixed. The reader checks every
/// length against the bytes left, so garbage input fails instead of
/// allocating or reading out of bounds.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "storage/trailing.hpp"

namespace spool::storage {

namespace detail {
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_trailing : std::false_type {};
template <class T>
struct is_trailing<trailing<T>> : std::true_type {};
template <class T>
struct is_variant : std::false_type {};
template <class... Ts>
struct is_variant<std::variant<Ts...>> : std::true_type {};
} // namespace detail

/// Appends LEB128 varint `x` to `out`.
inline void put_varint(std::string& out, std::uint64_t x) {
  while (x >= 0x80) {
    out.push_back(static_cast<char>((x & 0x7f) | 0x80));
    x >>= 7;
  }
  out.push_back(static_cast<char>(x));
}

/// Reads a LEB128 varint; false on truncation or a value beyond 64 bits.
inline bool get_varint(std::string_view& in, std::uint64_t& x) {
  x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.empty())
      return false;
    auto byte = static_cast<std::uint8_t>(in.front());
    in.remove_prefix(1);
    if (shift == 63 && byte > 1)
      return false; // the tenth byte holds only the 64th bit
    x |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0)
      return true;
  }
  return false;
}

/// Serializes values with `fields` overloads into a byte string.
class bin_writer {
public:
  explicit bin_writer(std::string& out) : out_(out) {
  }

  template <class... Ts>
  bool operator()(Ts&&... xs) {
    (write(xs), ...);
    return true;
  }

private:
  template <class T>
  void write(T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      out_.push_back(x ? 1 : 0);
    } else if constexpr (std::is_enum_v<T>) {
      put_varint(out_, static_cast<std::uint64_t>(x));
    } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
      put_varint(out_, x);
    } else if constexpr (std::is_integral_v<T>) {
      auto v = static_cast<std::int64_t>(x);
      put_varint(out_, (static_cast<std::uint64_t>(v) << 1)
                           ^ static_cast<std::uint64_t>(v >> 63));
    } else if constexpr (std::is_same_v<T, std::string>) {
      put_varint(out_, x.size());
      out_.append(x);
    } else if constexpr (detail::is_vector<T>::value) {
      put_varint(out_, x.size());
      for (auto& y : x)
        write(y);
    } else if constexpr (detail::is_optional<T>::value) {
      out_.push_back(x ? 1 : 0);
      if (x)
        write(*x);
    } else if constexpr (detail::is_pair<T>::value) {
      write(x.first);
      write(x.second);
    } else if constexpr (detail::is_trailing<T>::value) {
      write(x.ref);
    } else if constexpr (detail::is_variant<T>::value) {
      put_varint(out_, x.index());
      std::visit([this](auto& y) { write(y); }, x);
    } else {
      fields(*this, x);
    }
  }

  std::string& out_;
};

/// Deserializes what bin_writer wrote; `ok()` turns false on any mismatch.
class bin_reader {
public:
  explicit bin_reader(std::string_view in) : in_(in) {
  }

  template <class... Ts>
  bool operator()(Ts&&... xs) {
    (read(xs), ...);
    return ok_;
  }

  bool ok() const noexcept {
    return ok_;
  }
  /// True when every input byte was consumed without error.
  bool done() const noexcept {
    return ok_ && in_.empty();
  }

private:
  bool varint(std::uint64_t& x) {
    if (ok_ && !get_varint(in_, x))
      ok_ = false;
    return ok_;
  }

  /// Length-prefixed bytes, as a view into the input.
  bool bytes(std::string_view& out) {
    std::uint64_t n = 0;
    if (!varint(n))
      return false;
    if (n > in_.size()) {
      ok_ = false;
      return false;
    }
    out = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }

  template <class T>
  void read(T& x) {
    if (!ok_)
      return;
    if constexpr (std::is_same_v<T, bool>) {
      if (in_.empty() || static_cast<unsigned char>(in_[0]) > 1) {
        ok_ = false;
        return;
      }
      x = in_[0] == 1;
      in_.remove_prefix(1);
    } else if constexpr (std::is_enum_v<T>) {
      // Every serialized enum declares its highest value (found by ADL).
      std::uint64_t v = 0;
      if (varint(v)) {
        if (v > static_cast<std::uint64_t>(enum_limit(T{})))
          ok_ = false;
        else
          x = static_cast<T>(v);
      }
    } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
      std::uint64_t v = 0;
      if (varint(v)) {
        if (v > static_cast<std::uint64_t>(~T{0}))
          ok_ = false;
        x = static_cast<T>(v);
      }
    } else if constexpr (std::is_integral_v<T>) {
      std::uint64_t v = 0;
      if (varint(v))
        x = static_cast<T>(static_cast<std::int64_t>(v >> 1)
                           ^ -static_cast<std::int64_t>(v & 1));
    } else if constexpr (std::is_same_v<T, std::string>) {
      std::string_view v;
      if (bytes(v))
        x.assign(v.data(), v.size());
    } else if constexpr (std::is_same_v<T, std::string_view>) {
      bytes(x); // a view into the input (a summary that copies nothing)
    } else if constexpr (detail::is_vector<T>::value) {
      std::uint64_t n = 0;
      if (!varint(n))
        return;
      if (n > in_.size()) { // every element takes at least one byte
        ok_ = false;
        return;
      }
      // Grow as elements decode: memory stays proportional to the input
      // actually consumed, whatever count a hostile prefix claims.
      x.clear();
      for (std::uint64_t i = 0; i < n && ok_; ++i)
        read(x.emplace_back());
    } else if constexpr (detail::is_optional<T>::value) {
      bool present = false;
      read(present);
      if (ok_ && present) {
        x.emplace();
        read(*x);
      } else {
        x.reset();
      }
    } else if constexpr (detail::is_pair<T>::value) {
      read(x.first);
      read(x.second);
    } else if constexpr (detail::is_trailing<T>::value) {
      if (!in_.empty()) // absent from a record stored before the field
        read(x.ref);
    } else if constexpr (detail::is_variant<T>::value) {
      std::uint64_t idx = 0;
      if (!varint(idx))
        return;
      read_variant(x, idx, std::make_index_sequence<std::variant_size_v<T>>{});
    } else {
      fields(*this, x);
    }
  }

  template <class V, std::size_t... Is>
  void read_variant(V& x, std::uint64_t idx, std::index_sequence<Is...>) {
    bool found
        = ((idx == Is ? (read(x.template emplace<Is>()), true) : false) || ...);
    if (!found)
      ok_ = false;
  }

  std::string_view in_;
  bool ok_ = true;
};

/// Serializes `x` into a fresh string.
template <class T>
std::string to_bytes(const T& x) {
  std::string out;
  bin_writer w{out};
  w(const_cast<T&>(x));
  return out;
}

/// Appends the serialization of `x` to `out`.
template <class T>
void append_bytes(std::string& out, const T& x) {
  bin_writer w{out};
  w(const_cast<T&>(x));
}

/// Deserializes `x` from exactly all of `in`; false on any mismatch.
template <class T>
bool from_bytes(std::string_view in, T& x) {
  bin_reader r{in};
  r(x);
  return r.done();
}

} // namespace spool::storage
