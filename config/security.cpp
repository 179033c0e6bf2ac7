// The security options (config/security.hpp) in the option table.

#include "config/security.hpp"

#include "config/option_table.hpp"

namespace spool::config::detail {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v)
    s += (s.empty() ? "" : ",") + x;
  return s;
}

/// A comma-separated list of paths, each starting with `/`.
std::string parse_paths(const std::string& v, std::vector<std::string>& out) {
  std::vector<std::string> paths;
  std::size_t at = 0;
  while (at <= v.size()) {
    auto comma = v.find(',', at);
    auto item = v.substr(at, comma == std::string::npos ? comma : comma - at);
    while (!item.empty() && item.front() == ' ')
      item.erase(0, 1);
    while (!item.empty() && item.back() == ' ')
      item.pop_back();
    if (!item.empty()) {
      if (item.front() != '/')
        return "auth-public-paths: each path must start with /, got '" + item
               + "'";
      paths.push_back(item);
    }
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  out = std::move(paths);
  return {};
}

} // namespace

std::vector<option> security_options() {
  using o_t = server_options;
  return {
      flag("auth-enabled",
           "require a token (JWT) on both doors, by role (docs/security.md)",
           [](o_t& o) -> bool& { return o.auth.enabled; }),
      {"jwt-algorithm",
       "HS256 | RS256 | EdDSA | auto: the algorithm tokens must use (auto: "
       "any the configured keys serve)",
       [](o_t& o, const std::string& v) -> std::string {
         if (v != "HS256" && v != "RS256" && v != "EdDSA" && v != "auto")
           return "jwt-algorithm must be HS256, RS256, EdDSA or auto, got '" + v
                  + "'";
         o.auth.algorithm = v;
         return {};
       },
       [](const o_t& o) { return o.auth.algorithm; }},
      text(
          "jwt-secret",
          "HS256 secret as text, 32 bytes at least (prefer jwt-secret-file: "
          "arguments and the environment leak)",
          [](o_t& o) -> std::string& { return o.auth.secret; }, true),
      text("jwt-secret-file", "file holding the HS256 secret",
           [](o_t& o) -> std::string& { return o.auth.secret_file; }),
      text("jwt-public-key", "public key(s) in PEM, as text (RS256, EdDSA)",
           [](o_t& o) -> std::string& { return o.auth.public_key; }),
      text("jwt-public-key-file",
           "file of public key(s) or certificates in PEM (RS256, EdDSA); "
           "reloaded on SIGHUP",
           [](o_t& o) -> std::string& { return o.auth.public_key_file; }),
      text("jwt-jwks-file", "file of a JWKS document; reloaded on SIGHUP",
           [](o_t& o) -> std::string& { return o.auth.jwks_file; }),
      text("jwt-jwks-url", "https URL of a JWKS document",
           [](o_t& o) -> std::string& { return o.auth.jwks_url; }),
      num("jwt-jwks-refresh-interval",
          "seconds between fetches of jwt-jwks-url (jwt-jwks-file is read "
          "again on SIGHUP)",
          1, 7 * 86'400,
          [](o_t& o) -> std::uint64_t& { return o.auth.jwks_refresh_s; }),
      num("jwt-jwks-timeout-ms", "a fetch of jwt-jwks-url gives up after this",
          100, 600'000,
          [](o_t& o) -> std::uint64_t& { return o.auth.jwks_timeout_ms; }),
      text("jwt-issuer", "the iss tokens must name (empty: any)",
           [](o_t& o) -> std::string& { return o.auth.issuer; }),
      text("jwt-audience", "the aud tokens must name (empty: any)",
           [](o_t& o) -> std::string& { return o.auth.audience; }),
      num("jwt-clock-skew", "seconds of clock difference allowed on exp, nbf",
          0, 3'600,
          [](o_t& o) -> std::uint64_t& { return o.auth.clock_skew_s; }),
      text("jwt-roles-claim",
           "claim holding the role as a string (a.b reaches into objects)",
           [](o_t& o) -> std::string& { return o.auth.roles_claim; }),
      text("jwt-roles-array-claim", "claim holding the roles as an array",
           [](o_t& o) -> std::string& { return o.auth.roles_array_claim; }),
      text("jwt-role-admin", "the claim value granting admin",
           [](o_t& o) -> std::string& { return o.auth.role_admin; }),
      text("jwt-role-read-write", "the claim value granting read-write",
           [](o_t& o) -> std::string& { return o.auth.role_read_write; }),
      text("jwt-role-read-only", "the claim value granting read-only",
           [](o_t& o) -> std::string& { return o.auth.role_read_only; }),
      text("jwt-queues-claim",
           "claim restricting a token to queues by name prefix",
           [](o_t& o) -> std::string& { return o.auth.queues_claim; }),
      text("jwt-groups-claim",
           "claim restricting a token to consumer groups by name",
           [](o_t& o) -> std::string& { return o.auth.groups_claim; }),
      {"auth-public-paths",
       "paths served without a token, comma-separated (exact, or a prefix "
       "when ending in /)",
       [](o_t& o, const std::string& v) {
         return parse_paths(v, o.auth.public_paths);
       },
       [](const o_t& o) { return join(o.auth.public_paths); }},
      text("auth-cert-roles-file",
           "file of client certificates' roles, '<role> <subject>' per line: "
           "a client with a verified certificate listed there and no token "
           "gets that role (reloaded on SIGHUP)",
           [](o_t& o) -> std::string& { return o.auth.cert_roles_file; }),
      text("audit-log",
           "file of the audit log: auth failures and admin operations "
           "(empty: the server's log)",
           [](o_t& o) -> std::string& { return o.auth.audit_log; }),
      num("auth-timeout-ms",
          "a connection that has not authenticated closes after this", 100,
          600'000,
          [](o_t& o) -> std::uint64_t& { return o.auth.auth_timeout_ms; }),
      text("tls-cert-file",
           "PEM certificate chain (leaf first): both front doors speak TLS "
           "(reloaded on SIGHUP)",
           [](o_t& o) -> std::string& { return o.tls.cert_file; }),
      text("tls-key-file", "PEM private key of tls-cert-file",
           [](o_t& o) -> std::string& { return o.tls.key_file; }),
      text("tls-ca-file",
           "PEM CA bundle clients' certificates must chain to (asked for "
           "when set)",
           [](o_t& o) -> std::string& { return o.tls.ca_file; }),
      flag("tls-require-client-cert",
           "every client must present a certificate of tls-ca-file (mutual "
           "TLS)",
           [](o_t& o) -> bool& { return o.tls.require_client_cert; }),
      num("tls-handshake-timeout-ms",
          "a TLS handshake not done this soon closes its connection", 100,
          600'000,
          [](o_t& o) -> std::uint64_t& { return o.tls.handshake_timeout_ms; }),
      text("encryption-key-file",
           "file of the keys of encryption at rest: one of 64 hex characters "
           "per line, the first encrypts (docs/security.md)",
           [](o_t& o) -> std::string& { return o.encryption.key_file; }),
      text(
          "encryption-key",
          "one key of encryption at rest as 64 hex characters (prefer "
          "encryption-key-file: arguments and the environment leak)",
          [](o_t& o) -> std::string& { return o.encryption.key; }, true),
      num("auth-max-pending-connections",
          "connections not yet authenticated, per door, at most", 1, 1'000'000,
          [](o_t& o) -> std::uint64_t& {
            return o.auth.max_pending_connections;
          }),
  };
}

const std::vector<std::pair<const char*, const char*>>& queen_variables() {
  static const std::vector<std::pair<const char*, const char*>> v = {
      {"JWT_ENABLED", "auth-enabled"},
      {"JWT_ALGORITHM", "jwt-algorithm"},
      {"JWT_SECRET", "jwt-secret"},
      {"JWT_PUBLIC_KEY", "jwt-public-key"},
      {"JWT_JWKS_URL", "jwt-jwks-url"},
      {"JWT_JWKS_REFRESH_INTERVAL", "jwt-jwks-refresh-interval"},
      {"JWT_JWKS_TIMEOUT_MS", "jwt-jwks-timeout-ms"},
      {"JWT_ISSUER", "jwt-issuer"},
      {"JWT_AUDIENCE", "jwt-audience"},
      {"JWT_CLOCK_SKEW", "jwt-clock-skew"},
      {"JWT_SKIP_PATHS", "auth-public-paths"},
      {"JWT_ROLES_CLAIM", "jwt-roles-claim"},
      {"JWT_ROLES_ARRAY_CLAIM", "jwt-roles-array-claim"},
      {"JWT_ROLE_ADMIN", "jwt-role-admin"},
      {"JWT_ROLE_READ_WRITE", "jwt-role-read-write"},
      {"JWT_ROLE_READ_ONLY", "jwt-role-read-only"},
      {"QUEEN_ENCRYPTION_KEY", "encryption-key"},
  };
  return v;
}

std::string check_security(const server_options& o) {
  auto& t = o.tls;
  if (t.enabled() && t.key_file.empty())
    return "tls-cert-file needs tls-key-file";
  if (!t.enabled() && (!t.key_file.empty() || !t.ca_file.empty()))
    return "tls-key-file and tls-ca-file need tls-cert-file";
  if (t.require_client_cert && t.ca_file.empty())
    return "tls-require-client-cert needs tls-ca-file (the CA clients' "
           "certificates must chain to)";
  if (!o.auth.cert_roles_file.empty()) {
    if (!o.auth.enabled)
      return "auth-cert-roles-file needs auth-enabled (without it every "
             "client may do everything)";
    if (t.ca_file.empty())
      return "auth-cert-roles-file needs tls-ca-file: clients' certificates "
             "are asked for, and verified, only with it";
  }
  if (!o.encryption.key.empty() && !o.encryption.key_file.empty())
    return "give encryption-key or encryption-key-file, not both";
  auto& a = o.auth;
  if (!a.secret.empty() && !a.secret_file.empty())
    return "give jwt-secret or jwt-secret-file, not both";
  if (!a.public_key.empty() && !a.public_key_file.empty())
    return "give jwt-public-key or jwt-public-key-file, not both";
  if (!a.jwks_file.empty() && !a.jwks_url.empty())
    return "give jwt-jwks-file or jwt-jwks-url, not both";
  if (!a.jwks_url.empty() && !a.jwks_url.starts_with("https://"))
    return "jwt-jwks-url must be an https:// URL (keys fetched in clear "
           "could be replaced on the way)";
  if (!a.enabled)
    return {};
  bool secret = !a.secret.empty() || !a.secret_file.empty();
  bool pub = !a.public_key.empty() || !a.public_key_file.empty()
             || !a.jwks_file.empty() || !a.jwks_url.empty();
  if (a.algorithm == "HS256" && !secret && a.jwks_file.empty()
      && a.jwks_url.empty() && a.cert_roles_file.empty())
    return "auth-enabled with jwt-algorithm HS256 needs jwt-secret-file (or "
           "jwt-secret, or a JWKS of oct keys)";
  if ((a.algorithm == "RS256" || a.algorithm == "EdDSA") && !pub
      && a.cert_roles_file.empty())
    return "auth-enabled with jwt-algorithm " + a.algorithm
           + " needs jwt-public-key-file, jwt-jwks-file or jwt-jwks-url";
  if (a.algorithm == "auto" && !secret && !pub && a.cert_roles_file.empty())
    return "auth-enabled needs keys: jwt-secret-file, jwt-public-key-file, "
           "jwt-jwks-file or jwt-jwks-url (or auth-cert-roles-file, for "
           "client certificates only)";
  return {};
}

} // namespace spool::config::detail
