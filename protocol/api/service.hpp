#pragma once

/// What the HTTP routes share: the gateway (their only way into the node),
/// the node's readiness, and the request being answered (`call`), with the
/// few helpers every route uses to read its query and answer.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/gateway.hpp"
#include "protocol/api/access.hpp"
#include "protocol/api/scoped.hpp"
#include "protocol/http/message.hpp"
#include "protocol/http/server.hpp"
#include "protocol/http/url.hpp"

namespace spool::api {

/// The node's state as `/health/ready` reports it.
enum class readiness : std::uint8_t { starting, ready, draining };
/// "starting", "ready", "draining".
const char* to_string(readiness st);

class metrics;

struct service {
  std::atomic<readiness> state{readiness::starting};
  metrics* stats = nullptr; ///< none: counters are not kept
  /// The server's parsing limits (413 texts), for the routes' own checks.
  std::size_t max_body_bytes = 64u << 20;
  /// Open connections of the doors, for the metrics (none: not reported).
  std::function<std::size_t()> open_connections;
  /// The data folder, whose files' size the metrics report.
  std::string data_dir;
  /// Tokens on both doors (off: no gate).
  security sec;
  /// The TLS certificates in force and when each expires (unix seconds),
  /// by name ("doors"), for the metrics; none: TLS off.
  std::function<std::vector<std::pair<std::string, std::int64_t>>()>
      certificates;

  explicit service(gateway& g) : gw_(g) {
  }

  /// The node as a request from `who` sees it (`scoped_gateway`): routes
  /// and ops reach the node only through this, so none escapes the
  /// tokens' queues and groups claims. `from`, `door` and `what` name
  /// the request in the audit log.
  scoped_gateway scoped(const std::optional<auth::principal>& who,
                        std::string_view from, std::string_view door,
                        std::string_view what) {
    return scope_for(gw_, names_, sec, who, from, door, what);
  }

private:
  gateway& gw_;
  std::shared_ptr<queue_directory> names_ = std::make_shared<queue_directory>();
};

/// One routed request: the request, its decoded path parameters in route
/// order, its decoded query, and where the answer goes.
struct call {
  http::request req;
  std::vector<std::string> params;
  http::query_params query;
  std::shared_ptr<http::exchange> ex;
  /// Who sent it, when tokens are on and the path is not public.
  std::optional<auth::principal> who;
  /// The node as `who` sees it.
  scoped_gateway gw;
};

using exchange_ptr = std::shared_ptr<http::exchange>;

/// Answers `body` (JSON) with `status`.
void reply_json(http::exchange& ex, int status, std::string body,
                http::header_list extra = {});
/// Answers an API error: its status, `{"error": message}`, `Retry-After`
/// for 429 and 503.
void reply_error(http::exchange& ex, const api_error& e);

/// A query parameter; an empty value is absent (semantics.md §5).
std::optional<std::string> query_str(const call& c, std::string_view key);
/// An integer parameter, or `<key> must be an integer`.
expected<std::optional<std::int64_t>> query_int(const call& c,
                                                std::string_view key);
/// A boolean parameter: `true`/`1` or `false`/`0`, else
/// `<key> must be true or false`.
expected<std::optional<bool>> query_bool(const call& c, std::string_view key);

/// A gateway completion that answers with `encode(reply)` → (status, body)
/// or with the error.
template <class T, class Encode>
gateway::done<T> answer(exchange_ptr ex, Encode encode) {
  return [ex = std::move(ex), encode = std::move(encode)](expected<T> r) {
    if (!r)
      return reply_error(*ex, r.err());
    auto [status, body] = encode(*r);
    reply_json(*ex, status, std::move(body));
  };
}

} // namespace spool::api
