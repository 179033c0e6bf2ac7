#pragma once

/// Security options (docs/security.md): tokens on both doors, the audit
/// log, the bounds on connections that have not authenticated. Queen's
/// JWT_* variables are read too, below Spool's own.

#include <cstdint>
#include <string>
#include <vector>

namespace spool::config {

struct auth_settings {
  /// Tokens required on both doors (--auth-enabled, Queen's JWT_ENABLED).
  bool enabled = false;
  /// HS256 | RS256 | EdDSA | auto: the one algorithm tokens must use, or
  /// any the keys serve (--jwt-algorithm, JWT_ALGORITHM).
  std::string algorithm = "HS256";
  /// HS256's shared secret, as text (--jwt-secret, JWT_SECRET; leaks
  /// through arguments and the environment: prefer the file).
  std::string secret;
  std::string secret_file; ///< --jwt-secret-file
  /// Public keys in PEM, as text (JWT_PUBLIC_KEY) or a file.
  std::string public_key;
  std::string public_key_file; ///< --jwt-public-key-file
  /// A JWKS document: a file, or an https URL fetched at start and every
  /// `jwks_refresh_s`.
  std::string jwks_file;
  std::string jwks_url;
  std::uint64_t jwks_refresh_s = 3'600;
  std::uint64_t jwks_timeout_ms = 5'000;
  std::string issuer;   ///< "" any
  std::string audience; ///< "" any
  std::uint64_t clock_skew_s = 30;
  std::string roles_claim = "role";        ///< JWT_ROLES_CLAIM
  std::string roles_array_claim = "roles"; ///< JWT_ROLES_ARRAY_CLAIM
  std::string role_admin = "admin";
  std::string role_read_write = "read-write";
  std::string role_read_only = "read-only";
  std::string queues_claim = "queues";
  std::string groups_claim = "groups";
  /// Paths served without a token (JWT_SKIP_PATHS).
  std::vector<std::string> public_paths{"/health", "/metrics",
                                        "/metrics/prometheus", "/"};
  /// The audit log's file; "": the server's own log (--audit-log).
  std::string audit_log;
  /// The table of client certificates' roles: `<role> <subject>` per line
  /// (--auth-cert-roles-file; docs/security.md, "Client certificates as
  /// roles"); reloaded on SIGHUP.
  std::string cert_roles_file;
  /// A connection that has not authenticated is closed after this
  /// (--auth-timeout-ms).
  std::uint64_t auth_timeout_ms = 10'000;
  /// Connections that have not authenticated, per door, at most
  /// (--auth-max-pending-connections).
  std::uint64_t max_pending_connections = 256;
};

/// TLS on both front doors (docs/security.md, "TLS"): on when a
/// certificate is given.
struct tls_settings {
  std::string cert_file; ///< --tls-cert-file: PEM chain, leaf first
  std::string key_file;  ///< --tls-key-file
  /// --tls-ca-file: clients' certificates must chain to it (asked for when
  /// set; required with `require_client_cert`).
  std::string ca_file;
  bool require_client_cert = false; ///< --tls-require-client-cert
  /// A handshake not done this soon closes its connection
  /// (--tls-handshake-timeout-ms).
  std::uint64_t handshake_timeout_ms = 10'000;

  bool enabled() const noexcept {
    return !cert_file.empty();
  }
};

/// Encryption at rest (docs/security.md, "Encryption at rest"): the keys a
/// queue with `encryptionEnabled` has its payloads encrypted with.
struct encryption_settings {
  /// --encryption-key-file: one key of 64 hex characters per line, the
  /// first encrypts, the others decrypt what they encrypted (rotation).
  std::string key_file;
  /// One key as 64 hex characters (--encryption-key, SPOOL_ENCRYPTION_KEY,
  /// Queen's QUEEN_ENCRYPTION_KEY; leaks through arguments and the
  /// environment: prefer the file).
  std::string key;
  bool enabled() const noexcept {
    return !key_file.empty() || !key.empty();
  }
};

} // namespace spool::config
