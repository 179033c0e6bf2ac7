#pragma once

/// Strong ids and offsets: distinct types per kind, so a partition id cannot
/// be passed where a queue id or an offset is expected.

#include <compare>
#include <cstdint>
#include <string>

namespace spool {

template <class Tag, class Rep>
struct strong_id {
  using rep = Rep;
  Rep value{};

  constexpr strong_id() = default;
  constexpr explicit strong_id(Rep v) : value(v) {
  }
  friend constexpr auto operator<=>(const strong_id&, const strong_id&)
      = default;

  template <class F>
  friend auto fields(F& f, strong_id& x) {
    return f(x.value);
  }
};

/// Internal id of a queue (never reused, also after deletion).
using queue_id = strong_id<struct queue_id_tag, std::uint64_t>;
/// Internal id of a partition, unique across all queues, never reused.
using partition_id = strong_id<struct partition_id_tag, std::uint64_t>;

/// A position in a partition's log. -1 is "before offset 0".
struct offset {
  std::int64_t value = 0;

  constexpr offset() = default;
  constexpr explicit offset(std::int64_t v) : value(v) {
  }
  friend constexpr auto operator<=>(const offset&, const offset&) = default;
  friend constexpr offset operator+(offset o, std::int64_t n) {
    return offset{o.value + n};
  }
  friend constexpr offset operator-(offset o, std::int64_t n) {
    return offset{o.value - n};
  }
  friend constexpr std::int64_t operator-(offset a, offset b) {
    return a.value - b.value;
  }

  template <class F>
  friend auto fields(F& f, offset& x) {
    return f(x.value);
  }
};

/// An inclusive range of offsets.
struct offset_range {
  offset first;
  offset last;
  friend bool operator==(const offset_range&, const offset_range&) = default;
};

} // namespace spool
