#pragma once

/// Route patterns and matching, as pure functions (the router uses them,
/// the fuzz target drives them): `/api/v1/pop/queue/:queue` has a
/// parameter; a last segment `*` matches the rest of the path. Parameters
/// are percent-decoded.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spool::http {

struct pattern {
  std::string label; ///< "GET /api/v1/pop/queue/:queue"
  std::string method;
  std::vector<std::string> segments;
};

pattern compile(std::string_view method, std::string_view path_pattern);

struct route_match {
  std::size_t index = 0; ///< of the pattern
  std::vector<std::string> params;
  /// A parameter with a `%` not followed by two hex digits.
  bool bad_escape = false;
};

/// The first pattern of `method` that `path` matches.
std::optional<route_match> match(const std::vector<pattern>& patterns,
                                 std::string_view method,
                                 std::string_view path);

} // namespace spool::http
