#pragma once

// What the two files of a transaction's run share (broker_txn.cpp: checks,
// stages, the answer; broker_txn_commit.cpp: seal, the one batch, its
// answer). Internal to the broker.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/broker/broker_state.hpp"

namespace spool::actors::broker_detail {

/// One transaction in flight.
struct txn_run {
  broker_ptr self = nullptr;
  core::txn_request req;
  std::string id;
  bool client_id = false;
  /// The queue that keeps the stored answer (`core::txn_home_queue`).
  std::optional<std::string> home;
  /// The term of its slot as it started (`txn_term`).
  std::uint64_t term = 0;
  core::txn_plan plan;
  promise<txn_reply> rp;
  // -- stage --
  std::vector<stage_reply> staged; ///< per plan.acks, as far as staged
  /// Per staged ack group: its stage is counted open by this broker
  /// (closed once, in `settle_all`).
  std::vector<bool> opened;
  /// Per plan.pushes: its seal (taken into the submission: the writer
  /// settles it from then on) and its items' results.
  queue_seals seals;
  std::optional<api_error> failure;
  std::optional<core::txn_result> rollback;
};

using run_ptr = std::shared_ptr<txn_run>;

/// The key of a run (or of stored id `id` of its home) among those in
/// flight: a repeat is the same id under the same home queue.
inline std::pair<std::string, std::string> flight_key(const txn_run& run,
                                                      const std::string& id) {
  return {run.home.value_or(""), id};
}

/// Answers the transaction and every repeat that waited for it.
void answer(run_ptr run, txn_reply reply);

/// Gives up the staged acks and sealed pushes not submitted, and closes the
/// stages this broker counted.
void settle_all(run_ptr run);

/// Ends a transaction that did not commit: no trace is left.
void abort(run_ptr run);

/// Phase 2: every ack is staged; create missing queues, then seal, then
/// write the one batch.
void push_phase(run_ptr run);

} // namespace spool::actors::broker_detail
