#pragma once

/// Transactions (semantics.md §10), the pure part: the request and answer
/// shapes, the checks done before anything runs, the plan (acks grouped by
/// cursor in a fixed order, pushes grouped by queue), the assembly of the
/// answer, its stored form and the retention of stored answers. No CAF: the
/// broker actor runs the plan (docs/transactions.md).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "storage/error.hpp"
#include "storage/types.hpp"
#include "vocab/delivery.hpp"

namespace spool::config {
struct push_limits;
} // namespace spool::config

namespace spool::core {

// -- request ------------------------------------------------------------------

struct txn_push_item {
  std::string queue;
  std::string partition = "Default";
  storage::frame frame;
};

/// `{type: "push", items: [...]}`: items for any queues.
struct txn_push_op {
  std::vector<txn_push_item> items;
};

/// `{type: "ack", ...}`: one frame of a partition, named by its uuid (the
/// wire's `partitionId`), for a group. The broker sets `queue` from the id
/// the uuid carries before anything else, and the queue resolves the
/// partition as it stages (either unknown: `Message not found`).
struct txn_ack_op {
  std::string queue;
  std::string partition_uuid;
  std::string group;
  ack_request ack;
};

using txn_op = std::variant<txn_push_op, txn_ack_op>;

struct txn_request {
  /// Client-given: a repeat returns the stored answer. None: generated, and
  /// the answer is not stored.
  std::optional<std::string> id;
  std::vector<txn_op> ops;
  /// `requiredLeases`: the leases the acks that name none settle under
  /// (`ack_request::lease_in`); at most `max_required_leases`.
  std::vector<std::string> required_leases = {};
};

/// The most leases a transaction may list in `requiredLeases`.
inline constexpr std::size_t max_required_leases = 1000;

// -- answer -------------------------------------------------------------------

enum class txn_push_status : std::uint8_t { queued, duplicate };

constexpr txn_push_status enum_limit(txn_push_status) {
  return txn_push_status::duplicate;
}

/// One pushed item: where it went (a duplicate names its original).
struct txn_item_result {
  std::string queue;
  std::string partition;
  std::string partition_uuid;
  txn_push_status status = txn_push_status::queued;
  storage::offset off;

  friend bool operator==(const txn_item_result&, const txn_item_result&)
      = default;
  template <class F>
  friend auto fields(F& f, txn_item_result& x) {
    return f(x.queue, x.partition, x.partition_uuid, x.status, x.off);
  }
};

/// The result of one operation: `items` for a push, the ack's effects for an
/// ack.
struct txn_op_result {
  std::vector<txn_item_result> items;
  bool lease_released = false;
  bool dead_lettered = false;

  friend bool operator==(const txn_op_result&, const txn_op_result&) = default;
  template <class F>
  friend auto fields(F& f, txn_op_result& x) {
    return f(x.items, x.lease_released, x.dead_lettered);
  }
};

/// `{transactionId, success, results, error}`. On rollback `success` is
/// false, `failed_op` names the operation and `error` reads
/// `operations[<i>]: <reason>`; `results` is then empty.
struct txn_result {
  std::string transaction_id;
  bool success = false;
  std::vector<txn_op_result> results;
  std::optional<std::uint64_t> failed_op;
  std::string error;

  friend bool operator==(const txn_result&, const txn_result&) = default;
  template <class F>
  friend auto fields(F& f, txn_result& x) {
    return f(x.transaction_id, x.success, x.results, x.failed_op, x.error);
  }
};

/// A rollback answer naming operation `op`.
txn_result txn_rollback(std::string id, std::size_t op, std::string_view why);

// -- checks and plan ----------------------------------------------------------

/// Everything checkable before anything runs: an id of 1..255 bytes of
/// UTF-8, at least one operation, push items (names, frame limits), acks
/// (`retry` refused, the lease named, valid names), then every push item
/// together within `push` (push.maxItems, push.maxBytes). The first
/// failure, as a rollback answer; none when the request may run.
std::optional<txn_result> check_txn(const txn_request& req,
                                    const storage::frame_limits& limits,
                                    const config::push_limits& push);

/// The acks of one cursor, in operation order.
struct txn_ack_group {
  std::string queue;
  std::string partition_uuid;
  std::string group;
  std::vector<std::size_t> ops; ///< operation index of each request
  std::vector<ack_request> reqs;
};

/// Where each pushed item of one queue came from.
struct txn_push_part {
  std::string queue;
  std::vector<std::pair<std::size_t, std::size_t>> from; ///< (op, item)
};

struct txn_plan {
  /// Sorted by (queue, partition uuid, group): the staging order. Every
  /// transaction stages cursors in this one global order, and a seek that
  /// waits stages a queue's partitions in uuid order too, so no two of them
  /// waiting for each other's cursors can deadlock.
  std::vector<txn_ack_group> acks;
  /// By queue, in order of first appearance; items in request order.
  std::vector<txn_push_part> pushes;
};

txn_plan plan_txn(const txn_request& req);

/// An empty success answer with one (empty) result per operation, to be
/// filled from the staged acks and the settled pushes.
txn_result txn_success(std::string id, std::size_t op_count);

// -- stored answers -----------------------------------------------------------

/// The queue that keeps the stored answer of a client-given id: the queue
/// its first operation names (a push's first item, or an ack's queue). The
/// answer's row and its retention index live under that queue's id, so a
/// transaction writes only keys of queues it touches, a repeat (the same
/// operations) finds the answer there, and deleting the queue forgets it.
/// None when no operation names a queue.
std::optional<std::string> txn_home_queue(const txn_request& req);

std::string encode_txn_result(const txn_result& r);
/// None when `bytes` does not decode.
std::optional<txn_result> decode_txn_result(std::string_view bytes);

/// How long the answer of a client-given transaction id is kept: a repeat
/// within `keep` of the commit returns it; afterwards the id is forgotten
/// and runs again. Every transaction write also deletes up to `sweep`
/// expired ids of its home queue (`txn_home_queue`), so a queue keeps about
/// the ids of its last `keep` (and none once deleted).
struct txn_retention {
  std::chrono::seconds keep{24 * 3600};
  std::size_t sweep = 16;

  /// The commit time before which stored ids are expired at `now` (µs).
  storage::micros cutoff(storage::micros now) const noexcept {
    return now - static_cast<storage::micros>(keep.count()) * 1'000'000;
  }
  bool expired(storage::micros created_at, storage::micros now) const noexcept {
    return created_at < cutoff(now);
  }
};

} // namespace spool::core
