#pragma once

/// RFC 3339 timestamps on Howard Hinnant's date library: parsing (a `Z` or
/// `±hh:mm` offset; digits beyond microseconds are truncated, semantics.md
/// §5) and the wire's `createdAt` format `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vocab/time.hpp"

namespace spool::timefmt {

/// µs UTC, or none when `s` is not an RFC 3339 date-time.
std::optional<micros> parse_rfc3339(std::string_view s);

/// `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`.
std::string format_micros(micros t);

/// format_micros for a run of times (a pop's messages): a time in the same
/// second as the one before reuses its date and clock text, and nothing is
/// allocated. The view lasts until the next call.
class micros_formatter {
public:
  std::string_view operator()(micros t);

private:
  std::int64_t second_ = INT64_MIN;
  char buf_[27] = {};
  std::string other_; ///< a year outside 0..9999: date's longer form
};

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (Queen's `expiresAt`, `targetTimestamp`).
std::string format_millis(micros t);

} // namespace spool::timefmt
