#pragma once

/// The key + value calls of a writer (`json::writer`, `mp::writer`): each
/// writes `key(k)` then the value through the writer's own calls (`str`,
/// `boolean`, `i64`, `u64`, `null`). A writer derives from
/// `kv_calls<itself>`.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace spool::wire {

template <class W>
class kv_calls {
public:
  W& kv(std::string_view k, std::string_view v) {
    return self().key(k).str(v);
  }
  W& kv(std::string_view k, const char* v) {
    return self().key(k).str(v);
  }
  W& kv(std::string_view k, const std::string& v) {
    return self().key(k).str(v);
  }
  W& kv(std::string_view k, bool v) {
    return self().key(k).boolean(v);
  }
  /// Any integer (signed as int64, unsigned as uint64).
  template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) W& kv(
      std::string_view k, T v) {
    if constexpr (std::is_signed_v<T>)
      return self().key(k).i64(static_cast<std::int64_t>(v));
    else
      return self().key(k).u64(static_cast<std::uint64_t>(v));
  }
  W& kv_null(std::string_view k) {
    return self().key(k).null();
  }
  /// A string, or null when none (api.md: where Queen's value cannot exist).
  W& kv(std::string_view k, const std::optional<std::string>& v) {
    return v ? kv(k, *v) : kv_null(k);
  }

private:
  W& self() {
    return static_cast<W&>(*this);
  }
};

} // namespace spool::wire
