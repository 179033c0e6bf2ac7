#pragma once

/// The node API: every request a front door makes of a Spool node, and its
/// answer, in the wire's identities (../shared/spec/api.md): partitions by
/// uuid (`partitionId`), frames by transactionId, leases by id, times as
/// wall-clock µs. Plain structs over the vocabulary only (no CAF, no
/// storage, no core): what the gateway takes and gives, and what the
/// protocol layer encodes. A failed request comes back as an `api_error`
/// (vocab/errors.hpp: its HTTP status and msgpack code); per-item outcomes
/// (ack, extend, transaction ops) are in the answer.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "vocab/delivery.hpp"
#include "vocab/errors.hpp"
#include "vocab/ids.hpp"
#include "vocab/options.hpp"
#include "vocab/queries.hpp"
#include "vocab/time.hpp"

namespace spool::node {

using header = std::pair<std::string, std::string>;

/// The partition a request names none of (api.md `partition?="Default"`).
inline constexpr const char* default_partition = "Default";

// -- push ---------------------------------------------------------------------

struct push_item {
  std::string queue;
  std::string partition = default_partition;
  /// The JSON text as it arrived, or bytes (`binary`).
  std::string payload;
  bool binary = false;
  /// Client-given (deduplicated per partition); none: the node makes one.
  std::optional<std::string> transaction_id;
  std::string trace_id;
  std::vector<header> headers;
  std::string producer_sub;
};

struct push_request {
  std::vector<push_item> items;
};

enum class push_status : std::uint8_t { queued, duplicate };

/// One item's outcome: where it is (its original's offset for a duplicate).
struct push_result {
  std::string queue;
  std::string partition;
  std::string partition_id; ///< the partition's uuid
  std::string transaction_id;
  std::string trace_id;
  push_status status = push_status::queued;
  std::int64_t offset = 0;
};

struct push_reply {
  std::vector<push_result> items; ///< in input order
  micros created_at = 0;
};

// -- pop ----------------------------------------------------------------------

/// A pop of one queue (a named partition or any), or across the queues of
/// a namespace (and task) when `name_space` is set and `queue` empty.
struct pop_request {
  /// The caller's token for this request: `cancel(token)` drops it while
  /// parked; the lease it takes is the token behind its queue's id
  /// (`lease_id_of`). Unique per pop.
  std::string token;
  std::string queue;
  std::optional<std::string> partition;
  std::optional<std::string> name_space;
  std::optional<std::string> task;
  std::optional<std::string> group; ///< none: queue mode
  std::size_t batch = 1;
  std::size_t partitions = 1; ///< wildcard: partitions to claim at most
  std::optional<std::size_t> max_bytes;
  bool auto_ack = false;
  bool wait = false;
  milliseconds timeout{30'000};
  /// The group's first pop on the queue: where it starts (semantics.md §5).
  std::string subscription_mode;
  std::string subscription_from;
  /// A namespace pop serves only the queues whose names start with one of
  /// these (a token's `queues` claim, docs/security.md); none: all.
  std::optional<std::vector<std::string>> queue_prefixes = {};
};

/// A message as a pop or a browse delivers it.
struct message {
  std::string queue;
  std::string partition;
  std::string partition_id;
  std::int64_t offset = 0;
  std::string transaction_id;
  std::string trace_id;
  std::vector<header> headers;
  std::string producer_sub;
  std::string payload;
  bool binary = false;
  /// Stored encrypted at rest (`payload` is the decrypted text).
  bool encrypted = false;
  /// A listing's entry whose encrypted payload cannot be given (its key
  /// is not configured, its bytes fail their check): why; `payload` is
  /// then empty (`data` null, `dataError` says why). Never in a pop.
  std::string unreadable;
  micros created_at = 0;
  std::uint32_t delivery_count = 0;
  /// A requeued dead letter: its DLQ id.
  std::optional<std::uint64_t> requeued;
  /// The lease it is delivered under ("" and 0 with autoAck or a browse).
  std::string lease_id;
  std::uint64_t lease_epoch = 0;
  micros lease_expires_at = 0;
};

/// Offsets of a partition retention deleted under the group's position.
struct skipped_range {
  std::string partition;
  std::int64_t first = 0;
  std::int64_t last = 0;
};

struct pop_reply {
  std::string queue; ///< the queue served (namespace pops: the one chosen)
  std::string group;
  std::vector<message> messages;
  std::size_t partitions_claimed = 0;
  /// Why `messages` is empty (`X-Spool-Empty`).
  empty_reason reason = empty_reason::empty;
  std::vector<skipped_range> skipped;
};

// -- ack, extend, release -----------------------------------------------------

/// One ack as the wire names it: the partition by uuid, the frame by
/// transactionId (or, Spool's addition, by offset).
struct ack_item {
  std::string partition_id;
  std::optional<std::string> transaction_id;
  std::optional<std::int64_t> offset;
  /// A cumulative ack (`upTo`): the lease's frames at or below it, all
  /// completed, in place of one frame; needs `lease_id`.
  std::optional<std::int64_t> up_to;
  ack_status status = ack_status::completed;
  std::optional<std::string> group; ///< per item; the request's wins
  std::optional<std::string> lease_id;
  std::optional<std::uint64_t> lease_epoch;
  std::string error; ///< failure text (failed, dlq)
  std::optional<milliseconds> delay;
};

struct ack_request {
  /// The body-level group (`/ack/batch`): wins over the items'; none and
  /// no item group: queue mode.
  std::optional<std::string> group;
  std::vector<ack_item> items; ///< across any partitions and queues
};

struct ack_result {
  bool success = false;
  std::string error; ///< api.md's item error ("" on success)
  std::string queue; ///< "" for an unknown partition id
  std::string partition;
  bool lease_released = false;
  bool dead_lettered = false;
};

struct ack_reply {
  std::vector<ack_result> items; ///< in input order
};

struct extend_request {
  std::string lease_id;
  milliseconds by{60'000};
};

struct extend_reply {
  bool success = false;
  std::string error; ///< `Lease not found`, `Lease already expired`, …
  /// The earliest expiry among the lease's partitions after the extend.
  micros expires_at = 0;
  std::vector<std::string> partitions; ///< the partitions extended
};

// -- seek, subscription -------------------------------------------------------

struct seek_request {
  std::string group;
  std::string queue;
  std::optional<std::string> partition; ///< none: every partition
  seek_target target;
  bool dry_run = false;
};

struct seek_position {
  std::string partition;
  std::optional<std::int64_t> before; ///< none: no cursor there yet
  std::int64_t after = -1;
};

struct seek_reply {
  std::size_t partitions_updated = 0;
  std::vector<seek_position> positions;
};

struct subscription_request {
  std::string group;
  micros timestamp = 0;
};

struct subscription_reply {
  std::size_t rows_updated = 0;
};

// -- queues -------------------------------------------------------------------

struct configure_request {
  std::string queue;
  std::optional<std::string> name_space;
  std::optional<std::string> task;
  options_patch options;
};

struct partition_info {
  std::string name;
  std::string id; ///< uuid
  std::int64_t last_offset = -1;
  std::int64_t watermark = 0;
  micros created_at = 0;
};

struct queue_info {
  std::string name;
  std::uint64_t id = 0;
  std::string name_space;
  std::string task;
  queue_options options;
  micros created_at = 0;
  std::vector<partition_info> partitions; ///< in creation order
};

struct configure_reply {
  queue_info queue; ///< options as stored; partitions not listed
  std::string default_partition_id;
  bool created = false;
};

struct purge_request {
  std::string queue;
  std::optional<std::string> partition;
  std::optional<std::int64_t> below; ///< none: everything
};

struct browse_request {
  std::string queue;
  std::string partition = default_partition;
  std::int64_t from = 0;
  std::size_t limit = 100;
  std::optional<std::size_t> max_bytes;
};

struct browse_reply {
  std::vector<message> messages;
  std::int64_t next = 0;
  std::optional<skipped_range> skipped;
};

/// The node's own counters, since it started (metrics); each counts what
/// was made durable.
struct node_counters {
  std::uint64_t messages_acked = 0;       ///< made done by acks
  std::uint64_t dead_letters_expired = 0; ///< DLQ entries past retention
  std::uint64_t retention_deleted = 0;    ///< frames retention deleted
  std::uint64_t actor_restarts = 0;       ///< actors restarted (a bug)
  /// Partitions in the loaded queues, and those with a live actor.
  std::int64_t partitions_loaded = 0;
  std::int64_t partition_actors = 0;
  std::uint64_t pops_parked = 0; ///< long polls parked now
};

/// The store's space: its LMDB map (metrics).
struct storage_usage {
  std::uint64_t map_bytes = 0;     ///< the map's size now (it grows)
  std::uint64_t used_bytes = 0;    ///< pages in use, up to the last one
  std::uint64_t max_map_bytes = 0; ///< the size it may grow to
};

// -- cluster
// -------------------------------------------------------------------

/// The operator's promote (`spool cluster promote`, docs/cluster.md,
/// "Failover"): an election for one slot, or for every slot this node
/// holds a replica of.
struct promote_request {
  std::optional<std::int64_t> slot; ///< exactly one of `slot` and `all`
  bool all = false;                 ///< every slot held here
  /// The node to lead (its `--peers` name): only if it holds the longest
  /// log of the majority fenced; none: whoever does.
  std::optional<std::string> to;
};

/// How one slot's election ended.
struct promoted_slot {
  std::uint32_t slot = 0;
  std::string leader; ///< the node chosen (empty: the election failed)
  std::uint64_t epoch = 0;
  std::optional<api_error> failure;
};

struct promote_reply {
  std::vector<promoted_slot> slots; ///< by slot
};

/// One slot's replica on this node (cluster mode; the metrics).
struct slot_replica {
  std::uint32_t slot = 0;
  bool leader = false;  ///< it leads the slot (serving or taking office)
  bool serving = false; ///< and its epoch start is committed
  bool damaged = false;
  std::uint64_t epoch = 0;
  std::uint64_t commit = 0; ///< the commit point it knows
  std::uint64_t last = 0;   ///< its log's last seq
  struct lag {
    std::string node; ///< the follower's `--peers` name
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;
  };
  std::vector<lag> followers; ///< as leader
};

/// One message by its partition's uuid and transactionId (a client-given
/// one, or the id the node generated, which is its message id).
struct find_request {
  std::string partition_id;
  std::string transaction_id;
};

// -- consumer groups ----------------------------------------------------------

struct lease_view {
  std::string id;
  std::uint64_t epoch = 0;
  micros expires_at = 0;
  std::int64_t first = 0;
  std::int64_t last = 0;
};

/// One group's position on one partition (`/consumer-groups`).
struct cursor_view {
  std::string queue;
  std::string partition;
  std::string partition_id;
  std::string group;
  std::int64_t committed = -1;
  std::int64_t last_offset = -1;
  std::int64_t lag = 0;
  micros oldest_unconsumed_at = 0;
  std::optional<lease_view> lease;
  std::size_t redeliveries = 0;
  /// Retained messages above `committed` the group is done with (acked or
  /// dead-lettered out of order).
  std::size_t done_above = 0;
  /// Messages of the live lease not settled yet.
  std::size_t in_flight = 0;
  micros last_activity = 0;
};

struct groups_request {
  std::optional<std::string> group;
  std::optional<std::string> queue;
  /// With `queue`: only this partition (unknown: none).
  std::optional<std::string> partition = {};
};

struct delete_group_request {
  std::string group;
  std::optional<std::string> queue; ///< none: every queue
  bool delete_metadata = true;
};

struct delete_group_reply {
  std::size_t deleted_partitions = 0;
  bool metadata_deleted = false;
};

// -- dead letters -------------------------------------------------------------

struct dlq_message {
  std::uint64_t dlq_id = 0;
  std::string queue;
  std::string partition;
  std::string group;
  std::string error;
  std::uint32_t retry_count = 0;
  micros failed_at = 0;
  message frame; ///< the message as it was delivered (no lease)
};

struct dlq_page {
  std::vector<dlq_message> messages; ///< newest first
  std::size_t total = 0;
};

struct dlq_count {
  std::size_t count = 0;
  std::size_t remaining = 0;
};

// -- transactions -------------------------------------------------------------

struct txn_push {
  std::vector<push_item> items;
};

struct txn_ack {
  ack_item ack;
};

struct txn_request {
  std::optional<std::string> transaction_id; ///< client-given: idempotent
  std::vector<std::variant<txn_push, txn_ack>> operations;
  /// Queen's `requiredLeases`: the leases an ack without a `leaseId` settles
  /// under (docs/transactions.md).
  std::vector<std::string> required_leases = {};
};

struct txn_op_result {
  std::vector<push_result> items; ///< a push's items
  bool lease_released = false;    ///< an ack's
  bool dead_lettered = false;
};

struct txn_reply {
  std::string transaction_id;
  bool success = false;
  std::vector<txn_op_result> results;
  std::optional<std::size_t> failed_op;
  std::string error; ///< `operations[<i>]: <reason>` on rollback
};

// -- traces -------------------------------------------------------------------

/// A note attached to a message (Queen's message traces). It lives as long as
/// its message: retention, a purge or the queue's deletion removes it too.
struct trace_request {
  std::string partition_id; ///< the message's partition uuid
  std::string transaction_id;
  std::string data; ///< JSON text (an object, array or scalar)
  std::string event_type = "info";
  std::string consumer_group = "__QUEUE_MODE__";
  std::string worker_id;
  std::vector<std::string> names; ///< repeats count once
};

struct trace {
  std::string id;
  std::string transaction_id;
  std::string partition_id;
  std::string event_type;
  std::string data; ///< JSON text
  std::string consumer_group;
  std::string worker_id;
  micros created_at = 0;
  std::vector<std::string> names;
};

/// A trace found by name, with its message.
struct named_trace {
  trace t;
  std::string queue;
  std::string partition;
  /// None: the message was deleted since, or it is past the page's byte
  /// budget (docs/traces.md).
  std::optional<message> msg;
};

struct trace_name_query {
  std::string name;
  std::size_t limit = 100;
  std::size_t offset = 0;
};

struct trace_page {
  std::vector<named_trace> traces; ///< newest first
  std::uint64_t total = 0;
};

struct trace_name_stats {
  std::string name;
  std::uint64_t traces = 0;
  std::uint64_t messages = 0;
  micros last_seen = 0;
};

struct trace_names_query {
  std::size_t limit = 50;
  std::size_t offset = 0;
};

struct trace_names_page {
  std::vector<trace_name_stats> names; ///< most recently used first
  std::uint64_t total = 0;
};

} // namespace spool::node
