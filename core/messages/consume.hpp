#pragma once

/// The messages of consuming: pops (one partition, a queue, a namespace),
/// acks and extends as the wire names them, seeks, transactions and the
/// subscription update. Plain structs of the actor layer's protocol
/// (namespace `spool::actors`, as `core/writer/`).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/broker/txn_core.hpp"
#include "core/cursor/cursor_core.hpp"
#include "core/cursor/pop_plan.hpp"
#include "core/cursor/seek.hpp"
#include "core/queue/subscription.hpp"
#include "storage/mutation.hpp"
#include "vocab/errors.hpp"

namespace spool::actors {

using core::delivered_frame;
using core::partition_view;
using core::pop_reply;
using core::pop_request;

struct ack_reply {
  ack_error error = ack_error::none;
  bool lease_released = false;
  bool dead_lettered = false;
  std::optional<api_error> failure;
  /// With `lease_released`: the id of the lease the ack ended.
  std::string released_lease;
};

/// A partition of a queue as a request names it: by name, or, when `uuid`
/// is set, by the wire's `partitionId` (the queue that owns it resolves it;
/// the broker routed the request there by the queue id the uuid carries).
struct partition_ref {
  std::string name;
  std::string uuid = {};
};

/// An ack as the wire names its frame: the partition by uuid (api.md's
/// `partitionId`), the frame by transactionId (or offset), per item group.
struct located_ack {
  std::string partition_uuid;
  std::string group;
  ack_request ack;
};

/// The answer to a `located_ack`: where it went (empty for an unknown
/// partition uuid) and its outcome.
struct located_ack_reply {
  std::string queue;
  std::string partition;
  ack_reply reply;
};

struct extend_reply {
  extend_error error = extend_error::none;
  std::optional<mono_time> expires;
  /// The extend's write failed: the lease keeps its old expiry.
  std::optional<api_error> failure;
};

/// One partition's part of an extend by lease id.
struct lease_extension {
  std::string partition;
  std::string partition_uuid;
  extend_reply reply;
};

/// The answer to an extend by lease id: one item per partition the lease
/// holds (empty with `error` not_found: no such live lease).
struct lease_extend_reply {
  std::vector<lease_extension> partitions;
  extend_error error = extend_error::none;
  std::optional<api_error> failure;
};

/// A pop on a queue: one named partition, or any (wildcard).
struct queue_pop_request {
  std::optional<std::string> partition;
  std::string group;
  std::size_t batch = 1;      ///< a global cap across partitions
  std::size_t partitions = 1; ///< wildcard: how many partitions to claim
  std::size_t max_bytes = SIZE_MAX;
  bool auto_ack = false;
  bool wait = false;
  std::chrono::milliseconds timeout{30'000};
  /// One id for every partition claimed: the gateway's token, which the
  /// queue rewrites as it arrives (`lease_id_of`: its id, then the token).
  std::string lease_id;
  /// Where the group starts if this is its first pop on the queue
  /// (semantics.md §5); ignored once the group is registered.
  core::subscription_params subscription;
};

/// What one claimed partition delivered.
struct partition_delivery {
  std::string partition;
  std::string partition_uuid;
  pop_reply reply;
};

struct queue_pop_reply {
  std::vector<partition_delivery> claimed;
  empty_reason reason = empty_reason::empty;
  /// The earliest `retry_at` of the partitions asked (a parked pop is
  /// retried then).
  std::optional<mono_time> retry_at;
  std::optional<api_error> failure;
};

/// A pop across the queues of a namespace (and task), by priority with
/// starvation aging (semantics.md §9).
struct namespace_pop_request {
  std::string name_space;
  std::optional<std::string> task;
  /// Wildcard over each queue's partitions; `wait` parks across the queues.
  queue_pop_request pop;
  /// Only the queues whose names start with one of these (a token's
  /// `queues` claim); none: every queue of the namespace.
  std::optional<std::vector<std::string>> queue_prefixes = {};
};

struct namespace_pop_reply {
  std::string queue; ///< the queue served (empty: none)
  queue_pop_reply reply;
};

/// The answer to a transaction; `failure` is a storage or actor failure
/// (nothing was committed; a rollback answer is `result.success == false`).
struct txn_reply {
  core::txn_result result;
  std::optional<api_error> failure;
};

using core::queue_mode_group; // pops without a consumer group

/// A seek of one group (semantics.md §6): every partition of a queue, or
/// one. A queue applies it in one durable write (all or nothing).
struct seek_request {
  std::string group;
  std::optional<std::string> partition; ///< none: every partition
  core::seek_target target;
  bool dry_run = false; ///< answer the positions, write and change nothing
};

/// One partition's committed before and after a seek.
struct seek_position {
  std::string partition;
  /// None: the group had no cursor here (a dry run does not create one).
  std::optional<storage::offset> before;
  storage::offset after{-1};
};

/// The answer to a seek: `partitions_updated` counts the partitions
/// written (the per-queue route's `partitionsUpdated`; 1 is the
/// per-partition route's `updated: true`; 0 for a dry run).
struct seek_reply {
  std::size_t partitions_updated = 0;
  std::vector<seek_position> positions; ///< by partition name
  std::optional<api_error> failure;
};

/// A seek as a cursor gets it from its partition.
struct cursor_seek {
  core::seek_target target;
  /// The partition's timestamp walk (timestamp rule only).
  std::optional<storage::offset> walked;
  bool dry_run = false;
  /// Answer `unavailable` at once instead of waiting while another transaction
  /// or seek holds the cursor (the queue's parallel first attempt).
  bool no_wait = false;
};

/// The answer to a subscription update: the records rewritten.
struct sub_update_reply {
  std::size_t rows_updated = 0;
  std::optional<api_error> failure;
};

} // namespace spool::actors
