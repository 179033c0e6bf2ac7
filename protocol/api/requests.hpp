#pragma once

/// Reading the API's requests: a body's JSON or a query into the node API's
/// request, or the precise 400 (api.md's texts: `Empty request body`,
/// `Invalid JSON: …`, `<field> must be …`, `<field> is required`). Pure
/// functions of their input, no gateway: the fuzz targets call them as the
/// routes do. Names are checked by the node (semantics.md §1).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "node/api.hpp"
#include "protocol/api/service.hpp"
#include "protocol/msgpack/read.hpp"

namespace spool::api {

/// `{items: [...]}` → the push's items (an empty list is valid).
expected<std::vector<node::push_item>> read_push_body(std::string& body);

/// The pop query (`batch`, `partitions` on a wildcard pop, `wait`,
/// `timeout`, `consumerGroup`, `autoAck`, `subscriptionMode`,
/// `subscriptionFrom`, `maxBytes`); the queue and partition are the
/// route's.
/// A page's `limit` (1..`max`, absent: `dflt`; else `limit must be
/// 1..<max>`) and `offset` (>= 0, absent: 0; else `offset must be
/// non-negative`), as (limit, offset).
expected<std::pair<std::size_t, std::size_t>>
read_page_query(const call& c, std::size_t dflt, std::size_t max);

expected<node::pop_request> read_pop_query(const call& c, bool wildcard);
/// The query keys `read_pop_query` reads, then the two the namespace pop
/// reads beside them: what the pop routes know (`X-Spool-Warning` names
/// any other key). The partition route takes `partitions` and ignores it,
/// as Queen does.
inline constexpr std::string_view pop_query_keys[] = {"batch",
                                                      "partitions",
                                                      "wait",
                                                      "timeout",
                                                      "autoAck",
                                                      "maxBytes",
                                                      "consumerGroup",
                                                      "subscriptionMode",
                                                      "subscriptionFrom",
                                                      "namespace",
                                                      "task"};

/// `/ack`: one ack (`consumerGroup` per item).
expected<node::ack_request> read_ack_body(std::string& body);
/// `/ack/batch`: `{consumerGroup?, acknowledgments: [...]}`.
expected<node::ack_request> read_ack_batch_body(std::string& body);

/// `/transaction`.
expected<node::txn_request> read_txn_body(std::string& body);

/// A seek's body; `empty_is_to_end` for the per-partition route.
expected<seek_target> read_seek_body(std::string& body, bool empty_is_to_end);

/// `{subscriptionTimestamp}` → µs UTC.
expected<micros> read_subscription_body(std::string& body);

/// `/configure`: the request and the option names it does not know (they
/// are ignored and listed in `warnings`).
struct configure_body {
  node::configure_request req;
  std::vector<std::string> unknown_options;
};
expected<configure_body> read_configure_body(std::string& body);

/// `/lease/:id/extend`: `{seconds?}` (an empty body: the default 60 s).
expected<milliseconds> read_extend_body(std::string& body);

/// `/dlq/requeue`: `{ids: [...]}` or the filters `queue`, `consumerGroup`,
/// `partition`, `from`, `to`.
expected<dlq_filter> read_dlq_filter_body(std::string& body);

/// The DLQ filters of a query (`queue`, `consumerGroup`, `partition`,
/// `from`, `to`).
expected<dlq_filter> read_dlq_filter_query(const call& c);

/// POST /api/v1/traces: transactionId and partitionId (400 `transactionId
/// and partitionId are required`), data (any JSON, kept as its text; 400
/// `data is required`), eventType ("info"), consumerGroup (queue mode),
/// workerId, traceNames (a string or an array of strings).
expected<node::trace_request> read_trace_body(std::string& body);

// The same bodies as msgpack request maps (the msgpack door: a request's
// fields beside its `id` and `op`, read by the same rules, with the same
// texts; protocol/msgpack/read.hpp).

expected<std::vector<node::push_item>> read_push_body(const mp::object& req);
expected<node::ack_request> read_ack_batch_body(const mp::object& req);
expected<node::txn_request> read_txn_body(const mp::object& req);
/// Without a target: `Must specify toEnd=true or a timestamp`.
expected<seek_target> read_seek_body(const mp::object& req);
expected<micros> read_subscription_body(const mp::object& req);
expected<configure_body> read_configure_body(const mp::object& req);
/// Without `seconds`: 60 s.
expected<milliseconds> read_extend_body(const mp::object& req);
expected<dlq_filter> read_dlq_filter_body(const mp::object& req);

} // namespace spool::api
