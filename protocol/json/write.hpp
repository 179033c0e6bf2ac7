#pragma once

/// Writing JSON: RapidJSON's writer (it escapes, formats numbers, and takes
/// a payload's raw JSON text as it is) behind a few short calls.

#include <rapidjson/encodedstream.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "vocab/errors.hpp"
#include "wire/kv_calls.hpp"

namespace spool::json {

/// RapidJSON's output stream over a `std::string`: the text is built where
/// it is handed over (`writer::take` moves it; a StringBuffer would be
/// copied out, a second copy of a big answer).
struct string_out {
  using Ch = char;
  std::string s;
  void Put(char c) {
    s.push_back(c);
  }
  void Flush() {
  }
};

/// RapidJSON reserves before a run of `PutUnsafe`s (found by ADL) for the
/// worst case (a string: 6 bytes a character, all escaped): honoured, it
/// would move a big answer to a buffer twice its size, so it is not; each
/// `PutUnsafe` is a `push_back`, safe without it.
inline void PutReserve(string_out&, std::size_t) {
}
inline void PutUnsafe(string_out& o, char c) {
  o.s.push_back(c);
}

class writer : public wire::kv_calls<writer> {
public:
  writer() : w_(out_) {
  }

  /// Room for `n` bytes of text at once (an answer whose size is known
  /// closely: it is never moved while it grows).
  void reserve(std::size_t n) {
    out_.s.reserve(n);
  }

  writer& begin_object() {
    w_.StartObject();
    return *this;
  }
  writer& end_object() {
    w_.EndObject();
    return *this;
  }
  writer& begin_array() {
    w_.StartArray();
    return *this;
  }
  writer& end_array() {
    w_.EndArray();
    return *this;
  }
  writer& key(std::string_view k) {
    for (unsigned char c : k)
      if (c >= 0x80) {
        auto fixed = replace_invalid(k);
        w_.Key(fixed.data(), static_cast<rapidjson::SizeType>(fixed.size()));
        return *this;
      }
    w_.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
    return *this;
  }
  /// A string; bytes that are not UTF-8 (a raw request path echoed in an
  /// error) are written as U+FFFD, so the answer is always valid JSON.
  writer& str(std::string_view v) {
    for (unsigned char c : v)
      if (c >= 0x80) {
        auto fixed = replace_invalid(v);
        w_.String(fixed.data(), static_cast<rapidjson::SizeType>(fixed.size()));
        return *this;
      }
    w_.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
    return *this;
  }
  writer& i64(std::int64_t v) {
    w_.Int64(v);
    return *this;
  }
  writer& u64(std::uint64_t v) {
    w_.Uint64(v);
    return *this;
  }
  /// A finite number (the caller checks: JSON has no NaN).
  writer& dbl(double v) {
    w_.Double(v);
    return *this;
  }
  writer& boolean(bool v) {
    w_.Bool(v);
    return *this;
  }
  writer& null() {
    w_.Null();
    return *this;
  }
  /// JSON text written as it is (a payload kept as it arrived: valid JSON,
  /// checked when it was pushed).
  writer& raw(std::string_view json) {
    // The writer puts its separator (and checks its state); the text goes
    // in with one copy, not a byte at a time.
    w_.RawValue("", 0, rapidjson::kObjectType);
    out_.s.append(json);
    return *this;
  }

  /// The text, handed over: the writer is done (not to be used again).
  std::string take() {
    return std::move(out_.s);
  }

private:
  /// `v` with each byte that does not start a valid UTF-8 sequence replaced
  /// (RapidJSON's validator decides).
  static std::string replace_invalid(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    std::size_t i = 0;
    while (i < v.size()) {
      rapidjson::MemoryStream ms{v.data() + i, v.size() - i};
      rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream>
          is{ms};
      rapidjson::StringBuffer one;
      if (rapidjson::UTF8<>::Validate(is, one)) {
        out.append(one.GetString(), one.GetSize());
        i += one.GetSize();
      } else {
        out += "\xEF\xBF\xBD";
        i += 1;
      }
    }
    return out;
  }

  string_out out_;
  rapidjson::Writer<string_out> w_;
};

/// `{"error": message}`.
inline std::string error_body(std::string_view message) {
  writer w;
  w.begin_object().kv("error", message).end_object();
  return w.take();
}

/// The same for a `not_leader` refusal: where the request belongs (api.md:
/// `leader`, the leader's HTTP address when known, its node, the slot and
/// the epoch).
inline std::string error_body(std::string_view message, const leader_ref& to) {
  writer w;
  w.begin_object().kv("error", message).kv("code", "not_leader");
  if (!to.http.empty())
    w.kv("leader", to.http);
  w.kv("leaderNode", to.node)
      .kv("slot", std::uint64_t{to.slot})
      .kv("epoch", to.epoch)
      .end_object();
  return w.take();
}

} // namespace spool::json
