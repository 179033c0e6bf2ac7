#pragma once

/// Who a request comes from once its token (or client certificate) is
/// verified: a name, a role, when that proof ends, and what it may touch
/// (docs/security.md, "Tokens").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/roles.hpp"

namespace spool::auth {

struct principal {
  /// The token's `sub` (stamped on pushes as `producerSub`), or the
  /// certificate's subject; "" when the token has none.
  std::string subject;
  role granted = role::none;
  /// Unix seconds past which it no longer holds (the token's `exp`); 0:
  /// never (a certificate, a token without `exp` when that is allowed).
  std::int64_t expires = 0;
  /// The `queues` claim: names the queues it may use by prefix; none:
  /// every queue.
  std::optional<std::vector<std::string>> queue_prefixes;
  /// The `groups` claim: the consumer groups it may use by name; none:
  /// every group.
  std::optional<std::vector<std::string>> groups;

  /// It may use queue `name`.
  bool may_use_queue(std::string_view name) const;
  /// It may use consumer group `name`.
  bool may_use_group(std::string_view name) const;
  /// It still holds at `now` (unix seconds), allowing `skew` seconds.
  bool holds_at(std::int64_t now, std::int64_t skew) const noexcept {
    return expires == 0 || now < expires + skew;
  }
  /// Neither claim restricts it.
  bool unrestricted() const noexcept {
    return !queue_prefixes && !groups;
  }
};

} // namespace spool::auth
