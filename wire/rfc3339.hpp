#pragma once

/// RFC 3339 timestamps on Howard Hinnant's date library: parsing (a `Z` or
/// `±hh:mm` offset; digits beyond microseconds are truncated, semantics.md
/// §5) and the wire's `createdAt` format `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`.

#include <optional>
#include <string>
#include <string_view>

#include "vocab/time.hpp"

namespace spool::timefmt {

/// µs UTC, or none when `s` is not an RFC 3339 date-time.
std::optional<micros> parse_rfc3339(std::string_view s);

/// `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`.
std::string format_micros(micros t);

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (Queen's `expiresAt`, `targetTimestamp`).
std::string format_millis(micros t);

} // namespace spool::timefmt
