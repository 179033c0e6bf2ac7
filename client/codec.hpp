#pragma once

/// The client's encoding of each op's request (the fields beside `id` and
/// `op`, docs/protocol.md) from the node API's request types, and its
/// decoding of each answer into typed results. Pure functions: the
/// blocking client, the CLI and the benchmarks use them with the
/// asynchronous core.

#include <msgpack.hpp>

#include <optional>
#include <string>
#include <vector>

#include "node/api.hpp"
#include "vocab/expected.hpp"
#include "wire/writer.hpp"

namespace spool::client {

// -- requests -----------------------------------------------------------------

/// Push items with their payloads encoded: a binary payload as bin, a JSON
/// one (its text) as the msgpack value it holds (the server stores it as
/// JSON again, keys in their order). A payload that is not JSON text:
/// `items[<i>].payload is not JSON text`.
struct encoded_items {
  std::vector<node::push_item> items;
  std::vector<std::string> payloads; ///< one msgpack value per item
};
expected<encoded_items> encode_items(std::vector<node::push_item> items);
void write_items(mp::writer& w, const encoded_items& e);

/// `compact`: the answer's compact shape (docs/protocol.md); `read_pop`
/// reads either.
void write_pop(mp::writer& w, const node::pop_request& r, bool compact = true);
void write_ack(mp::writer& w, const node::ack_request& r);
/// The cumulative ack of a pop's answer: one `upTo` item per partition
/// lease, at its highest offset (messages popped with autoAck have no
/// lease and need none: no item).
node::ack_request ack_of(const node::pop_reply& popped);
/// The same acks, one item per message by its transactionId (a server
/// without the `cumulative_ack` feature).
node::ack_request ack_each(const node::pop_reply& popped);
void write_extend(mp::writer& w, const node::extend_request& r);
void write_seek(mp::writer& w, const node::seek_request& r);
void write_subscription(mp::writer& w, const node::subscription_request& r);
void write_configure(mp::writer& w, const node::configure_request& r);
void write_purge(mp::writer& w, const node::purge_request& r);
void write_promote(mp::writer& w, const node::promote_request& r);
void write_groups(mp::writer& w, const node::groups_request& r);
void write_delete_group(mp::writer& w, const node::delete_group_request& r);
void write_dlq_filter(mp::writer& w, const dlq_filter& f);
void write_dlq_query(mp::writer& w, const dlq_query& q);
void write_browse(mp::writer& w, const node::browse_request& r);
/// A transaction (its pushes' payloads encoded as `encode_items` does).
expected<void> write_transaction(mp::writer& w, const node::txn_request& r);

/// A time as the wire writes it (RFC 3339, µs, UTC).
std::string format_time(micros t);

// -- answers ------------------------------------------------------------------

/// A queue as `queues` and `configure` answer it: its options as stored,
/// each named.
struct queue_detail {
  std::string name;
  std::uint64_t id = 0;
  std::string name_space;
  std::string task;
  micros created_at = 0;
  std::vector<node::partition_info> partitions;
  options_patch options;
  /// `configure`: whether it made the queue, and the options it ignored.
  bool created = false;
  std::vector<std::string> warnings;
};

struct health_info {
  std::string status;
  std::string state;
};

using object = msgpack::object;

std::vector<node::push_result> read_push(const object& root);
node::pop_reply read_pop(const object& root);
node::ack_reply read_ack(const object& root);
node::extend_reply read_extend(const object& root);
node::seek_reply read_seek(const object& root);
std::size_t read_subscription(const object& root);
queue_detail read_configure(const object& root);
std::vector<queue_detail> read_queues(const object& root);
bool read_delete_queue(const object& root);
std::size_t read_purge(const object& root);
node::promote_reply read_promote(const object& root);
std::vector<node::cursor_view> read_groups(const object& root);
node::delete_group_reply read_delete_group(const object& root);
node::dlq_page read_dlq(const object& root);
node::dlq_count read_dlq_count(const object& root);
node::browse_reply read_browse(const object& root);
node::txn_reply read_transaction(const object& root);
health_info read_health(const object& root);

/// A wire time (RFC 3339) as µs UTC; 0 for none or unreadable.
micros parse_time(std::string_view text);

} // namespace spool::client
