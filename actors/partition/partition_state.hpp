#pragma once

// The partition actor's state and the pieces its files share (internal to
// actors/partition/): partition_actor.cpp holds the behaviour, seal/settle,
// first contact and the cursors; partition_admin.cpp browse, listings,
// seeds, group deletion votes, the deletion stepper (purge, maxSize trims);
// partition_retention.cpp retention on its timer; partition_seek.cpp seeks.

#include "actors/cursor/cursor_actor.hpp"
#include "actors/fan_out.hpp"
#include "actors/partition/partition_actor.hpp"
#include "actors/promise.hpp"
#include "actors/supervise.hpp"
#include "actors/write.hpp"
#include "core/partition/retention.hpp"
#include "core/queue/async_mutex.hpp"
#include "core/queue/one_timer.hpp"
#include "storage/tables.hpp"
#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <map>
#include <memory>
#include <set>
#include <spdlog/spdlog.h>
#include <unordered_map>
#include <unordered_set>

namespace spool::actors::partition_detail {

using core::async_mutex;

struct partition_state {
  static inline const char* name = "spool.partition";
  partition_config cfg;
  std::unique_ptr<storage::partition_log> log;
  std::unordered_map<std::string, cursor_actor> cursors;
  /// Seals handed out for a caller's batch, by first offset, until the
  /// writer settles them (their mutations went to the caller).
  std::map<std::int64_t, storage::sealed_append> seals;
  /// Cursors stopped by the first phase of a group deletion, by group: the
  /// second phase reaches only these (never a cursor created since).
  std::unordered_map<std::string, cursor_actor> stopping;
  /// Deletions (purge, trim, retention): one run at a time.
  async_mutex deleting;
  /// Retention: the options' rules, the one timer (when it fires, wall µs,
  /// and its id), whether a run is going on, and the maxWait boundary told
  /// to the cursors (frames at or below it are overdue).
  core::retention_policy retention;
  core::one_timer<storage::micros> timer;
  bool retaining = false;
  storage::offset overdue{-1};
  /// Seeks staged here for groups without a live cursor (this partition's
  /// parts), until the writer settles them: the seek, and the row (or
  /// first-contact position) it was staged from.
  struct hold {
    held_seek seek;
    std::optional<storage::cursor_record> row;
    storage::offset start{-1};
  };
  std::unordered_map<std::string, hold> holds;
  /// Seeks staged by cursors here (group -> the cursor), until the writer
  /// settles this partition's mark of them: while one may move its group
  /// back, nothing counts as consumed by all (correction 13). `forward`: a
  /// held seek passed to the cursor spawned meanwhile, which hears the
  /// settle from here (the part is this partition's).
  /// `open` counts the marks not settled yet: the writer may settle an old
  /// one after the cursor staged again.
  struct live_seek {
    caf::actor_addr cursor;
    bool forward = false;
    std::size_t open = 0;
  };
  std::unordered_map<std::string, live_seek> live_seeks;
  /// Transactions and claims staged by cursors here, until the writer
  /// settles this partition's mark of them.
  std::unordered_map<std::string, live_seek> live_txns;
  /// Where the marks of a stage of kind `first` (`part_key`) are kept.
  std::unordered_map<std::string, live_seek>& live_of(std::int64_t first) {
    return first == core::part_key::seek_part ? live_seeks : live_txns;
  }
  /// Whether `group` has a seek or a transaction staged here.
  bool staged(const std::string& group) const {
    return live_seeks.contains(group) || live_txns.contains(group);
  }
  /// Groups whose cursor died, until the write barrier (supervise.hpp)
  /// answers: their next cursor reads a row every earlier write reached.
  std::unordered_set<std::string> respawning;
  /// Of those, the groups whose respawn barrier has not returned yet. A
  /// group whose dead cursor had staged a seek or a transaction (`staged`)
  /// also waits for its settle: its batch may be written after the barrier,
  /// and the new cursor must read the row it writes.
  std::unordered_set<std::string> barrier_pending;
  /// Cursor deaths allowed before the partition gives up.
  restart_budget restarts;
  /// This actor in the node's count of live partition actors.
  std::optional<gauge_share> counted;
  /// Messages this partition sent or routed to its cursors (every path to
  /// a cursor counts one): a passivation that saw it move while it asked
  /// the cursors keeps them (`on_passivate`).
  std::uint64_t contacts = 0;
  /// A passivation is asking the cursors.
  bool passivating = false;
};

using partition_ptr = partition_actor::stateful_pointer<partition_state>;

/// Where a group without a live cursor stands here: its stored row, or
/// (none stored) the position its first contact seeds.
struct stored_position {
  std::optional<storage::cursor_record> row;
  storage::offset start{-1}; ///< used only without a row
};

/// What the next deletion step may delete, given the frames freed so far:
/// rules tried in order until one admits a segment (none: the run ends; an
/// error, from the read the rules need: the run stops with it).
using step_rules = std::function<expected<std::vector<storage::retention_rule>>(
    std::int64_t freed)>;

/// The end of a deletion run: frames freed (how far the watermark moved),
/// writes made, and the error that stopped it, if any.
using steps_done = std::function<void(std::int64_t freed, std::size_t writes,
                                      std::optional<api_error>)>;

// -- shared between the files -------------------------------------------------

core::cursor_policy policy_of(const partition_state& st);

partition_view view_of(const storage::partition_log& log);

expected<storage::offset>
first_contact(partition_ptr self, storage::txn& t, const std::string& group,
              const std::optional<storage::subscription_record>& known = {});

expected<stored_position> read_position(partition_ptr self, storage::txn& t,
                                        const std::string& group);

expected<cursor_actor> cursor_for(partition_ptr self, const std::string& group);

/// A group's cursor staged a seek, a transaction or a claim (`parts`, none:
/// it staged nothing): recorded until the writer settles this partition's
/// mark of it, which joins the parts.
void mark_staged(partition_ptr self, const std::string& group,
                 const caf::actor_addr& cursor, std::vector<part_ref>& parts);

/// Asks the group's cursor `c` to stage (`xs`: a transaction's acks, a
/// seek, a claim) and answers its reply once this partition marked the
/// stage (`mark_staged`); through here, not delegated, so a death in
/// between respawns after the settle. A cursor that does not answer is
/// answered `lost(err)`.
template <class Reply, class Lost, class... Ts>
caf::result<Reply> stage_on(partition_ptr self, const cursor_actor& c,
                            const std::string& group, Lost lost, Ts&&... xs) {
  auto rp = promise_for<Reply>(self);
  self->request(c, caf::infinite, std::forward<Ts>(xs)...)
      .then(
          [self, rp, group, cursor = c.address()](Reply& r) mutable {
            mark_staged(self, group, cursor, r.parts);
            rp.deliver(std::move(r));
          },
          [rp, lost](caf::error& err) mutable { rp.deliver(lost(err)); });
  return rp.later();
}

/// The answer of a stage whose cursor did not answer (it died).
template <class Reply>
Reply cursor_restarting(const caf::error& err) {
  return failed<Reply>(make_error(errc::unavailable,
                                  "the group's cursor here is restarting (",
                                  caf::to_string(err), "); retry"));
}

void watermark_moved(partition_ptr self, storage::offset watermark);

seal_reply on_seal(partition_ptr self,
                   const std::vector<storage::frame>& frames);

void on_settled(partition_ptr self, const core::part_key& key,
                core::part_outcome outcome);

caf::result<stage_reply> on_stage(partition_ptr self, const std::string& group,
                                  std::vector<ack_request>& reqs);

caf::result<claim_reply> on_claim(partition_ptr self, std::int64_t first,
                                  const pop_request& req,
                                  std::vector<storage::stored_frame>& frames);

partition_actor::behavior_type partition(partition_ptr self,
                                         partition_config cfg);

browse_reply browse(partition_ptr self, const browse_request& req);

expected<std::vector<std::string>>
groups_here(partition_ptr self, const std::optional<std::string>& only);

caf::result<std::vector<cursor_info>>
on_groups(partition_ptr self, const std::optional<std::string>& only);

caf::result<vote_reply> on_delete_group(partition_ptr self,
                                        const std::string& group,
                                        storage::micros active_after);

void delete_steps(partition_ptr self, step_rules rules, steps_done done);

expected<std::optional<storage::offset>> consumed_by_all(partition_ptr self);

void trim(partition_ptr self, std::int64_t need, promise<trim_reply> rp);

void arm_retention(partition_ptr self, std::optional<storage::micros> due);

void retention_after_push(partition_ptr self);

void on_retention_timer(partition_ptr self, std::uint64_t id);

caf::result<storage::micros> on_oldest(partition_ptr self,
                                       const std::string& group);

/// Passivation (docs/architecture.md): whether this partition and every
/// cursor hold nothing but their stored rows; if so the cursors quit.
caf::result<bool> on_passivate(partition_ptr self);

caf::result<seek_stage> on_seek(partition_ptr self, const std::string& group,
                                const core::seek_target& target, bool dry_run,
                                bool no_wait);

} // namespace spool::actors::partition_detail
