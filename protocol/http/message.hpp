#pragma once

/// An HTTP/1.1 request as the parser hands it over and the response a
/// handler gives back. Plain data: no Asio, no parser types.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spool::http {

using header_list = std::vector<std::pair<std::string, std::string>>;

struct request {
  std::string method; ///< "GET", "POST", … as sent
  std::string target; ///< the request target as sent (path and query)
  std::string path;   ///< the target's path, not decoded
  std::string query;  ///< after the `?`, not decoded ("" when none)
  header_list headers;
  /// The body (chunked bodies joined). Its capacity keeps at least
  /// `body_padding` bytes beyond its size, so that simdjson reads it in
  /// place.
  std::string body;
  bool keep_alive = true;
  /// The client's address, host:port (the audit log).
  std::string peer;
  /// The subject of the client's verified TLS certificate, RFC 2253
  /// (`CN=ops,O=acme`); "" when it sent none (docs/security.md, "Client
  /// certificates as roles").
  std::string client_subject;

  /// The first header of that name (ASCII case-insensitive), or "".
  std::string_view header(std::string_view name) const;
};

/// Bytes kept free after a body (simdjson's SIMDJSON_PADDING is 64).
inline constexpr std::size_t body_padding = 64;

struct response {
  int status = 200;
  header_list headers;
  std::string body;
  /// Set by a handler whose answer carries a lease: the server calls it
  /// (on its io thread) when the response could not be written because
  /// the connection is gone, so that the lease ends at once.
  std::function<void()> on_unwritten;
  /// A remark for the access log (an unknown query key), "" for none.
  std::string log_note;
};

/// Why the bytes cannot be a request: the status to answer before closing
/// the connection (400, 413, 431, 501) and the `error` text.
struct parse_error {
  int status = 400;
  std::string message;
};

/// The reason phrase of a status code ("OK", "Not Found", …).
std::string_view reason_phrase(int status) noexcept;

} // namespace spool::http
