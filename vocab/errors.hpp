#pragma once

/// The errors of the API (the table of api.md) and the one place where they
/// map to the wire: an HTTP status and a msgpack `code`. Components keep
/// their own error enums (`storage::ec`); the node API answers with these.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spool {

/// Request-level failures of the API. Stable numbers; never renumber.
enum class errc : std::uint8_t {
  bad_request = 1, ///< empty body, unparsable JSON (400)
  invalid_argument
  = 2,              ///< a field missing, of the wrong type, out of range (400)
  too_large = 3,    ///< a body or payload over its limit (413)
  not_found = 4,    ///< an unknown queue, partition, DLQ entry (404)
  unknown_op = 5,   ///< an unknown route or op (404)
  tx_aborted = 6,   ///< a transaction rolled back (200, success:false)
  queue_full = 7,   ///< a queue's maxSize refuses the push (429)
  unavailable = 8,  ///< a server-wide cap, a restart, shutting down (503)
  storage_full = 9, ///< the map cannot grow (507)
  internal = 10,    ///< anything else (500; details in the log)
  /// Cluster: this node does not lead the request's slot (421, with the
  /// leader named in the message).
  not_leader = 11,
  /// Cluster: one request needs several slots atomically (409).
  cross_slot = 12,
  /// No token, or one that does not verify or has expired (401;
  /// docs/security.md).
  unauthenticated = 13,
  /// A valid token without the role, or the queue or group, the request
  /// needs (403).
  forbidden = 14,
};

/// The highest `errc` (for loops over every code).
inline constexpr errc last_errc = errc::forbidden;

/// How an error travels: the HTTP status and the msgpack `code`.
struct wire_code {
  int http_status = 500;
  std::string_view msgpack_code;
  /// 429 and 503 tell the client to come back (`Retry-After`).
  bool retry_after = false;
};

wire_code wire_of(errc code) noexcept;

/// The msgpack code's text ("invalid_argument", …); the enum's name.
std::string_view to_string(errc code) noexcept;

/// Where a request refused with `not_leader` belongs (api.md): its slot,
/// the epoch this node knows, and that slot's leader with the addresses
/// its clients reach it on ("" while this node has not heard them).
struct leader_ref {
  std::uint32_t slot = 0;
  std::uint64_t epoch = 0;
  std::string node;    ///< the leader's `--peers` name
  std::string http;    ///< host:port of its HTTP door (`X-Spool-Leader`)
  std::string msgpack; ///< host:port of its msgpack door
  friend bool operator==(const leader_ref&, const leader_ref&) = default;
};

/// An API error: a code and the message the client reads (api.md's
/// `error`, e.g. "batch must be 1..10000").
struct api_error {
  errc code = errc::internal;
  std::string message;
  /// `not_leader`: where to go instead (none: no leader is known).
  std::optional<leader_ref> leader{};

  friend bool operator==(const api_error&, const api_error&) = default;
};

/// "<code>: <message>", for logs.
std::string to_string(const api_error& err);

} // namespace spool
