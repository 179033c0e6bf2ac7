#pragma once

/// Every durable change is a typed mutation: a plain serializable struct whose
/// values (offsets, created_at, ids, epochs) were chosen by whoever made it.
/// A write batch is a list of mutations, applied all or nothing by `apply`,
/// one function per type. Replicas (later) apply the same lists.

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "storage/records.hpp"

namespace spool::storage {

namespace mut {

/// Creates a queue (conflict if the id exists); bumps the id counter.
struct create_queue {
  queue_record rec;
  template <class F>
  friend auto fields(F& f, create_queue& x) {
    return f(x.rec);
  }
};

/// Replaces a queue's record (options, namespace, task).
struct update_queue {
  queue_record rec;
  template <class F>
  friend auto fields(F& f, update_queue& x) {
    return f(x.rec);
  }
};

/// Deletes a queue: its record goes and the queue is marked doomed, in
/// one small write whatever the queue holds. Its rows (segments, indices,
/// partitions, cursors, subscriptions, dedup ids, DLQ) stay, invisible (no
/// reader reaches them without the queue record, and queue ids are never
/// reused), until `sweep_queue` steps remove them.
struct delete_queue {
  queue_id queue;
  template <class F>
  friend auto fields(F& f, delete_queue& x) {
    return f(x.queue);
  }
};

/// One bounded step of removing a deleted queue's rows: at most `max_keys`
/// keys and `max_bytes` of keys and values (but one key whatever its size:
/// each deleted value is kept in the slot log until trimmed); the step that
/// finds no more also clears the doomed mark. Refused for a live queue
/// (conflict); nothing to do for one already swept.
struct sweep_queue {
  queue_id queue;
  std::uint64_t max_keys = 10'000;
  std::uint64_t max_bytes = std::uint64_t{64} << 20;
  template <class F>
  friend auto fields(F& f, sweep_queue& x) {
    return f(x.queue, x.max_keys, x.max_bytes);
  }
};

/// Creates a partition (conflict if it exists); bumps the id counter.
struct create_partition {
  partition_record rec;
  template <class F>
  friend auto fields(F& f, create_partition& x) {
    return f(x.rec);
  }
};

/// Stores one sealed segment and indexes its time and client ids.
struct append_segment {
  queue_id queue;
  partition_id partition;
  offset base;
  std::uint32_t frame_count = 0;
  micros created_at = 0;
  std::string bytes;
  std::vector<std::pair<std::string, offset>> client_ids;
  template <class F>
  friend auto fields(F& f, append_segment& x) {
    return f(x.queue, x.partition, x.base, x.frame_count, x.created_at, x.bytes,
             x.client_ids);
  }
};

/// Deletes whole segments below `new_watermark` (a segment boundary) and
/// forgets the listed dedup ids.
struct delete_segments {
  queue_id queue;
  partition_id partition;
  offset new_watermark;
  std::vector<std::string> forget_ids;
  template <class F>
  friend auto fields(F& f, delete_segments& x) {
    return f(x.queue, x.partition, x.new_watermark, x.forget_ids);
  }
};

/// A guard, not a change: fails the batch unless the dedup index maps
/// `transaction_id` to `off`. A duplicate of an id still in flight carries
/// it, so the duplicate is answered only if its original was stored.
struct expect_dedup {
  queue_id queue;
  partition_id partition;
  std::string transaction_id;
  offset off;
  template <class F>
  friend auto fields(F& f, expect_dedup& x) {
    return f(x.queue, x.partition, x.transaction_id, x.off);
  }
};

struct put_cursor {
  queue_id queue;
  partition_id partition;
  std::string group;
  cursor_record rec;
  template <class F>
  friend auto fields(F& f, put_cursor& x) {
    return f(x.queue, x.partition, x.group, x.rec);
  }
};

struct delete_cursor {
  queue_id queue;
  partition_id partition;
  std::string group;
  template <class F>
  friend auto fields(F& f, delete_cursor& x) {
    return f(x.queue, x.partition, x.group);
  }
};

struct put_subscription {
  queue_id queue;
  std::string group;
  subscription_record rec;
  template <class F>
  friend auto fields(F& f, put_subscription& x) {
    return f(x.queue, x.group, x.rec);
  }
};

struct delete_subscription {
  queue_id queue;
  std::string group;
  template <class F>
  friend auto fields(F& f, delete_subscription& x) {
    return f(x.queue, x.group);
  }
};

/// Inserts a dead-letter entry under the id it carries (drawn from the
/// clock by `store::next_dlq_id`); no counter is stored or bumped.
struct put_dlq {
  queue_id queue;
  std::string group;
  dlq_entry entry;
  template <class F>
  friend auto fields(F& f, put_dlq& x) {
    return f(x.queue, x.group, x.entry);
  }
};

/// Rewrites a stored dead-letter entry (same id) only while it is still
/// stored: a deletion committed before this write wins, without an error.
/// Entries read, changed and written back use it, so a concurrent delete is
/// never undone.
struct update_dlq {
  queue_id queue;
  std::string group;
  dlq_entry entry;
  template <class F>
  friend auto fields(F& f, update_dlq& x) {
    return f(x.queue, x.group, x.entry);
  }
};

/// Rewrites a stored subscription record only while the same registration
/// is still stored (same `registered_at`, and its queue exists): a group
/// or queue deletion committed before this write wins, and so does a
/// registration made after such a deletion, without an error. The
/// subscription update uses it, so it never brings back a record deleted
/// meanwhile nor overwrites a newer registration.
struct update_subscription {
  queue_id queue;
  std::string group;
  subscription_record rec;
  template <class F>
  friend auto fields(F& f, update_subscription& x) {
    return f(x.queue, x.group, x.rec);
  }
};

struct delete_dlq {
  queue_id queue;
  std::string group;
  std::uint64_t id = 0;
  template <class F>
  friend auto fields(F& f, delete_dlq& x) {
    return f(x.queue, x.group, x.id);
  }
};

/// Stores the answer of a transaction with a client-given id in its home
/// queue (`core::txn_home_queue`), replacing an expired one under the same
/// id. The queue must exist.
struct put_txn {
  queue_id queue;
  std::string id;
  txn_record rec;
  template <class F>
  friend auto fields(F& f, put_txn& x) {
    return f(x.queue, x.id, x.rec);
  }
};

/// Forgets a transaction's stored answer in queue `queue` if it is still one
/// stored before `stored_before` (retention): an id stored again meanwhile
/// stays. No error when already gone.
struct delete_txn {
  queue_id queue;
  std::string id;
  micros stored_before = INT64_MAX;
  template <class F>
  friend auto fields(F& f, delete_txn& x) {
    return f(x.queue, x.id, x.stored_before);
  }
};

/// Stores a trace of the message at `off` of (queue, partition), only while
/// that message is stored: `not_found` when retention or a purge deleted
/// it, `unknown_queue` when its queue was deleted (so no trace outlives its
/// message, whatever ran between finding the message and this write).
struct put_trace {
  queue_id queue;
  partition_id partition;
  offset off;
  trace_record rec;
  template <class F>
  friend auto fields(F& f, put_trace& x) {
    return f(x.queue, x.partition, x.off, x.rec);
  }
};

} // namespace mut

using mutation
    = std::variant<mut::create_queue, mut::update_queue, mut::delete_queue,
                   mut::create_partition, mut::append_segment,
                   mut::delete_segments, mut::expect_dedup, mut::put_cursor,
                   mut::delete_cursor, mut::put_subscription,
                   mut::delete_subscription, mut::put_dlq, mut::delete_dlq,
                   mut::put_txn, mut::delete_txn, mut::update_dlq,
                   mut::update_subscription, mut::sweep_queue, mut::put_trace>;

/// Mutations applied together, all or nothing.
struct write_batch {
  std::vector<mutation> mutations;
  /// In a cluster, the epoch of its slot's leadership the batch was made
  /// in (the term its author's slot was loaded in, docs/cluster.md,
  /// "Serving"): the replica host admits it under that epoch only, so a
  /// write of a deposed term is never committed under a later one. 0: not
  /// fenced (one node, a barrier); a cluster refuses it.
  std::uint64_t term = 0;

  /// Approximate bytes this batch writes (for sizing commit groups).
  std::size_t byte_size() const noexcept;

  template <class F>
  friend auto fields(F& f, write_batch& x) {
    return f(x.mutations, x.term);
  }
};

/// Advances a partition record over an appended segment (shared by the
/// writer's apply and the partition's in-memory view).
void advance_partition(partition_record& rec, offset base,
                       std::uint32_t frame_count, micros created_at);

/// Applies one mutation inside `t`. On error the caller aborts `t`.
expected<void> apply(txn& t, const mutation& m);

/// Applies every mutation of `b` inside `t`, stopping at the first error.
expected<void> apply(txn& t, const write_batch& b);

} // namespace spool::storage
