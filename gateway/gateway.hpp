#pragma once

/// The gateway: the one seam between the front doors (HTTP, msgpack) and a
/// Spool node. A plain C++ facade, no CAF in sight: each call takes a
/// request of the node API (node/api.hpp) and a completion that is called
/// exactly once with the answer or an `api_error` (vocab/errors.hpp maps it
/// to the wire). Completions run on one of the node's threads and must not
/// block: a front door posts the result to its io thread from there (a
/// request refused before it reaches the node, e.g. a malformed ack list,
/// completes on the caller's thread before the call returns).
/// Thread-safe: any thread may call any method at any time.
///
/// Made by `make_gateway` (gateway/start.hpp) over a running node; it must
/// not outlive the node's actor system.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "node/api.hpp"
#include "vocab/errors.hpp"
#include "vocab/expected.hpp"
#include "vocab/slot.hpp"

namespace spool {

class gateway {
public:
  template <class T>
  using done = std::function<void(expected<T>)>;

  struct impl;
  explicit gateway(std::unique_ptr<impl> p);
  ~gateway();
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  /// A fresh request token for a pop (unique on this node).
  std::string new_token();

  void push(node::push_request req, done<node::push_reply> k);
  /// A pop; with `wait` it parks until something is deliverable or its
  /// timeout passes. An empty answer carries its reason. Its token (made
  /// here when empty) must not be in flight already (`invalid_argument`).
  void pop(node::pop_request req, done<node::pop_reply> k);
  /// The client of the pop with this token left: a parked pop is answered
  /// empty at once, leasing nothing. Unknown or finished tokens: nothing.
  void cancel(const std::string& token);
  /// Every pop in flight is cancelled (a node shutting down answers its
  /// parked pops empty), and so is every later one as it starts: none
  /// parks past a shutdown. Answers how many were in flight.
  std::size_t cancel_all();
  /// Pops in flight now (parked long polls among them).
  std::size_t pops_in_flight() const;
  /// The node's counters now (all 0 when the node keeps none).
  node::node_counters counters() const;
  void ack(node::ack_request req, done<node::ack_reply> k);
  void extend(node::extend_request req, done<node::extend_reply> k);
  /// The response carrying this lease could not be written: the lease ends
  /// at once on every partition, counting no delivery; false if unknown.
  void release(const std::string& lease_id, done<bool> k);

  void seek(node::seek_request req, done<node::seek_reply> k);
  void update_subscription(node::subscription_request req,
                           done<node::subscription_reply> k);

  void configure(node::configure_request req, done<node::configure_reply> k);
  /// Every queue, sorted by name, or the one named (unknown: `not_found`).
  void queues(std::optional<std::string> name,
              done<std::vector<node::queue_info>> k);
  /// Deletes a queue with everything of it; answers whether it existed.
  void delete_queue(const std::string& name, done<bool> k);
  /// Answers the number of partitions whose retained range moved.
  void purge(node::purge_request req, done<std::size_t> k);
  void browse(node::browse_request req, done<node::browse_reply> k);
  /// The message, without lease; `not_found` when its partition is unknown
  /// or holds no retained message with that transactionId.
  void find(node::find_request req, done<node::message> k);
  /// The store's map use as of its last commit.
  void storage_usage(done<node::storage_usage> k);

  void groups(node::groups_request req, done<std::vector<node::cursor_view>> k);
  void delete_group(node::delete_group_request req,
                    done<node::delete_group_reply> k);

  void dlq_list(dlq_query q, done<node::dlq_page> k);
  void dlq_requeue(dlq_filter f, done<node::dlq_count> k);
  void dlq_delete(dlq_filter f, done<node::dlq_count> k);

  void transaction(node::txn_request req, done<node::txn_reply> k);

  /// Attaches a trace to a message; answers its id (`not_found`: no such
  /// message retained).
  void add_trace(node::trace_request req, done<std::string> k);
  /// The traces of a message, oldest first (none for an unknown message).
  void traces(node::find_request req, done<std::vector<node::trace>> k);
  /// The traces with a name across every queue, newest first.
  void traces_named(node::trace_name_query q, done<node::trace_page> k);
  /// The trace names in use with their counts, most recently used first.
  void trace_names(node::trace_names_query q, done<node::trace_names_page> k);

  /// Who runs an operator's promote: cluster mode gives one before the
  /// doors open (none: one node).
  using promoter
      = std::function<void(node::promote_request, done<node::promote_reply>)>;
  void set_promoter(promoter p);
  /// Who reports the slots' replicas: cluster mode gives one before the
  /// doors open (none: one node, no slot is reported).
  using slot_reporter
      = std::function<void(done<std::vector<node::slot_replica>>)>;
  void set_slot_reporter(slot_reporter r);
  /// Every slot's replica on this node, by slot (the metrics); empty on
  /// one node.
  void slot_replicas(done<std::vector<node::slot_replica>> k);
  /// Who says which slots this node serves: cluster mode gives one before
  /// the doors open (none: one node, every slot).
  using slot_server = std::function<std::vector<slot_t>()>;
  void set_slot_server(slot_server s);
  /// The slots this node serves now, which its listings cover
  /// (docs/cluster.md, "Serving"); none on one node. Any thread.
  std::optional<std::vector<slot_t>> served_slots() const;
  /// The operator's promote (docs/cluster.md, "Failover"): one slot's
  /// election, or every slot's held here, each answered once it ended;
  /// `invalid_argument` on a node without `--peers`.
  void promote(node::promote_request req, done<node::promote_reply> k);

private:
  std::unique_ptr<impl> impl_;
};

} // namespace spool
