#pragma once

// What the token tests share: a node's secret and its options, tokens
// signed with it, and one HTTP request with a token.

#include <ctime>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "http_fixture.hpp"
#include "process.hpp"
#include "unit/auth/tokens.hpp"

namespace spool::test {

inline const std::string secret = "system-test-secret-of-more-than-32-bytes";

inline std::int64_t unix_now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

/// An HS256 token for `sub` with `role` ("" for none), valid `ttl` s.
inline std::string token(const std::string& role,
                         const std::string& sub = "alice",
                         std::int64_t ttl = 600,
                         const std::string& key = secret,
                         const std::string& extra = "") {
  json claims = {{"sub", sub}, {"exp", unix_now() + ttl}, {"aud", "spool"}};
  if (!role.empty())
    claims["role"] = role;
  auto payload = claims.dump();
  if (!extra.empty())
    payload = payload.substr(0, payload.size() - 1) + "," + extra + "}";
  return sign_hs256(key, R"({"alg":"HS256","typ":"JWT"})", payload);
}

/// A folder holding the secret's file, and the options naming it.
struct keys_dir {
  temp_dir dir;
  std::string secret_file = (dir.path / "secret").string();
  std::string audit_file = (dir.path / "audit.log").string();
  keys_dir() {
    std::ofstream{secret_file} << secret << "\n";
  }
  std::vector<std::string> args(std::vector<std::string> more = {}) const {
    std::vector<std::string> a
        = {"--auth-enabled", "true",  "--jwt-secret-file", secret_file,
           "--jwt-audience", "spool", "--audit-log",       audit_file};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  std::string audit() const {
    std::ifstream in{audit_file};
    return {std::istreambuf_iterator<char>{in}, {}};
  }
};

inline http_response send(spoold_server& s, const std::string& method,
                          const std::string& target, const std::string& tok,
                          const std::string& body = "") {
  http_conn c{s.port()};
  std::string headers
      = tok.empty() ? "" : "Authorization: Bearer " + tok + "\r\n";
  c.send_raw(http_conn::format(
      method, target, body.empty() && method == "POST" ? "{}" : body, headers));
  auto r = c.read_response();
  if (!r)
    throw std::runtime_error("no answer to " + method + " " + target);
  return *r;
}

} // namespace spool::test
