#pragma once

// The queue coordinator's state and the pieces its files share (internal to
// actors/queue/): queue_actor.cpp holds the behaviour, the group gates and
// the long-poll timer; queue_partitions.cpp the partitions (creation,
// respawn, the stages open on them) and configure; queue_pop.cpp pops,
// wake-ups and registration; queue_claim.cpp claim in the append;
// queue_push.cpp pushes, maxSize and acks; queue_seek.cpp seeks;
// queue_leases.cpp leases by id; queue_admin.cpp listings, group deletion,
// the idle sweep, queue deletion, purge and the subscription update;
// queue_dlq.cpp DLQ delete, requeue and retention.

#include "actors/create_missing.hpp"
#include "actors/fan_out.hpp"
#include "actors/partition/partition_actor.hpp"
#include "actors/promise.hpp"
#include "actors/queue/queue_actor.hpp"
#include "actors/supervise.hpp"
#include "actors/write.hpp"
#include "core/dlq/dlq_core.hpp"
#include "core/limits/names.hpp"
#include "core/push/push_items.hpp"
#include "core/queue/async_mutex.hpp"
#include "core/queue/candidates.hpp"
#include "core/queue/claim.hpp"
#include "core/queue/group_deletion.hpp"
#include "core/queue/leases.hpp"
#include "core/queue/max_size.hpp"
#include "core/queue/one_timer.hpp"
#include "core/queue/open_stages.hpp"
#include "core/queue/parking_lot.hpp"
#include "storage/segment.hpp"
#include "storage/tables.hpp"
#include "vocab/slot.hpp"
#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <list>
#include <map>
#include <memory>
#include <spdlog/spdlog.h>
#include <unordered_map>

namespace spool::actors::queue_detail {

using core::async_mutex;

struct partition_entry {
  /// The record as last read: its name, id and uuid never change; the rest
  /// is the actor's (read again from the store at each spawn).
  storage::partition_record rec;
  /// None until its first contact (`live`): recovery and creation spawn
  /// nothing (issue 38).
  partition_actor actor;
  std::size_t index = 0; ///< in `ring`
  /// The last offset of the pushes this queue settled (a lower bound of
  /// what readers may see soon; compared with empty-scan watermarks).
  storage::offset last{-1};
  /// Died; its respawn is pending (`restart_partition`). A push sealing on
  /// it opens no stage there: it cannot store anything through it, and a
  /// stream of such pushes must not hold the respawn off.
  bool dead = false;
  /// Passivation (queue_passivate.cpp): the last contact; its place in
  /// `lru` while live and not asked; asked to stop, and contacted since.
  mono_time last_contact{};
  std::list<std::string>::iterator lru_at{};
  bool in_lru = false;
  bool stopping = false;
  bool touched = false;
};

struct push_run;

struct queue_state {
  static inline const char* name = "spool.queue";
  queue_config cfg;
  std::map<std::string, partition_entry> partitions;
  /// Partition names by partition id (a part's key names its partition by
  /// id; partitions never leave a live queue).
  std::unordered_map<std::uint64_t, std::string> names_by_id;
  /// Partition names by uuid (an ack, a transaction's ack and a find name
  /// a partition by the wire's `partitionId`; the broker routed it here by
  /// the queue id the uuid carries).
  std::unordered_map<std::string, std::string> names_by_uuid;
  /// The live partitions not being asked to stop, least recently
  /// contacted first (passivation), and the sweep's one timer.
  std::list<std::string> lru;
  core::one_timer<mono_time> passivation_timer;
  std::size_t asking = 0; ///< partitions asked to stop, not answered yet
  /// This queue's partitions in the node's count.
  std::optional<gauge_share> counted;
  /// Partition names by their live actor (its exit finds its entry).
  std::unordered_map<caf::actor_addr, std::string> names_by_actor;
  /// Partition names in creation order (the rotation ring).
  std::vector<std::string> ring;
  /// Per group: where its next wildcard pop starts in `ring`.
  core::rotation rotation;
  /// Parked long-poll pops (served in arrival order).
  core::parking_lot<queue_pop_request, queue_pop_reply,
                    promise<queue_pop_reply>>
      parked;
  /// Deleted: it lives on only to answer requests in flight; a pop that
  /// still reaches it is answered at once, empty (the queue has no
  /// partitions any more), and registers nothing.
  bool deleted = false;
  core::one_timer<mono_time> timer;
  /// The DLQ sweep's timer (wall µs).
  core::one_timer<storage::micros> sweep_timer;
  bool sweeping = false;    ///< a sweep's delete is being written
  bool sweep_again = false; ///< the timer fired while sweeping
  /// Partition creations and option changes, one at a time.
  async_mutex gate;
  /// maxSize: one push at a time from its size check to its seal.
  async_mutex size_gate;
  /// When the next groupIdleSeconds sweep runs (the option is > 0).
  std::optional<mono_time> next_sweep;
  /// The subscription records of the groups registered here, as stored.
  std::unordered_map<std::string, storage::subscription_record> subs;
  /// Per group, the partitions its wildcard pops ask (empty-scan
  /// watermarks).
  core::candidate_set candidates;
  /// Per group: its registration, deletions and seeks, one at a time (none
  /// interleaves with another of the same group).
  /// (Shared: a gate stays alive while its waiters run; an idle one is
  /// dropped, so group names come and go without leaving a gate behind.)
  std::unordered_map<std::string, std::shared_ptr<async_mutex>> group_gates;
  /// Pops waiting for their group's registration, by lease id: true once
  /// cancelled (answered empty instead of served when it is done).
  std::unordered_map<std::string, bool> registering;
  /// Partition deaths allowed before the queue gives up (supervise.hpp).
  restart_budget restarts;
  /// Stages (a transaction's acks, a seek, a push sealed and its claims)
  /// open on each partition, and the dead partitions whose respawn waits
  /// for them (by the dead actor's address).
  core::open_stages<caf::actor_addr> stages;
  /// The `registered_at` stamps of this queue's registrations.
  core::registration_clock registrations;
  /// The leases this queue's pops granted, by id (queue_leases.cpp).
  core::lease_directory leases;
  /// Pushes prepared for a batch the broker submits, by their part's key
  /// (partition, first offset), until the writer settles them.
  std::map<std::pair<std::uint64_t, std::int64_t>, std::shared_ptr<push_run>>
      prepared_pushes;
  /// Subscription updates held under their group's gate until settled: the
  /// record as it will be stored.
  std::unordered_map<std::string, storage::subscription_record> sub_updates;
};

using queue_ptr = queue_actor::stateful_pointer<queue_state>;

// -- shared between the queue's files ----------------------------------------

struct push_run {
  std::vector<std::string> names;              ///< partitions, first-seen order
  std::vector<std::vector<std::size_t>> items; ///< item indices per partition
  std::vector<std::vector<storage::frame>> frames;
  /// Copies of the first frames per partition, kept while pops are parked
  /// (claim in the append: queue_claim.cpp); empty otherwise.
  std::vector<std::vector<storage::frame>> copies;
  /// A push of this queue alone (`on_push`): it may carry claims.
  bool may_claim = false;
  std::vector<seal_reply> seals; ///< per partition (no part: nothing sealed)
  /// The partitions the push counts as an open stage of the queue on, from
  /// its seal until the push settles (`finish`): one dying between its
  /// seal and the batch's write is respawned after that write, from the
  /// record it wrote (`open_stages`). A dead one is not counted.
  std::vector<std::string> opened;
  std::optional<api_error> failure;
  std::size_t item_count = 0;
  /// Called once every partition sealed (or the push failed before).
  std::function<void(std::shared_ptr<push_run>)> prepared;
};

/// Writes a sealed push's batch, with the leases of the parked pops it
/// serves (claim in the append: each staged by its cursor on the sealed
/// frames, answered once the batch is durable, put back if it fails);
/// `done` gets the write's error.
void write_push(queue_ptr self, std::shared_ptr<push_run> run, submission sub,
                std::function<void(std::optional<api_error>)> done);

/// Tells the queue's watcher (the broker) `xs`, if it has one.
template <class... Ts>
void tell_watcher(queue_ptr self, Ts&&... xs) {
  auto& w = self->state.cfg.watcher;
  if (!w)
    return;
  if (auto h = caf::actor_cast<queue_watcher>(w))
    self->send(h, std::forward<Ts>(xs)...);
}

/// A partition's share of the queue's pop `req`: `batch` frames and
/// `max_bytes`.
inline pop_request share_of(const queue_pop_request& req, std::size_t batch,
                            std::size_t max_bytes) {
  return {req.group, batch, max_bytes, req.lease_id, req.auto_ack};
}

/// The claim of pop `req` on partition `name`, as its answer lists it;
/// noted here first (the group's rotation for a wildcard pop, the lease).
partition_delivery note_claim(queue_ptr self, const queue_pop_request& req,
                              const std::string& name, pop_reply reply);

async_mutex& group_gate(queue_ptr self, const std::string& group);

void leave_group_gate(queue_ptr self, const std::string& group);

/// Adds partition `rec` to the queue's directory; its actor is spawned at
/// its first contact (`live`).
void add_partition(queue_ptr self, const storage::partition_record& rec);

/// The partition's actor, spawned from its stored record if it has none
/// (every message to a partition goes to this handle). None (a null
/// handle) in a deleted queue, or when the spawn failed (the store
/// unreadable; the queue ends): a request to it fails with
/// `invalid_argument`, but a delegation or a send is dropped, so those
/// check it first.
partition_actor live(queue_ptr self, partition_entry& entry);

void end_queue(queue_ptr self, caf::error why);

void stage_closed(queue_ptr self, const std::string& name);

void on_stage_settled(queue_ptr self, const core::part_key& key,
                      core::part_outcome outcome);

void restart_partition(queue_ptr self, const std::string& name,
                       const caf::error& why);

void arm(queue_ptr self);

void run_pop(queue_ptr self, const queue_pop_request& req,
             std::function<void(queue_pop_reply)> done);

void wake_for(queue_ptr self, const std::vector<std::string>& partitions);

void wake_for(queue_ptr self, const std::vector<std::string>& partitions,
              const std::string& group);

caf::result<queue_pop_reply> on_pop(queue_ptr self, queue_pop_request& req);

void ensure_partitions(queue_ptr self, std::vector<std::string> names,
                       std::function<void(std::optional<api_error>)> k);

caf::result<configure_reply> on_configure(queue_ptr self,
                                          configure_request& req);

/// Passivation (docs/architecture.md): `entry` was contacted now (it goes
/// to the back of the LRU order, or is marked touched while asked to stop).
void contacted(queue_ptr self, partition_entry& entry);

/// Arms the passivation sweep for the oldest contact's idle time, or now
/// when the node is over its cap of live partition actors.
void plan_passivation(queue_ptr self);

/// The sweep's timer: asks the partitions idle too long (or the oldest,
/// over the cap) to stop, a bounded number per tick.
void on_passivation_tick(queue_ptr self, std::uint64_t id);

/// Spawns the partitions that hold frames when the queue's options have
/// a retention rule: retention runs on each partition's timer, so one
/// never spawned would never run it (until a per-queue schedule over the
/// stored rows runs it without the actors, issue 38).
void spawn_for_retention(queue_ptr self);

/// Every partition's actor, in ring order (each spawned if it has none:
/// the queue-wide operations still visit every partition).
std::vector<partition_actor> all_partitions(queue_ptr self);

caf::result<groups_reply> on_groups(queue_ptr self, const groups_request& req);

caf::result<delete_group_reply>
on_delete_group(queue_ptr self, const delete_group_request& req);

void plan_sweep(queue_ptr self);

void sweep_idle(queue_ptr self);

caf::result<delete_queue_reply> on_delete_queue(queue_ptr self);

caf::result<purge_reply> on_purge(queue_ptr self, const purge_request& req);

caf::result<dlq_count_reply>
on_requeue(queue_ptr self, const std::string& group,
           std::vector<storage::dlq_entry>& entries);

caf::result<dlq_count_reply> on_dlq_delete(queue_ptr self,
                                           const dlq_delete_request& req);

void arm_sweep(queue_ptr self, storage::micros due);

void lease_granted(queue_ptr self, const std::string& id,
                   const std::string& group, const std::string& partition,
                   mono_time expires);

void lease_ended(queue_ptr self, const std::string& id,
                 const std::string& partition);

caf::result<lease_extend_reply> on_extend(queue_ptr self, const std::string& id,
                                          std::chrono::milliseconds by);

caf::result<bool> on_release(queue_ptr self, const std::string& id);

caf::result<sub_update_part>
on_sub_update(queue_ptr self, const std::string& group, storage::micros ts);

void settle_sub_update(queue_ptr self, const std::string& group, bool durable);

void on_sweep(queue_ptr self, std::uint64_t id);

caf::result<queue_push_reply> on_push(queue_ptr self,
                                      std::vector<push_item>& items);

caf::result<prepared_push> on_prepare(queue_ptr self,
                                      std::vector<push_item>& items);

/// The writer settled the queue's part of a prepared push.
void on_prepared_settled(queue_ptr self, const core::part_key& key,
                         core::part_outcome outcome);

/// Acks that name their partition by uuid (the wire's), one reply each in
/// input order; an unknown uuid answers not_found.
caf::result<std::vector<located_ack_reply>>
on_located_ack(queue_ptr self, std::vector<located_ack>& acks);

/// The partition `ref` names (by uuid when it has one), if it is one of
/// this queue's (nullptr otherwise).
partition_entry* find_partition(queue_state& st, const partition_ref& ref);

caf::result<seek_reply> on_seek(queue_ptr self, seek_request& req);

} // namespace spool::actors::queue_detail
