#pragma once

/// The check both doors make (docs/security.md): whether a path is
/// public, and who a token's bearer is. The keys can be replaced while
/// requests are checked (a JWKS or PEM file reloaded): each check reads
/// one whole key set.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "auth/cert_roles.hpp"
#include "auth/jwt.hpp"

namespace spool::auth {

struct gate_settings {
  token_rules rules;
  /// Paths served without a token: exact, or a prefix when the entry ends
  /// in `/` (and is longer than `/`), as Queen's JWT_SKIP_PATHS.
  std::vector<std::string> public_paths{"/health", "/metrics",
                                        "/metrics/prometheus", "/"};
};

class gate {
public:
  gate(gate_settings settings, std::shared_ptr<const key_set> keys);

  bool is_public(std::string_view path) const;

  /// Who bears `token` at unix time `now`.
  token_check check(std::string_view token, std::int64_t now) const;
  /// Who a client is (docs/security.md, "Client certificates as roles"):
  /// a token, when it sends one, decides (its refusal included); without
  /// one, a verified client certificate whose subject `cert_subject` the
  /// table lists gets its role (subject = the certificate's, no expiry);
  /// else `missing`.
  token_check identify(std::string_view token, std::string_view cert_subject,
                       std::int64_t now) const;

  /// The keys from now on (a reload); checks under way finish with the
  /// old ones.
  void replace_keys(std::shared_ptr<const key_set> keys);
  /// The certificate table from now on (none: certificates grant nothing);
  /// counted in `generation` as keys are.
  void replace_cert_roles(std::shared_ptr<const cert_roles> table);
  /// Called when a token names a key none of the keys is (a `kid` a JWKS
  /// refresh may bring); set once, before checks start.
  void on_unknown_key(std::function<void()> hook) {
    unknown_key_ = std::move(hook);
  }
  /// Both at once (a reload): one generation step.
  void replace(std::shared_ptr<const key_set> keys,
               std::shared_ptr<const cert_roles> table);

  const gate_settings& settings() const noexcept {
    return settings_;
  }

  /// Counts the replacements: a session that verified its token under an
  /// older count verifies it again (a removed key ends it).
  std::uint64_t generation() const noexcept {
    return generation_.load();
  }

private:
  gate_settings settings_;
  std::atomic<std::shared_ptr<const key_set>> keys_;
  std::atomic<std::shared_ptr<const cert_roles>> certs_;
  std::function<void()> unknown_key_;
  std::atomic<std::uint64_t> generation_{0};
};

} // namespace spool::auth
