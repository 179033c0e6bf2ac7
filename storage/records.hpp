#pragma once

/// Metadata records stored beside the segments (DESIGN.md, "Storage layout").
/// Plain structs with `fields` (their member list), serialized by serial.hpp.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/trailing.hpp"
#include "storage/types.hpp"
#include "vocab/options.hpp"

namespace spool::storage {

using spool::queue_options;

struct queue_record {
  queue_id id;
  std::string name;
  std::string name_space; ///< "namespace" (a keyword in C++)
  std::string task;
  queue_options options;
  micros created_at = 0;

  friend bool operator==(const queue_record&, const queue_record&) = default;

  template <class F>
  friend auto fields(F& f, queue_record& x) {
    return f(x.id, x.name, x.name_space, x.task, x.options, x.created_at);
  }
};

/// A partition's durable state. lastOffset = next_offset - 1; the watermark is
/// the lowest retained offset (next_offset when nothing is retained).
struct partition_record {
  queue_id queue;
  partition_id id;
  std::string name;
  std::string uuid;
  offset next_offset{0};
  micros last_created_at = 0;
  offset watermark{0};
  micros created_at = 0;
  /// Everything below was deleted by retention or purge (never refilled).
  offset deleted_below{0};

  offset last_offset() const noexcept {
    return next_offset - 1;
  }

  friend bool operator==(const partition_record&, const partition_record&)
      = default;

  template <class F>
  friend auto fields(F& f, partition_record& x) {
    return f(x.queue, x.id, x.name, x.uuid, x.next_offset, x.last_created_at,
             x.watermark, x.created_at, x.deleted_below);
  }
};

/// Durable delivery counters of one frame above `committed`.
struct frame_counters {
  offset off;
  std::uint32_t deliveries = 0;
  std::uint32_t failures = 0;
  /// Completed or dead-lettered while an earlier frame is not.
  bool done = false;

  friend bool operator==(const frame_counters&, const frame_counters&)
      = default;

  template <class F>
  friend auto fields(F& f, frame_counters& x) {
    return f(x.off, x.deliveries, x.failures, x.done);
  }
};

/// A dead letter requeued to its group, pending until acked (semantics.md
/// §4). Counts start afresh at the requeue; `leased` marks one in flight (a
/// restart finds it and charges it as an expiry would).
struct requeued_frame {
  std::uint64_t dlq_id = 0;
  offset off;
  std::uint32_t deliveries = 0;
  std::uint32_t failures = 0;
  bool leased = false;

  friend bool operator==(const requeued_frame&, const requeued_frame&)
      = default;

  template <class F>
  friend auto fields(F& f, requeued_frame& x) {
    return f(x.dlq_id, x.off, x.deliveries, x.failures, x.leased);
  }
};

/// A consumer group's cursor on one partition (leases live in memory).
struct cursor_record {
  offset committed{-1};
  std::uint64_t lease_epoch = 0;
  /// Frames to deliver one per lease after a multi-frame lease expired.
  std::optional<std::pair<offset, offset>> isolated;
  /// The range of the lease in flight when this record was written; a lease
  /// still recorded at start-up was lost to a restart and ends as expired.
  std::optional<std::pair<offset, offset>> leased;
  std::vector<frame_counters> counters;
  micros last_activity = 0;
  /// Dead letters requeued to this group, in requeue order.
  std::vector<requeued_frame> requeued;
  /// maxWaitTimeSeconds: frames at or below this were overdue when the
  /// group last sought; its replay delivers them instead of dead-lettering
  /// them, also after a restart (-1: none). Trailing: older rows lack it.
  offset exempt{-1};

  friend bool operator==(const cursor_record&, const cursor_record&) = default;

  template <class F>
  friend auto fields(F& f, cursor_record& x) {
    return f(x.committed, x.lease_epoch, x.isolated, x.leased, x.counters,
             x.last_activity, x.requeued, as_trailing(x.exempt));
  }
};

enum class subscription_mode : std::uint8_t {
  all = 0,
  new_only = 1,
  timestamp = 2
};

constexpr subscription_mode enum_limit(subscription_mode) {
  return subscription_mode::timestamp;
}

/// Where a group starts on partitions of a queue (product document).
struct subscription_record {
  subscription_mode mode = subscription_mode::all;
  micros timestamp = 0;
  subscription_mode registered_mode = subscription_mode::all;
  micros registered_at = 0;

  friend bool operator==(const subscription_record&, const subscription_record&)
      = default;

  template <class F>
  friend auto fields(F& f, subscription_record& x) {
    return f(x.mode, x.timestamp, x.registered_mode, x.registered_at);
  }
};

/// A dead-lettered message of one (queue, group).
struct dlq_entry {
  std::uint64_t id = 0;
  partition_id partition;
  stored_frame message;
  std::string error;
  std::uint32_t deliveries = 0;
  micros failed_at = 0;
  /// Requeued to its group and not acked yet (the group's cursor record
  /// lists it); retention leaves it alone meanwhile.
  bool requeued = false;

  friend bool operator==(const dlq_entry&, const dlq_entry&) = default;

  template <class F>
  friend auto fields(F& f, dlq_entry& x) {
    return f(x.id, x.partition, x.message, x.error, x.deliveries, x.failed_at,
             x.requeued);
  }
};

/// What the dedup index keeps per client-given transaction id.
struct dedup_record {
  offset off;
  micros created_at = 0;

  friend bool operator==(const dedup_record&, const dedup_record&) = default;

  template <class F>
  friend auto fields(F& f, dedup_record& x) {
    return f(x.off, x.created_at);
  }
};

/// The stored answer of a transaction with a client-given id: a repeat
/// returns `result` (encoded by the broker) until the id expires.
struct txn_record {
  micros created_at = 0;
  std::string result;

  friend bool operator==(const txn_record&, const txn_record&) = default;

  template <class F>
  friend auto fields(F& f, txn_record& x) {
    return f(x.created_at, x.result);
  }
};

/// A note a consumer attached to a message (Queen's message traces): it
/// lives as long as its message (retention, a purge and the queue's
/// deletion remove it too).
struct trace_record {
  std::string id; ///< a uuid (the wire's traceId)
  std::string transaction_id;
  std::string event_type;
  std::string data; ///< JSON text
  std::string consumer_group;
  std::string worker_id;
  micros created_at = 0;
  std::vector<std::string> names; ///< distinct, each 1..255 bytes

  friend bool operator==(const trace_record&, const trace_record&) = default;

  template <class F>
  friend auto fields(F& f, trace_record& x) {
    return f(x.id, x.transaction_id, x.event_type, x.data, x.consumer_group,
             x.worker_id, x.created_at, x.names);
  }
};

/// A slot's id counters: the next per-slot number of a queue id and of a
/// partition id (`vocab/slot.hpp`'s `slot_id`). Bumped by the create
/// mutations' apply, from the ids they carry, so a store that applies the
/// same batches ends with the same counters.
struct slot_counters {
  std::uint32_t next_queue = 1;
  std::uint32_t next_partition = 1;

  friend bool operator==(const slot_counters&, const slot_counters&) = default;

  template <class F>
  friend auto fields(F& f, slot_counters& x) {
    return f(x.next_queue, x.next_partition);
  }
};

} // namespace spool::storage
