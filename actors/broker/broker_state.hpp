#pragma once

// The broker's state and the pieces its files share (internal to
// actors/broker/): broker_actor.cpp holds the behaviour and recovery,
// broker_queues.cpp the queue directory (creation, restarts);
// broker_push.cpp pushes; broker_namespace.cpp namespace pops;
// broker_admin.cpp configure, listings, deletions, seek and the
// subscription update; broker_dlq.cpp the DLQ; broker_node.cpp the node
// API's identities; broker_traces.cpp traces; broker_txn*.cpp transactions.

#include "actors/broker/broker_actor.hpp"
#include "actors/create_missing.hpp"
#include "actors/fan_out.hpp"
#include "actors/promise.hpp"
#include "actors/queue/queue_actor.hpp"
#include "actors/supervise.hpp"
#include "actors/write.hpp"
#include "core/broker/pop_checks.hpp"
#include "core/broker/priority.hpp"
#include "core/dlq/dlq_reader.hpp"
#include "core/limits/names.hpp"
#include "core/push/push_items.hpp"
#include "core/queue/async_mutex.hpp"
#include "core/queue/one_timer.hpp"
#include "core/queue/open_stages.hpp"
#include "core/queue/parking_lot.hpp"
#include "storage/segment.hpp"
#include "storage/tables.hpp"
#include <algorithm>
#include <atomic>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <spdlog/spdlog.h>
#include <unordered_map>
#include <vector>

namespace spool::actors::broker_detail {

using core::async_mutex;

/// A slot's queues on this node (cluster mode).
enum class slot_run : std::uint8_t { stopped, loading, running };

struct broker_state {
  static inline const char* name = "spool.broker";
  broker_config cfg;
  std::map<std::string, queue_actor> queues;
  /// Deleted queues living out their grace (they answer requests in
  /// flight), still linked so that the broker's end ends them at once; their
  /// own end is expected, not a death to restart.
  std::vector<caf::actor_addr> retiring;
  /// Parked pops across every queue (the pop.maxParked cap).
  std::shared_ptr<std::atomic<std::size_t>> parked_total
      = std::make_shared<std::atomic<std::size_t>>(0);
  /// Queue creations, one at a time.
  async_mutex gate;
  /// Pops waiting for their queue's creation, by lease id: true once
  /// cancelled (answered empty instead of handed to the queue).
  std::unordered_map<std::string, bool> creating;
  /// The queues' records as last configured (namespace, task, priority).
  std::map<std::string, storage::queue_record> records;
  /// Parked namespace pops, and the broker's one timer for them.
  core::parking_lot<namespace_pop_request, namespace_pop_reply,
                    promise<namespace_pop_reply>>
      parked;
  core::one_timer<mono_time> timer;
  /// Transactions with a client id in flight (broker_txn.cpp), by (home
  /// queue, id) as their stored answers are, with the promises of repeats
  /// that arrived meanwhile (they get the first one's answer).
  std::map<std::pair<std::string, std::string>, std::vector<promise<txn_reply>>>
      txn_in_flight;
  /// Queue deaths allowed before the broker gives up (supervise.hpp), and
  /// the dead queues whose respawn waits for its barrier.
  restart_budget restarts;
  std::set<caf::actor_addr> restarting;
  /// Transaction stages open on each queue (staged, not settled), and the
  /// respawns of dead queues that wait for them.
  core::open_stages<std::function<void()>> stages;
  /// The live queues' names by id (broker_node.cpp: a lease id and a
  /// partition uuid carry their queue's id).
  std::unordered_map<std::uint64_t, std::string> name_of_id;
  /// Trace reads by name running beside the broker (broker_traces.cpp).
  std::size_t trace_readers = 0;
  /// Cluster mode (broker_slots.cpp): per slot, whether its queues run
  /// here, and a count of its starts and stops (a start that finds the
  /// count moved was overtaken).
  std::vector<slot_run> slot_runs;
  std::vector<std::uint64_t> slot_turns;
  /// Per slot, the epoch it was last loaded in: its queues' term, and the
  /// term of the broker's own writes of it (0 on one node).
  std::vector<std::uint64_t> slot_terms;
};

using broker_ptr = broker_actor::stateful_pointer<broker_state>;

// -- shared between the broker's files --------------------------------------

// Slots (broker_slots.cpp; cluster mode only, one node serves every slot).

/// Why this node does not serve slot `s` now (`not_leader` naming the
/// leader, `unavailable` while none is known or its queues load); none
/// when it does.
std::optional<api_error> slot_refusal(broker_ptr self, slot_t s);
/// The same for the slot of queue `name`.
std::optional<api_error> name_refusal(broker_ptr self, const std::string& name);
/// The same for the slot a partition uuid or a lease id carries.
std::optional<api_error> id_refusal(broker_ptr self, const std::string& id);
/// The one slot of `names`, refused with `cross_slot` when they span
/// several in cluster mode, or with the slot's refusal.
std::optional<api_error> one_slot(broker_ptr self,
                                  const std::vector<std::string>& names);
/// The slots whose queues run here (every slot on one node).
std::vector<slot_t> served_slots(broker_ptr self);
/// Narrows a DLQ filter to what this node serves: the named queue's slot
/// must be served (else its refusal), and without a queue only the served
/// slots' queues are read.
std::optional<api_error> scope_dlq(broker_ptr self, core::dlq_filter& f);
/// A transaction's one slot (after `locate_txn_acks`): `cross_slot` over
/// several, or its slot's refusal.
std::optional<api_error> txn_slot(broker_ptr self,
                                  const core::txn_request& req);
/// The term of a transaction's one slot as it starts (after `txn_slot`):
/// its commit carries it, so one that ran across a stop of its slot is
/// refused.
std::uint64_t txn_term(broker_ptr self, const core::txn_request& req);
/// Loads slot `s`'s queues for serving in `epoch`, or stops them (0).
void on_slot(broker_ptr self, slot_t s, std::uint64_t epoch);
/// The term a write of slot `s` made now carries (`write_batch::term`):
/// the epoch its queues were loaded in, `no_term` on one node.
std::uint64_t slot_term(broker_ptr self, slot_t s);

api_error queue_not_found();

expected<void> add_queue(broker_ptr self, const storage::queue_record& rec,
                         std::vector<storage::partition_record> partitions);

void restart_queue(broker_ptr self, const std::string& name,
                   const caf::error& why);

storage::queue_record new_queue_record(broker_ptr self,
                                       const std::string& name);

void ensure_queues(broker_ptr self, std::vector<std::string> names,
                   std::function<void(std::optional<api_error>)> k);

/// The coordinator and the id of live queue `name`, if it exists.
std::optional<queue_actor> find_queue(broker_ptr self, const std::string& name);
std::optional<storage::queue_id> queue_id_of(broker_ptr self,
                                             const std::string& name);

/// A transaction stage on queue `name` settled (or was given up): a respawn
/// of the queue waiting for its open stages may go.
void stage_closed(broker_ptr self, const std::string& name);

/// Runs transaction `req` (semantics.md §10, docs/transactions.md) and
/// answers it: at once (a refusal, a stored answer) or later.
caf::result<txn_reply> run_transaction(broker_ptr self, core::txn_request req);

broker_actor::behavior_type broker(broker_ptr self, broker_config cfg,
                                   storage::catalog cat);

caf::result<queue_push_reply> on_push(broker_ptr self,
                                      std::vector<broker_push_item>& items);

caf::result<dlq_list_reply> on_dlq_list(broker_ptr self,
                                        const core::dlq_query& q);

caf::result<dlq_count_reply> on_dlq_delete(broker_ptr self,
                                           const core::dlq_filter& f);

caf::result<dlq_count_reply> on_requeue(broker_ptr self,
                                        const core::dlq_filter& f);

caf::result<configure_reply> on_configure(broker_ptr self,
                                          configure_request& req);

queues_reply describe(broker_ptr self, const std::optional<std::string>& only);

/// A message by partition uuid and transactionId (via its queue): `k`
/// gets the answer (also an unknown partition's `not_found`).
void find_then(broker_ptr self, const find_request& req,
               std::function<void(find_reply)> k);

caf::result<find_reply> on_find(broker_ptr self, const find_request& req);

caf::result<trace_put_reply> on_trace_put(broker_ptr self,
                                          trace_put_request& req);

caf::result<trace_list_reply> on_trace_list(broker_ptr self,
                                            const find_request& req);

caf::result<trace_named_reply> on_trace_named(broker_ptr self,
                                              const trace_named_request& req);

caf::result<trace_names_reply> on_trace_names(broker_ptr self,
                                              const trace_names_request& req);

caf::result<groups_reply> on_groups(broker_ptr self, const groups_request& req);

caf::result<delete_group_reply>
on_delete_group(broker_ptr self, const delete_group_request& req);

void reap(broker_ptr self, storage::queue_id q);

caf::result<delete_queue_reply> on_delete_queue(broker_ptr self,
                                                const std::string& name);

caf::result<seek_reply> on_seek(broker_ptr self, const std::string& queue,
                                seek_request& req);

caf::result<sub_update_reply>
on_sub_update(broker_ptr self, const std::string& group, storage::micros ts);

void try_namespace(broker_ptr self, const namespace_pop_request& req,
                   std::function<void(namespace_pop_reply)> done);

void arm(broker_ptr self);

void wake(broker_ptr self, const std::vector<std::string>& queues);

void on_timeout(broker_ptr self, std::uint64_t id);

caf::result<namespace_pop_reply> on_namespace_pop(broker_ptr self,
                                                  namespace_pop_request& req);

/// Whether `q` is still the coordinator serving queue `name`: not deleted,
/// replaced or restarting since (a part it sealed may still be written).
bool serving(broker_ptr self, const std::string& name, const queue_actor& q);

/// Pushes sealed by their queues for ONE batch the broker submits (a push
/// spanning queues, a transaction's pushes; broker_push.cpp): per queue,
/// who sealed, its seal (batch and parts) and what it answers once durable.
struct queue_seals {
  std::vector<std::string> queues;
  std::vector<queue_actor> by;
  std::vector<submission> parts;
  std::vector<queue_push_reply> results;
  /// The first failure; the first queue that answered queue_full, and why.
  std::optional<api_error> failure;
  std::optional<std::pair<std::size_t, std::string>> full;
};

/// Seals `items_of(k)` on each live queue `s->queues[k]`, then calls
/// `done`; a queue not live fails ("queue <name> vanished").
void seal_queues(broker_ptr self, std::shared_ptr<queue_seals> s,
                 std::function<std::vector<push_item>(std::size_t)> items_of,
                 std::function<void()> done);

/// Moves every seal of `s` into `into` (mutations, then parts); none moved
/// and the error when a queue that sealed is not `serving` any more (`what`
/// names the request).
std::optional<api_error> take_seals(broker_ptr self, queue_seals& s,
                                    submission& into, const char* what);

/// Gives up the seals of `s` not taken.
void drop_seals(broker_ptr self, queue_seals& s);

void forget_queue(broker_ptr self, const std::string& name);

caf::result<std::vector<located_ack_reply>>
on_located_ack(broker_ptr self, std::vector<located_ack>& acks);

caf::result<lease_extend_reply> on_extend_lease(broker_ptr self,
                                                const std::string& id,
                                                std::chrono::milliseconds by);

caf::result<bool> on_release_lease(broker_ptr self, const std::string& id);

std::optional<core::txn_result> locate_txn_acks(broker_ptr self,
                                                core::txn_request& req);

void on_cancel(broker_ptr self, const std::string& token,
               const std::optional<std::string>& queue);

// -- routing -----------------------------------------------------------------

/// Forwards a request to queue `name`, `q`. For a queue in a namespace the
/// answer passes through here, and wakes the parked namespace pops it may
/// serve when `woke(answer)`; `fail(error)` answers an unreachable queue.
template <class Reply, class Woke, class Fail, class... Ts>
caf::delegated<Reply> via_queue(broker_ptr self, const std::string& name,
                                const queue_actor& q, Woke woke, Fail fail,
                                Ts&&... xs) {
  // A queue without a namespace serves no namespace pop; for one with a
  // namespace the answer passes here even when nothing waits now: a pop
  // may park while the request is on its way.
  auto rec = self->state.records.find(name);
  if (rec == self->state.records.end() || rec->second.name_space.empty())
    return self->delegate(q, std::forward<Ts>(xs)...);
  auto rp = promise_for<Reply>(self);
  self->request(q, caf::infinite, std::forward<Ts>(xs)...)
      .then(
          [self, rp, woke, name](Reply& r) mutable {
            bool wakes = woke(r);
            rp.deliver(std::move(r));
            if (wakes)
              wake(self, {name});
          },
          [rp, fail](caf::error& err) mutable { rp.deliver(fail(err)); });
  return {};
}

} // namespace spool::actors::broker_detail
