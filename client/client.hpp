#pragma once

/// The client library's blocking API: one call per op, each a request on
/// the asynchronous core (client/connection.hpp) waited for, its answer
/// typed (client/codec.hpp) or its error (`api_error`: the server's code
/// and message, or the client's own `unavailable` for a lost connection or
/// a timeout). Thread-safe: threads may call at once; their requests share
/// the one connection, pipelined.
///
/// In a cluster (docs/cluster.md, "Clients"), a request refused with
/// `not_leader` that names the slot's leader is sent again to it, on a
/// connection to that node the client opens and keeps (at most
/// `max_redirects` hops in a row). The client remembers where each queue,
/// and each partition and lease a pop answered, was led last, so the next
/// request about them goes there first; a lost connection to such a node
/// forgets them (the next request starts at the first node again). A
/// leader that does not answer within the connect timeout is not followed
/// (for `backoff_max`): the `not_leader` refusal naming it is the answer.
///
///     spool::client::client c{{.host = "127.0.0.1", .port = 6690}};
///     spool::node::push_item it;
///     it.queue = "orders";
///     it.payload = R"({"id": 42})";
///     auto pushed = c.push({it});                 // expected<vector<…>>
///     spool::node::pop_request p;
///     p.queue = "orders";
///     p.group = "billing";
///     p.wait = true;
///     auto got = c.pop(p);
///     if (got && !got->messages.empty())
///       c.ack_all(*got);                          // one ack per batch

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/codec.hpp"
#include "client/connection.hpp"

namespace spool::client {

class client {
public:
  explicit client(options o = {});

  /// The asynchronous core under this client.
  connection& async() {
    return conn_;
  }

  expected<health_info> health();
  expected<std::vector<node::push_result>>
  push(std::vector<node::push_item> items);
  /// A pop; with `wait` the call lasts up to the pop's timeout (the
  /// request's deadline is that plus `request_timeout`).
  expected<node::pop_reply> pop(const node::pop_request& req);
  expected<node::ack_reply> ack(const node::ack_request& req);
  /// Acks every message of a pop's answer as completed, in one request of
  /// one cumulative item per partition lease (`ack_of`): the reply has one
  /// item per partition of the answer (none for an autoAck pop). A server
  /// without the `cumulative_ack` feature gets one item per message.
  expected<node::ack_reply> ack_all(const node::pop_reply& popped);
  /// The request `ack_all` sends.
  node::ack_request ack_request_for(const node::pop_reply& popped) const;
  expected<node::extend_reply> extend(const node::extend_request& req);
  expected<node::seek_reply> seek(const node::seek_request& req);
  expected<std::size_t> subscription(const node::subscription_request& req);
  expected<queue_detail> configure(const node::configure_request& req);
  /// Every queue, or the one named (unknown: `not_found`).
  expected<std::vector<queue_detail>>
  queues(const std::optional<std::string>& name = {});
  expected<bool> delete_queue(const std::string& name);
  expected<std::size_t> purge(const node::purge_request& req);
  expected<std::vector<node::cursor_view>>
  groups(const node::groups_request& req);
  expected<node::delete_group_reply>
  delete_group(const node::delete_group_request& req);
  expected<node::dlq_page> dlq(const dlq_query& q);
  expected<node::dlq_count> dlq_requeue(const dlq_filter& f);
  expected<node::dlq_count> dlq_delete(const dlq_filter& f);
  expected<node::browse_reply> browse(const node::browse_request& req);
  /// The operator's promote (cluster mode): each slot's new leader and
  /// epoch, or its error; one slot's failure is the error.
  expected<node::promote_reply> promote(const node::promote_request& req);
  /// A rolled-back transaction is the error `tx_aborted`.
  expected<node::txn_reply> transaction(const node::txn_request& req);

  /// The nodes this client has connections to besides the first one (led
  /// there by `not_leader`), as host:port.
  std::vector<std::string> followed() const;

private:
  /// Sends `op` to where `route` (a queue, partition id or lease; "": none)
  /// was led last, follows `not_leader`, waits, and reads the answer with
  /// `read`. `via`: where it was answered ("": the first node).
  template <class Read>
  auto call(std::string_view op, const fields_fn& fields, Read read,
            std::optional<std::chrono::milliseconds> timeout = {},
            std::string_view route = {}, std::string* via = nullptr)
      -> expected<decltype(read(std::declval<const object&>()))>;
  /// The connection to `address` ("": the first node), opened if new.
  connection& to(const std::string& address);
  /// Where `route` was led last ("": the first node, or not known).
  std::string led(std::string_view route) const;
  void learn(std::string_view route, const std::string& address);
  /// Whether node `address` answers (a `health` within the connect
  /// timeout, unless it is up); one that did not is not tried again for
  /// `backoff_max`.
  bool reachable(const std::string& address);
  void forget(const std::string& address);

  options opt_;
  connection conn_;
  mutable std::mutex mx_;
  /// Other nodes' connections, by address (never removed while the client
  /// lives: a caller may be waiting on one).
  std::map<std::string, std::unique_ptr<connection>> others_;
  /// Queue, partition id or lease → the address that led it last.
  std::unordered_map<std::string, std::string> routes_;
  /// Nodes that did not answer, until when they are not tried.
  std::map<std::string, std::chrono::steady_clock::time_point> unreachable_;
};

} // namespace spool::client
