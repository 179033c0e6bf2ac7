#pragma once

/// Percent-decoding of path segments and query strings (RFC 3986; `+` is a
/// space in a query, as HTML forms and every HTTP client library send it).
/// Query keys match exactly (not Queen's substring match); an empty value
/// is present and empty, and the API treats it as absent.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vocab/hex.hpp"

namespace spool::http {

/// A hex digit's value (either case), or -1 (percent escapes, chunk sizes).
using spool::hex_digit;

/// The decoded text, or none when a `%` is not followed by two hex digits.
std::optional<std::string> percent_decode(std::string_view s,
                                          bool plus_is_space = false);

/// A query string's parameters, decoded, in order.
class query_params {
public:
  /// None (with the offending text in `bad`) when a part does not decode.
  static std::optional<query_params> parse(std::string_view query,
                                           std::string* bad = nullptr);

  /// The first value of `key`, or none when absent.
  std::optional<std::string_view> get(std::string_view key) const;

  const std::vector<std::pair<std::string, std::string>>& all() const {
    return params_;
  }

private:
  std::vector<std::pair<std::string, std::string>> params_;
};

/// What `X-Spool-Warning` says of the keys of `q` that are not in `known`:
/// `unknown query key consumer_group (did you mean consumerGroup?)`, one
/// such clause per key, joined by `; ` (five named at most, then `and N
/// more`, the further unknown keys counted).
/// "" when every key is known. A key's bytes outside printable ASCII are
/// percent-encoded and a key is cut at 64 bytes, so the text is always a
/// safe header value.
std::string unknown_keys_warning(const query_params& q,
                                 std::span<const std::string_view> known);

} // namespace spool::http
