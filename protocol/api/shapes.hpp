#pragma once

/// The answers of the operations both doors serve, written once through
/// `W` (`json::writer` for HTTP, `mp::writer` for msgpack; instantiated for
/// both in shapes.cpp). A `*_fields` writer fills an object its caller
/// opened (the HTTP body, or the msgpack reply beside `id` and `ok`); a
/// `*_items` writer writes an array (HTTP's top-level array, msgpack's
/// `items`). The fields are Queen's with Spool's additions (api.md).

#include <optional>
#include <string>
#include <vector>

#include "node/api.hpp"
#include "vocab/queries.hpp"
#include "wire/writer.hpp"

namespace spool::api {

/// `push`: one item per pushed message, in input order.
template <class W>
void write_push_items(W& w, const node::push_reply& r);

/// `pop` with messages (an empty pop is the door's own answer).
template <class W>
void write_pop_fields(W& w, const node::pop_reply& r);
/// msgpack `pop` with `compact: true` (docs/protocol.md): the fields a
/// partition's messages share once per partition, under `partitions`, and
/// each message's own fields only.
void write_pop_compact(mp::writer& w, const node::pop_reply& r);

/// `ack`: one item per ack; `txids` echoes each ack's transactionId.
template <class W>
void write_ack_items(W& w, const node::ack_reply& r,
                     const std::vector<std::string>& txids);
/// The transactionIds an ack request names, for `write_ack_items`.
std::vector<std::string> ack_txids(const node::ack_request& req);

/// `extend` of lease `id`: one item.
template <class W>
void write_extend_items(W& w, const std::string& id,
                        const node::extend_reply& r);

/// What a transaction's answer echoes of each operation: its type and, for
/// an ack, the transactionId it named.
struct op_echo {
  bool push = false;
  std::string transaction_id;
};
std::vector<op_echo> txn_echo(const node::txn_request& req);
template <class W>
void write_txn_fields(W& w, const node::txn_reply& r,
                      const std::vector<op_echo>& ops);

/// `seek`: Queen's fields for a queue seek or a partition seek (`req`
/// names the partition), and Spool's `dryRun` and `positions`.
template <class W>
void write_seek_fields(W& w, const node::seek_request& req,
                       const node::seek_reply& r);

template <class W>
void write_subscription_fields(W& w, const node::subscription_request& req,
                               const node::subscription_reply& r);

/// `configure`: the queue as stored; `unknown`: options ignored.
template <class W>
void write_configure_fields(W& w, const node::configure_reply& r,
                            const std::vector<std::string>& unknown);

/// A queue in the listing (`/resources/queues`).
template <class W>
void write_queue_summary_fields(W& w, const node::queue_info& q);
/// A queue's detail: partitions with offsets, totals, options.
template <class W>
void write_queue_detail_fields(W& w, const node::queue_info& q);

template <class W>
void write_delete_queue_fields(W& w, const std::string& name, bool existed);
/// An operator's promote: per slot its new leader and epoch, or its error.
template <class W>
void write_promote_fields(W& w, const node::promote_reply& r);
template <class W>
void write_purge_fields(W& w, const std::string& name, std::size_t purged);

template <class W>
void write_browse_fields(W& w, const node::browse_reply& r);

/// Seconds the oldest undelivered frame has waited (0 without lag).
std::int64_t time_lag_s(const node::cursor_view& v, micros now);
/// `k`: the time in the wire's format, or null for none (0).
template <class W>
void time_or_null(W& w, std::string_view k, micros t);

/// One group's position on one partition (`/consumer-groups/:group`'s
/// partition entries), `now` for the ages.
template <class W>
void write_cursor_fields(W& w, const node::cursor_view& v, micros now);

template <class W>
void write_delete_group_fields(W& w, const node::delete_group_request& req,
                               const node::delete_group_reply& r);

/// A DLQ page as `/dlq` lists it, with the query's paging echoed.
template <class W>
void write_dlq_page_fields(W& w, const node::dlq_page& p, const dlq_query& q);
/// A requeue or a delete: `what` is "requeued" or "deleted".
template <class W>
void write_dlq_count_fields(W& w, const char* what, const node::dlq_count& n);

} // namespace spool::api
