#pragma once

/// The broker's transaction runner (semantics.md §10, docs/transactions.md):
/// validate-then-commit over the queue/partition/cursor actors. The rules
/// live in `txn_core` and `cursor_txn`; this file only sequences messages.

#include <caf/typed_response_promise.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/interfaces.hpp"
#include "actors/node_context.hpp"
#include "actors/promise.hpp"
#include "config/options.hpp"

namespace spool::actors {

/// What a transaction needs from the broker that runs it.
struct txn_host {
  broker_actor::pointer self = nullptr;
  node_context node;
  core::txn_retention retention;
  config::push_limits push;
  /// The coordinator of queue `name`, if it exists.
  std::function<std::optional<queue_actor>(const std::string&)> find_queue;
  /// Whether `actor` is still the coordinator serving queue `name` (not
  /// deleted, replaced or restarting since).
  std::function<bool(const std::string&, const queue_actor&)> serving;
  /// The id of live queue `name`, if it exists (the home of a stored
  /// answer, `core::txn_home_queue`).
  std::function<std::optional<storage::queue_id>(const std::string&)>
      queue_id_of;
  /// Creates the named queues that do not exist yet (one durable write),
  /// then calls back with the error, if any.
  std::function<void(std::vector<std::string>,
                     std::function<void(std::optional<api_error>)>)>
      create_queues;
  /// The partitions a committed transaction pushed to (uuid, queue id).
  std::function<void(const std::vector<push_target>&)> stored;
  /// A transaction stage opened on queue `name` (acks staged on one of its
  /// cursors), and closed when its settle is sent.
  std::function<void(const std::string&)> stage_opened;
  std::function<void(const std::string&)> stage_closed;
  /// A commit settled on these queues (pushed to or acked on): wakes the
  /// parked namespace pops they may serve.
  std::function<void(const std::vector<std::string>&)> committed;
  /// Transactions with a client id in flight, by (home queue, id) as their
  /// stored answers are, with the promises of repeats that arrived
  /// meanwhile (they get the first one's answer).
  std::map<std::pair<std::string, std::string>, std::vector<promise<txn_reply>>>
      in_flight;
};

/// Runs `req` and answers it: at once (a refusal, a stored answer) or later.
caf::result<txn_reply> run_transaction(std::shared_ptr<txn_host> host,
                                       core::txn_request req);

} // namespace spool::actors
