#pragma once

/// JSON Web Tokens (RFC 7519) signed with JWS compact serialization: the
/// signature checked with the configured keys, then `exp`, `nbf`, `iss`
/// and `aud`, then the role and the optional `queues` and `groups`
/// restrictions read (docs/security.md, "Tokens"). Time is given, never
/// read: the caller passes `now`.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/keys.hpp"
#include "auth/principal.hpp"

namespace spool::auth {

/// The longest `sub` taken: it is stamped on pushes as `producerSub`,
/// which the store bounds so.
inline constexpr std::size_t max_subject_bytes = 255;

struct token_rules {
  /// The algorithms accepted; empty: those of the configured keys.
  std::vector<algorithm> algorithms;
  std::string issuer;   ///< "": any `iss`
  std::string audience; ///< "": any `aud`
  /// Seconds of clock difference allowed on `exp` and `nbf`.
  std::int64_t clock_skew_s = 30;
  /// Where the role is read: a string claim and an array claim (a dotted
  /// name reaches into objects: `realm_access.roles`); Queen's
  /// JWT_ROLES_CLAIM and JWT_ROLES_ARRAY_CLAIM.
  std::string role_claim = "role";
  std::string roles_claim = "roles";
  /// The claim values that grant each role (JWT_ROLE_ADMIN, …).
  std::string admin_value = "admin";
  std::string read_write_value = "read-write";
  std::string read_only_value = "read-only";
  std::string queues_claim = "queues";
  std::string groups_claim = "groups";
  /// A longer token is refused unread.
  std::size_t max_token_bytes = 16 * 1024;
};

/// Why a token was refused (the audit log says it; the client reads only
/// `client_text`).
enum class refusal : std::uint8_t {
  missing,       ///< no token at all
  malformed,     ///< not three base64url parts of JSON objects
  algorithm,     ///< `alg` none, unknown, not allowed, or `crit` present
  unknown_key,   ///< no configured key serves its `alg` (and `kid`)
  signature,     ///< the signature does not hold
  expired,       ///< past `exp` (and the skew)
  not_yet_valid, ///< before `nbf` (less the skew)
  issuer,        ///< `iss` is not the configured issuer
  audience,      ///< no `aud` is the configured audience
  claims,        ///< a claim of the wrong type
};

std::string_view to_string(refusal r) noexcept;

/// What a client is told, in Queen's words: `Authentication required`
/// (missing), `Token has expired`, else `Invalid token`. Never more: the
/// reason is for the audit log.
std::string_view client_text(refusal r) noexcept;

struct token_check {
  std::optional<principal> who;
  refusal why = refusal::malformed; ///< when `who` is none
  std::string detail;               ///< the audit log's reason
};

/// Verifies `token` (compact JWS, no `Bearer `) at unix time `now`.
token_check verify_token(std::string_view token, const key_set& keys,
                         const token_rules& rules, std::int64_t now);

/// The token of an `Authorization` header's value: after `Bearer ` (in
/// any case), else the whole value, as Queen reads it; "" when empty.
std::string_view bearer_token(std::string_view authorization) noexcept;

} // namespace spool::auth
