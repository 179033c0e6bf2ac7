// A queue's pushes (one batch per push, its partitions' seals as parts the
// writer settles; a push across queues prepared here as a part of the
// broker's batch), maxSize, and acks.

#include "actors/durable.hpp"
#include "actors/queue/queue_state.hpp"
#include "core/push/claim_frames.hpp"

#include <utility>

namespace spool::actors::queue_detail {

// -- push ---------------------------------------------------------------------

namespace {

/// Calls the run's `prepared` once and lets go of it (a prepared run waits
/// in `prepared_pushes` for its settle and must not hold a promise).
void done_preparing(const std::shared_ptr<push_run>& run) {
  auto prepared = std::move(run->prepared);
  run->prepared = nullptr;
  prepared(run);
}

std::vector<part_ref> parts_of(queue_ptr self, const push_run& run) {
  std::vector<part_ref> parts;
  for (std::size_t k = 0; k < run.seals.size(); ++k)
    if (auto& key = run.seals[k].part)
      parts.push_back(part_ref{
          self->state.partitions.at(run.names[k]).actor.address(), *key});
  return parts;
}

/// Every sealed mutation of the push, as one batch with the seals as its
/// parts. The mutations move out of the seals: settling needs only their
/// offsets and ids, not the bytes.
submission submission_of(queue_ptr self, push_run& run) {
  submission s;
  for (auto& seal : run.seals)
    for (auto& m : seal.sealed.mutations)
      s.batch.mutations.push_back(std::move(m));
  s.parts = parts_of(self, run);
  return s;
}

/// The answer of a sealed push, should its batch be durable.
queue_push_reply results_of(queue_ptr self, push_run& run) {
  queue_push_reply reply;
  reply.results.resize(run.item_count);
  reply.targets.reserve(run.names.size());
  for (std::size_t k = 0; k < run.names.size(); ++k) {
    auto& entry = self->state.partitions.at(run.names[k]);
    reply.created_at
        = std::max(reply.created_at, run.seals[k].sealed.created_at);
    reply.targets.push_back(push_target{self->state.cfg.record.name,
                                        run.names[k], entry.rec.uuid,
                                        self->state.cfg.record.id});
    auto target = static_cast<std::uint32_t>(k);
    for (std::size_t j = 0; j < run.items[k].size(); ++j)
      reply.results[run.items[k][j]]
          = push_item_result{target, run.seals[k].sealed.results[j]};
  }
  return reply;
}

/// Applies the batch's outcome here (the seals were settled by the writer,
/// or given up by the caller) and builds the answer.
queue_push_reply finish(queue_ptr self, push_run& run,
                        std::optional<api_error> failure) {
  // After the settles (the writer's, or the caller's abort): a respawn
  // waiting for the push starts here.
  for (auto& name : std::exchange(run.opened, {}))
    stage_closed(self, name);
  if (failure)
    return push_failed(std::move(failure));
  auto reply = results_of(self, run);
  std::vector<std::string> grown;
  for (std::size_t k = 0; k < run.seals.size(); ++k) {
    auto& s = run.seals[k].sealed;
    if (!run.seals[k].part)
      continue; // only duplicates
    auto& entry = self->state.partitions.at(run.names[k]);
    entry.last = std::max(entry.last, s.next - 1);
    self->state.candidates.pushed(entry.index, entry.last);
    grown.push_back(run.names[k]);
  }
  wake_for(self, grown);
  // Parked namespace pops wait in the broker.
  if (!grown.empty() && !self->state.cfg.record.name_space.empty())
    tell_watcher(self, push_atom::value, self->state.cfg.record.name);
  return reply;
}

/// Seals every partition's frames (at most `gather_window` seals in flight,
/// so a push to thousands of partitions stays linear), then calls
/// `prepared`.
void seal_all(queue_ptr self, std::shared_ptr<push_run> run) {
  if (run->may_claim && !self->state.parked.empty()) // for `write_push`
    run->copies = core::claim_copies(run->frames);
  gather<seal_reply>(
      run->names.size(),
      [self, run](std::size_t k) {
        // Counted as the seal is sent (a window of them at a time): the
        // partition may have died or come back since the push began.
        auto& name = run->names[k];
        auto& entry = self->state.partitions.at(name);
        if (!entry.dead) {
          self->state.stages.opened(name);
          run->opened.push_back(name);
        }
        return self->request(live(self, entry), caf::infinite, seal_atom::value,
                             std::move(run->frames[k]));
      },
      [run](std::vector<fanned<seal_reply>> slots) {
        for (auto& s : slots) {
          run->seals.push_back(or_failed(s));
          if (run->seals.back().failure && !run->failure)
            run->failure = run->seals.back().failure;
        }
        done_preparing(run);
      });
}

/// maxSize (semantics.md §2): calls `go` if the push fits the queue's
/// retained frames, after deleting segments every interested group has
/// committed past if needed; otherwise fails the push with "Queue <name> is
/// full" and nothing of it stored, or with the error of a partition that
/// did not answer its size, or of a trim step that failed (the room might
/// have been made: a retry may fit).
void fit(queue_ptr self, std::shared_ptr<push_run> run,
         std::function<void()> go) {
  auto& st = self->state;
  auto max = st.cfg.record.options.max_size;
  auto incoming = static_cast<std::int64_t>(run->item_count);
  auto fail = [run](api_error err) {
    run->failure = std::move(err);
    done_preparing(run);
  };
  if (incoming > max)
    return fail(core::queue_full(st.cfg.record.name));
  auto parts = all_partitions(self);
  fan_out<std::int64_t>(
      self, parts,
      [self, run, parts, max, incoming, go,
       fail](std::vector<fanned<std::int64_t>> sizes) {
        std::int64_t total = 0;
        for (auto& s : sizes) {
          if (!s.reply) { // not counted as empty: the push might not fit
            auto err = unreachable(s.error, "partition");
            return fail(make_error(err.code, "Queue ",
                                   self->state.cfg.record.name,
                                   ": size check failed: ", err.message));
          }
          total += *s.reply;
        }
        using outcome = core::room_check::outcome;
        auto room = core::check_room(max, total, incoming);
        if (room.result == outcome::fits)
          return go();
        if (room.result == outcome::full)
          return fail(core::queue_full(self->state.cfg.record.name));
        fan_out<trim_reply>(
            self, parts,
            [self, total, max, incoming, go,
             fail](std::vector<fanned<trim_reply>> trims) {
              std::vector<core::trim_share> shares;
              for (auto& t : trims)
                shares.push_back(or_failed(t));
              if (auto err = core::after_trims(self->state.cfg.record.name, max,
                                               total, incoming, shares))
                return fail(std::move(*err));
              go();
            },
            trim_atom::value, room.need);
      },
      size_atom::value);
}

/// Creates missing partitions (durably), seals every
/// partition's frames, then calls `prepared` (also on failure, with
/// `run->failure` set and nothing sealed left unsettled by the caller).
void prepare(queue_ptr self, std::vector<push_item>& items,
             std::function<void(std::shared_ptr<push_run>)> prepared,
             bool may_claim = false) {
  auto& st = self->state;
  auto run = std::make_shared<push_run>();
  run->may_claim = may_claim;
  run->item_count = items.size();
  run->prepared = std::move(prepared);
  // The items were checked once, by the broker (`core::check_push_item`,
  // or `core::check_txn` for a transaction's push): nothing of a bad push
  // reaches a queue.
  auto groups = core::group_by_name(
      items.size(),
      [&](std::size_t i) -> const std::string& { return items[i].partition; });
  run->frames = core::distribute<storage::frame>(
      groups, [&](std::size_t i) -> storage::frame&& {
        return std::move(items[i].frame);
      });
  run->names = std::move(groups.names);
  run->items = std::move(groups.items);
  if (run->names.empty())
    return done_preparing(run);
  // Partitions met for the first time are created durably first.
  auto go = [self, run] {
    ensure_partitions(self, run->names,
                      [self, run](std::optional<api_error> failure) {
                        if (failure) {
                          run->failure = std::move(failure);
                          return done_preparing(run);
                        }
                        seal_all(self, run);
                      });
  };
  if (st.cfg.record.options.max_size <= 0)
    return go();
  // maxSize: pushes pass one at a time from the size check to the end of
  // sealing (sealing reserves their offsets, so the next check counts them).
  auto inner = std::move(run->prepared);
  run->prepared = [self, inner](std::shared_ptr<push_run> r) {
    self->state.size_gate.leave();
    inner(std::move(r));
  };
  st.size_gate.wait([self, run, go] {
    self->state.size_gate.enter();
    fit(self, run, go);
  });
}

/// A push that failed before its write: its seals are given up, and it
/// ends with its failure.
queue_push_reply give_up(queue_ptr self, push_run& run) {
  abort_parts(self, self->state.cfg.node.writer, parts_of(self, run));
  return finish(self, run, run.failure);
}

} // namespace

caf::result<queue_push_reply> on_push(queue_ptr self,
                                      std::vector<push_item>& items) {
  auto rp = promise_for<queue_push_reply>(self);
  prepare(
      self, items,
      [self, rp](std::shared_ptr<push_run> run) mutable {
        if (run->failure)
          return rp.deliver(give_up(self, *run));
        auto sub = submission_of(self, *run);
        if (sub.batch.mutations.empty()) { // only duplicates of stored frames
          auto& cfg = self->state.cfg;
          after_durable(self, cfg.node, slot_of_id(cfg.record.id.value),
                        [rp, reply = finish(self, *run, std::nullopt)](
                            std::optional<api_error> failure) mutable {
                          rp.deliver(failure ? push_failed(std::move(failure))
                                             : std::move(reply));
                        });
          return;
        }
        write_push(self, run, std::move(sub),
                   [self, rp, run](std::optional<api_error> failure) mutable {
                     rp.deliver(finish(self, *run, std::move(failure)));
                   });
      },
      true);
  return rp.later();
}

caf::result<prepared_push> on_prepare(queue_ptr self,
                                      std::vector<push_item>& items) {
  auto rp = promise_for<prepared_push>(self);
  prepare(self, items, [self, rp](std::shared_ptr<push_run> run) mutable {
    auto& st = self->state;
    if (run->failure)
      return rp.deliver(
          prepared_push{{}, give_up(self, *run).failure, {}, {}, 0});
    auto outcome = results_of(self, *run);
    auto sub = submission_of(self, *run);
    if (sub.parts.empty()) {
      (void)finish(self, *run, std::nullopt); // only duplicates: done here
    } else {
      // The queue's own part, keyed as its first seal: its effects (the
      // wake, the candidates) run when the writer settles it.
      auto key = sub.parts.front().key;
      st.prepared_pushes.emplace(std::pair{key.partition, key.first}, run);
      part_ref mine{self->address(), key};
      self->send(st.cfg.node.writer, hold_atom::value, mine);
      sub.parts.push_back(std::move(mine));
    }
    rp.deliver(prepared_push{std::move(sub), std::nullopt,
                             std::move(outcome.results),
                             std::move(outcome.targets), outcome.created_at});
  });
  return rp.later();
}

void on_prepared_settled(queue_ptr self, const core::part_key& key,
                         core::part_outcome outcome) {
  auto& prepared = self->state.prepared_pushes;
  auto it = prepared.find(std::pair{key.partition, key.first});
  if (it == prepared.end())
    return; // not this incarnation's
  auto run = std::move(it->second);
  prepared.erase(it);
  std::optional<api_error> failure;
  if (outcome != core::part_outcome::durable)
    failure = make_error(errc::unavailable, "the push was not stored");
  (void)finish(self, *run, std::move(failure));
}

} // namespace spool::actors::queue_detail
