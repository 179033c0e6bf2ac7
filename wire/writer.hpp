#pragma once

/// Writing msgpack: msgpack-c's packer behind the same short calls as
/// `json::writer` (protocol/json/write.hpp), so that one shape writer
/// (protocol/api/shapes.hpp) serves both doors. A map or an array is opened
/// before its size is known: its header is written as map32/array32 with
/// the count patched when it closes (valid msgpack, 4 bytes more than the
/// smallest header). The buffer starts with the frame's 4-byte length,
/// filled by `take_frame` (api.md: a frame is a big-endian length and one
/// map).

#include <msgpack.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "wire/kv_calls.hpp"

namespace spool::mp {

class writer : public wire::kv_calls<writer> {
public:
  writer() : pk_(out_) {
    out_.s.append(4, '\0'); // the frame's length, filled by take_frame
  }

  writer& begin_object() {
    return open(0xdf, true);
  }
  writer& end_object() {
    return close();
  }
  writer& begin_array() {
    return open(0xdd, false);
  }
  writer& end_array() {
    return close();
  }
  writer& key(std::string_view k) {
    if (!open_.empty() && open_.back().is_map)
      ++open_.back().count;
    pk_.pack_str(static_cast<std::uint32_t>(k.size()));
    pk_.pack_str_body(k.data(), static_cast<std::uint32_t>(k.size()));
    return *this;
  }
  writer& str(std::string_view v) {
    value();
    pk_.pack_str(static_cast<std::uint32_t>(v.size()));
    pk_.pack_str_body(v.data(), static_cast<std::uint32_t>(v.size()));
    return *this;
  }
  /// Bytes as msgpack bin (a payload).
  writer& bin(std::string_view v) {
    value();
    pk_.pack_bin(static_cast<std::uint32_t>(v.size()));
    pk_.pack_bin_body(v.data(), static_cast<std::uint32_t>(v.size()));
    return *this;
  }
  /// A value already encoded as msgpack (one whole value), as it is.
  writer& raw(std::string_view msgpack_value) {
    value();
    out_.s.append(msgpack_value);
    return *this;
  }
  writer& i64(std::int64_t v) {
    value();
    pk_.pack_int64(v);
    return *this;
  }
  writer& u64(std::uint64_t v) {
    value();
    pk_.pack_uint64(v);
    return *this;
  }
  writer& boolean(bool v) {
    value();
    if (v)
      pk_.pack_true();
    else
      pk_.pack_false();
    return *this;
  }
  writer& null() {
    value();
    pk_.pack_nil();
    return *this;
  }

  /// Room for `n` bytes in all (an answer whose size is known roughly
  /// grows its buffer once, not by doubling copies).
  void reserve(std::size_t n) {
    out_.s.reserve(n + 4);
  }

  /// The bytes written so far (the length prefix excluded).
  std::size_t size() const {
    return out_.s.size() - 4;
  }

  /// The frame: the big-endian length, then what was written (one map).
  std::string take_frame() {
    auto n = static_cast<std::uint32_t>(size());
    put32(0, n);
    return std::move(out_.s);
  }

private:
  struct sink {
    std::string s;
    void write(const char* p, std::size_t n) {
      s.append(p, n);
    }
  };
  struct level {
    std::size_t pos; ///< where the header's count goes
    std::uint32_t count = 0;
    bool is_map;
  };

  /// A value in an array counts one element (in a map, its key counted).
  void value() {
    if (!open_.empty() && !open_.back().is_map)
      ++open_.back().count;
  }
  writer& open(char marker, bool is_map) {
    value();
    out_.s.push_back(marker);
    open_.push_back({out_.s.size(), 0, is_map});
    out_.s.append(4, '\0');
    return *this;
  }
  writer& close() {
    put32(open_.back().pos, open_.back().count);
    open_.pop_back();
    return *this;
  }
  void put32(std::size_t pos, std::uint32_t n) {
    out_.s[pos] = static_cast<char>(n >> 24);
    out_.s[pos + 1] = static_cast<char>(n >> 16);
    out_.s[pos + 2] = static_cast<char>(n >> 8);
    out_.s[pos + 3] = static_cast<char>(n);
  }

  sink out_;
  msgpack::packer<sink> pk_;
  std::vector<level> open_;
};

} // namespace spool::mp
