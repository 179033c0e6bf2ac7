#pragma once

/// The HTTP API: Queen's routes (docs/api.md) matched to their
/// handlers. `handle` is the http::server's handler: it routes, answers
/// CORS preflights and unknown routes, refuses new requests while the node
/// drains, and leaves everything else to the route.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "auth/roles.hpp"
#include "protocol/api/service.hpp"
#include "protocol/http/routes.hpp"

namespace spool::api {

using route_fn = void (*)(service&, call&);

struct route {
  const char* method;
  const char* pattern; ///< `/api/v1/pop/queue/:queue`; `:x` is a parameter
  /// The role it needs when tokens are on (docs/security.md, "Roles"); a
  /// public path (`auth-public-paths`) needs none whatever this says.
  auth::access level;
  route_fn fn;
  /// The query keys the route reads, when an unknown one is worth a
  /// warning (`X-Spool-Warning`, the access log): pops, push and seeks.
  /// None: not checked; empty: every key is unknown.
  std::optional<std::span<const std::string_view>> keys = std::nullopt;
  /// A listing over queues of several slots: a cluster node's answer says
  /// which slots it covered (`X-Spool-Slots`, docs/cluster.md "Serving").
  bool lists = false;
};

/// Each file of routes adds its own.
void add_push_pop_routes(std::vector<route>& table);
void add_ack_routes(std::vector<route>& table);
void add_replay_routes(std::vector<route>& table);
void add_queue_routes(std::vector<route>& table);
void add_message_routes(std::vector<route>& table);
void add_group_routes(std::vector<route>& table);
void add_dlq_routes(std::vector<route>& table);
void add_status_routes(std::vector<route>& table);
void add_ops_routes(std::vector<route>& table);
void add_cluster_routes(std::vector<route>& table);
void add_trace_routes(std::vector<route>& table);
void add_metrics_routes(std::vector<route>& table);

/// Every route, in matching order (the router's table; the role tests
/// walk it, so that no route escapes them).
std::vector<route> all_routes();

class router {
public:
  explicit router(service& svc);

  void handle(http::request req, std::shared_ptr<http::exchange> ex);

  /// Tokens on: a request's head refused before its body is read (the
  /// server's head check, while its connection has not authenticated): a
  /// guarded path without a token that verifies is 401, audited.
  std::optional<http::parse_error>
  check_head(const http::request& head, std::string_view peer,
             std::string_view client_subject) const;

  /// The headers every answer carries (Queen's CORS).
  static http::header_list common_headers();

  /// Every route's pattern, by index (the metrics' labels).
  std::vector<std::string> patterns() const;
  /// Every route (the role tests walk them).
  const std::vector<route>& routes() const noexcept {
    return routes_;
  }

private:
  service& svc_;
  std::vector<http::pattern> patterns_;
  std::vector<route> routes_; ///< by pattern index
};

} // namespace spool::api
