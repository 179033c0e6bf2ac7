#pragma once

/// Hex digits as they are read from text: percent escapes and chunk sizes
/// of HTTP, and the keys of encryption at rest.

namespace spool {

/// A hex digit's value (either case), or -1.
constexpr int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace spool
