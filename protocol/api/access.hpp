#pragma once

/// Tokens at the doors (docs/security.md): who a request's token names
/// (401 when none verifies), whether that role may use the route or op
/// (403), and the audit log's line for each refusal and each admin
/// operation. Both doors call these; the levels are in their tables
/// (router.cpp's routes, mp_ops.cpp's ops).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "auth/gate.hpp"
#include "node/api.hpp"
#include "vocab/expected.hpp"

namespace spool::api {

/// One line of the audit log: who (the token's subject, `-` when there is
/// none), from where, through which door, what, and the outcome.
struct audit_entry {
  std::string_view who;
  std::string_view role;
  std::string_view from;
  std::string_view door;    ///< "http", "msgpack"
  std::string_view what;    ///< "DELETE /api/v1/dlq", "op delete_queue"
  std::string_view outcome; ///< "401 expired", "403 forbidden", "200"
};

/// What the doors share for tokens. No gate: auth is off, and every
/// request passes.
struct security {
  const auth::gate* gate = nullptr;
  /// Writes one audit line (none: not written).
  std::function<void(const audit_entry&)> audit;
  /// Unix seconds now (tests set it).
  std::function<std::int64_t()> now;

  bool enabled() const noexcept {
    return gate != nullptr;
  }
  std::int64_t seconds() const;
  void write(const audit_entry& e) const {
    if (audit)
      audit(e);
  }
};

/// Who the client is (`auth::gate::identify`: its token, else its
/// verified certificate's subject through the certificate table): the
/// principal, or 401 with Queen's text (the reason goes to the audit log,
/// with `from`, `door` and `what`).
expected<auth::principal>
authenticate(const security& sec, std::string_view token,
             std::string_view cert_subject, std::string_view from,
             std::string_view door, std::string_view what);

/// `who` may use what needs `level`; else 403 `Insufficient permissions`
/// (audited). Its `queues` and `groups` claims are the scoped gateway's
/// (protocol/api/scoped.hpp).
std::optional<api_error>
authorize(const security& sec, const auth::principal& who, auth::access level,
          std::string_view from, std::string_view door, std::string_view what);

/// Stamps the token's subject on every item as its `producerSub` (Queen's
/// feature A; a client never sets it: the readers ignore the field).
/// Without a token, or one without `sub`, nothing is stamped.
void stamp_producer(const std::optional<auth::principal>& who,
                    std::vector<node::push_item>& items);
void stamp_producer(const std::optional<auth::principal>& who,
                    node::txn_request& req);

} // namespace spool::api
