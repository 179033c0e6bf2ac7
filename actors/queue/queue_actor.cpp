// Message flow.
//
// push: items are grouped by partition (request order kept per partition).
//   Missing partitions are created first (one durable batch), then every
//   partition seals its frames (seal_atom); the coordinator concatenates the
//   sealed mutations into ONE write batch (all or nothing across
//   partitions), sends it to the writer, settles each seal with the outcome,
//   answers, and wakes parked pops.
// pop: a named partition, or the wildcard: partitions in rotating order from
//   the group's position after its last claim; each asked in turn with what
//   is left of `batch`, until `partitions` claimed. Nothing delivered and
//   `wait`: the pop parks (ordered by arrival) until a push wakes it or the
//   queue's one timer reaches its deadline.
// ack: routed to the named partition; a released lease wakes parked pops.

#include "actors/queue/queue_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "actors/partition/partition_actor.hpp"
#include "storage/segment.hpp"

namespace spool::actors {

namespace {

struct partition_entry {
  storage::partition_record rec;
  partition_actor actor;
};

struct parked_pop {
  queue_pop_request req;
  caf::typed_response_promise<queue_pop_reply> rp;
  core::mono_time deadline;
};

struct queue_state {
  static inline const char* name = "spool.queue";
  queue_config cfg;
  std::map<std::string, partition_entry> partitions;
  /// Partition names in creation order (the rotation ring).
  std::vector<std::string> ring;
  /// Per group: the ring index after its last wildcard claim.
  std::unordered_map<std::string, std::size_t> next_pos;
  /// Parked pops by arrival id (served in that order).
  std::map<std::uint64_t, parked_pop> parked;
  std::uint64_t next_park_id = 0;
  std::optional<core::mono_time> armed;
  std::uint64_t timer_id = 0;
};

using queue_ptr = queue_actor::stateful_pointer<queue_state>;

storage::error writer_error(const caf::error& err) {
  return storage::make_error(storage::ec::io_error,
                             "actor unreachable: ", caf::to_string(err));
}

storage::expected<void> add_partition(queue_ptr self,
                                      const storage::partition_record& rec) {
  auto& st = self->state;
  partition_config pc;
  pc.node = st.cfg.node;
  pc.record = rec;
  pc.options = st.cfg.record.options;
  auto p = spawn_partition(self->system(), std::move(pc));
  if (!p)
    return std::move(p).err();
  self->link_to(*p);
  st.partitions.emplace(rec.name, partition_entry{rec, *p});
  st.ring.push_back(rec.name);
  return {};
}

// -- long poll ----------------------------------------------------------------

void arm(queue_ptr self) {
  auto& st = self->state;
  if (st.parked.empty())
    return;
  auto earliest = std::min_element(
      st.parked.begin(), st.parked.end(),
      [](auto& a, auto& b) { return a.second.deadline < b.second.deadline; });
  auto deadline = earliest->second.deadline;
  if (st.armed && *st.armed <= deadline)
    return;
  st.armed = deadline;
  auto delay = std::max(deadline - self->clock().now(),
                        core::mono_clock::duration::zero());
  self->delayed_send(self, delay, timeout_atom::value, ++st.timer_id);
}

void on_timeout(queue_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.timer_id)
    return;
  st.armed.reset();
  auto now = self->clock().now();
  for (auto it = st.parked.begin(); it != st.parked.end();) {
    if (it->second.deadline <= now) {
      it->second.rp.deliver(queue_pop_reply{});
      it = st.parked.erase(it);
    } else {
      ++it;
    }
  }
  arm(self);
}

// -- pop ----------------------------------------------------------------------

/// One pop in progress over its candidate partitions.
struct pop_run {
  queue_pop_request req;
  std::vector<std::string> candidates;
  std::size_t next = 0;
  std::size_t remaining = 0;
  std::size_t bytes_left = SIZE_MAX;
  queue_pop_reply reply;
  std::vector<core::empty_reason> reasons;
  std::function<void(queue_pop_reply)> done;
};

core::empty_reason best_reason(const std::vector<core::empty_reason>& rs) {
  for (auto r : {core::empty_reason::delayed, core::empty_reason::window_buffer,
                 core::empty_reason::lease_held})
    if (std::find(rs.begin(), rs.end(), r) != rs.end())
      return r;
  return rs.empty() ? core::empty_reason::no_partition
                    : core::empty_reason::empty;
}

void step(queue_ptr self, std::shared_ptr<pop_run> run) {
  auto& st = self->state;
  auto& req = run->req;
  while (run->next < run->candidates.size() && run->remaining > 0
         && run->reply.claimed.size()
                < std::max<std::size_t>(req.partitions, 1)) {
    auto name = run->candidates[run->next++];
    auto it = st.partitions.find(name);
    if (it == st.partitions.end())
      continue;
    pop_request pr;
    pr.group = req.group;
    pr.batch = run->remaining;
    pr.max_bytes = run->bytes_left;
    pr.lease_id = req.lease_id;
    pr.auto_ack = req.auto_ack;
    auto uuid = it->second.rec.uuid;
    self->request(it->second.actor, caf::infinite, pop_atom::value, pr)
        .then(
            [self, run, name, uuid](pop_reply& r) {
              if (r.failure) {
                run->reply.failure = r.failure;
                run->done(std::move(run->reply));
                return;
              }
              if (r.messages.empty()) {
                run->reasons.push_back(r.reason);
              } else {
                std::size_t bytes = 0;
                for (auto& m : r.messages)
                  bytes += m.frame.data.payload.size();
                run->remaining -= std::min(run->remaining, r.messages.size());
                run->bytes_left -= std::min(run->bytes_left, bytes);
                if (!run->req.partition) {
                  auto& ring = self->state.ring;
                  auto pos = std::find(ring.begin(), ring.end(), name)
                             - ring.begin();
                  self->state.next_pos[run->req.group]
                      = static_cast<std::size_t>(pos) + 1;
                }
                run->reply.claimed.push_back({name, uuid, std::move(r)});
              }
              step(self, run);
            },
            [run](caf::error& err) {
              run->reply.failure = writer_error(err);
              run->done(std::move(run->reply));
            });
    return; // continue in the response handler
  }
  if (run->reply.claimed.empty())
    run->reply.reason = best_reason(run->reasons);
  run->done(std::move(run->reply));
}

/// Runs one pop over its candidates; `done` gets the reply.
void run_pop(queue_ptr self, const queue_pop_request& req,
             std::function<void(queue_pop_reply)> done) {
  auto& st = self->state;
  auto run = std::make_shared<pop_run>();
  run->req = req;
  run->remaining = std::max<std::size_t>(req.batch, 1);
  run->bytes_left = req.max_bytes;
  run->done = std::move(done);
  if (req.partition) {
    run->candidates.push_back(*req.partition);
  } else {
    auto start = st.next_pos[req.group];
    for (auto i : rotation_order(st.ring.size(), start))
      run->candidates.push_back(st.ring[i]);
  }
  step(self, run);
}

void wake(queue_ptr self) {
  auto& st = self->state;
  // Retry every parked pop in arrival order; still-empty ones park again
  // under their original id (so arrival order is kept).
  auto waiting = std::move(st.parked);
  st.parked.clear();
  for (auto& [id, p] : waiting) {
    auto pid = id;
    auto parked = std::make_shared<parked_pop>(std::move(p));
    run_pop(self, parked->req, [self, pid, parked](queue_pop_reply reply) {
      auto& st = self->state;
      if (reply.claimed.empty() && !reply.failure
          && self->clock().now() < parked->deadline) {
        st.parked.emplace(pid, std::move(*parked));
        arm(self);
        return;
      }
      parked->rp.deliver(std::move(reply));
    });
  }
}

caf::typed_response_promise<queue_pop_reply> on_pop(queue_ptr self,
                                                    queue_pop_request& req) {
  auto rp = self->make_response_promise<queue_pop_reply>();
  auto deadline = self->clock().now() + req.timeout;
  run_pop(self, req, [self, rp, req, deadline](queue_pop_reply reply) mutable {
    auto& st = self->state;
    bool park = reply.claimed.empty() && !reply.failure && req.wait
                && req.timeout.count() > 0;
    if (!park) {
      rp.deliver(std::move(reply));
      return;
    }
    if (st.parked.size() >= st.cfg.max_parked) {
      reply.failure = storage::make_error(storage::ec::shutting_down,
                                          "Server busy: too many parked pops");
      rp.deliver(std::move(reply));
      return;
    }
    st.parked.emplace(st.next_park_id++, parked_pop{req, rp, deadline});
    arm(self);
  });
  return rp;
}

// -- push ---------------------------------------------------------------------

struct push_run {
  std::vector<std::string> names;              ///< partitions, first-seen order
  std::vector<std::vector<std::size_t>> items; ///< item indices per partition
  std::vector<std::vector<storage::frame>> frames;
  std::vector<sealed_ptr> seals;
  std::size_t waiting = 0;
  std::optional<storage::error> failure;
  std::size_t item_count = 0;
  /// Called once every partition sealed (or the push failed before).
  std::function<void(std::shared_ptr<push_run>)> prepared;
};

void settle_all(queue_ptr self, push_run& run, bool durable) {
  for (std::size_t k = 0; k < run.seals.size(); ++k)
    if (run.seals[k])
      self->send(self->state.partitions.at(run.names[k]).actor,
                 settle_atom::value, run.seals[k], durable);
}

/// Every sealed mutation of the push, as one batch. The mutations move out
/// of the seals: settling needs only their offsets and ids, not the bytes.
storage::write_batch batch_of(push_run& run) {
  storage::write_batch batch;
  for (auto& s : run.seals)
    for (auto& m : s->mutations)
      batch.mutations.push_back(std::move(m));
  return batch;
}

/// The answer of a sealed push, should its batch be durable.
queue_push_reply results_of(queue_ptr self, push_run& run) {
  queue_push_reply reply;
  reply.results.resize(run.item_count);
  for (std::size_t k = 0; k < run.names.size(); ++k) {
    auto& entry = self->state.partitions.at(run.names[k]);
    reply.created_at = std::max(reply.created_at, run.seals[k]->created_at);
    for (std::size_t j = 0; j < run.items[k].size(); ++j)
      reply.results[run.items[k][j]]
          = push_item_result{self->state.cfg.record.name, run.names[k],
                             entry.rec.uuid, run.seals[k]->results[j]};
  }
  return reply;
}

/// Settles every seal with the batch's outcome and builds the answer.
queue_push_reply finish(queue_ptr self, push_run& run,
                        std::optional<storage::error> failure) {
  settle_all(self, run, !failure);
  if (failure)
    return queue_push_reply{{}, 0, std::move(failure)};
  auto reply = results_of(self, run);
  wake(self);
  return reply;
}

void sealed_one(std::shared_ptr<push_run> run) {
  if (--run->waiting == 0)
    run->prepared(run);
}

void seal_all(queue_ptr self, std::shared_ptr<push_run> run) {
  run->seals.resize(run->names.size());
  run->waiting = run->names.size();
  for (std::size_t k = 0; k < run->names.size(); ++k) {
    auto& actor = self->state.partitions.at(run->names[k]).actor;
    self->request(actor, caf::infinite, seal_atom::value,
                  std::move(run->frames[k]))
        .then(
            [run, k](seal_reply& r) {
              if (r.failure && !run->failure)
                run->failure = r.failure;
              run->seals[k] = r.sealed;
              sealed_one(run);
            },
            [run](caf::error& err) {
              if (!run->failure)
                run->failure = writer_error(err);
              sealed_one(run);
            });
  }
}

/// Validates the items, creates missing partitions (durably), seals every
/// partition's frames, then calls `prepared` (also on failure, with
/// `run->failure` set and nothing sealed left unsettled by the caller).
void prepare(queue_ptr self, std::vector<push_item>& items,
             std::function<void(std::shared_ptr<push_run>)> prepared) {
  auto& st = self->state;
  auto run = std::make_shared<push_run>();
  run->item_count = items.size();
  run->prepared = std::move(prepared);
  auto fail = [&](storage::error err) {
    run->failure = std::move(err);
    run->prepared(run);
  };
  std::unordered_map<std::string, std::size_t> index;
  // The partition slot of each item: pushes usually name one partition for
  // a run of items, so a name equal to the previous item's skips the lookup
  // (and the name check, done once per distinct name).
  std::vector<std::size_t> slot(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& name = items[i].partition;
    if (i > 0 && name == items[i - 1].partition) {
      slot[i] = slot[i - 1];
    } else {
      auto [it, fresh] = index.try_emplace(name, run->names.size());
      if (fresh) {
        if (auto ok = check_partition_name(name); !ok)
          return fail(storage::make_error(storage::ec::invalid_argument,
                                          "items[", i, "].partition ",
                                          ok.err().message));
        run->names.push_back(name);
        run->items.emplace_back();
        run->frames.emplace_back();
      }
      slot[i] = it->second;
    }
    // Validate every frame before anything is created or sealed, so a bad
    // item leaves no trace (not even a new partition).
    if (auto ok = storage::check_frame(items[i].frame, st.cfg.node.frames); !ok)
      return fail(storage::make_error(ok.err().code, "items[", i,
                                      "]: ", ok.err().message));
    run->items[slot[i]].push_back(i);
  }
  for (std::size_t k = 0; k < run->names.size(); ++k)
    run->frames[k].reserve(run->items[k].size());
  for (std::size_t i = 0; i < items.size(); ++i)
    run->frames[slot[i]].push_back(std::move(items[i].frame));
  if (run->names.empty())
    return run->prepared(run);
  // Partitions met for the first time are created durably first.
  storage::write_batch create;
  std::vector<storage::partition_record> fresh;
  for (auto& name : run->names) {
    if (st.partitions.contains(name))
      continue;
    storage::partition_record rec;
    rec.queue = st.cfg.record.id;
    rec.id = st.cfg.node.store->next_partition_id();
    rec.name = name;
    rec.uuid = st.cfg.node.store->make_uuid();
    rec.created_at = st.cfg.node.wall();
    fresh.push_back(rec);
    create.mutations.emplace_back(storage::mut::create_partition{rec});
  }
  if (fresh.empty())
    return seal_all(self, run);
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                std::move(create))
      .then(
          [self, run, fresh](write_result& r) {
            if (!r.ok()) {
              run->failure = r.failure;
              return run->prepared(run);
            }
            for (auto& rec : fresh)
              if (!self->state.partitions.contains(rec.name))
                if (auto ok = add_partition(self, rec); !ok) {
                  run->failure = ok.err();
                  return run->prepared(run);
                }
            seal_all(self, run);
          },
          [run](caf::error& err) {
            run->failure = writer_error(err);
            run->prepared(run);
          });
}

caf::typed_response_promise<queue_push_reply>
on_push(queue_ptr self, std::vector<push_item>& items) {
  auto rp = self->make_response_promise<queue_push_reply>();
  prepare(self, items, [self, rp](std::shared_ptr<push_run> run) mutable {
    if (run->failure) {
      rp.deliver(finish(self, *run, run->failure));
      return;
    }
    auto batch = batch_of(*run);
    if (batch.mutations.empty()) { // only duplicates of stored frames
      rp.deliver(finish(self, *run, std::nullopt));
      return;
    }
    self->request(self->state.cfg.node.writer, caf::infinite, write_atom::value,
                  std::move(batch))
        .then(
            [self, rp, run](write_result& r) mutable {
              rp.deliver(finish(self, *run, std::move(r.failure)));
            },
            [self, rp, run](caf::error& err) mutable {
              rp.deliver(finish(self, *run, writer_error(err)));
            });
  });
  return rp;
}

caf::typed_response_promise<prepared_push>
on_prepare(queue_ptr self, std::vector<push_item>& items) {
  auto rp = self->make_response_promise<prepared_push>();
  prepare(self, items, [self, rp](std::shared_ptr<push_run> run) mutable {
    if (run->failure) {
      auto failure = run->failure;
      (void)finish(self, *run, failure); // settles what was sealed
      rp.deliver(prepared_push{nullptr, {}, failure, {}});
      return;
    }
    rp.deliver(prepared_push{run, batch_of(*run), std::nullopt,
                             results_of(self, *run).results});
  });
  return rp;
}

// -- ack ----------------------------------------------------------------------

caf::typed_response_promise<std::vector<ack_reply>>
on_ack(queue_ptr self, const std::string& partition, const std::string& group,
       std::vector<core::ack_request>& reqs) {
  auto rp = self->make_response_promise<std::vector<ack_reply>>();
  auto it = self->state.partitions.find(partition);
  if (it == self->state.partitions.end()) {
    rp.deliver(std::vector<ack_reply>(
        reqs.size(), ack_reply{core::ack_error::not_found, false, false, {}}));
    return rp;
  }
  auto n = reqs.size();
  self->request(it->second.actor, caf::infinite, ack_atom::value, group,
                std::move(reqs))
      .then(
          [self, rp](std::vector<ack_reply>& rs) mutable {
            bool released = std::any_of(
                rs.begin(), rs.end(), [](auto& r) { return r.lease_released; });
            rp.deliver(std::move(rs));
            if (released)
              wake(self);
          },
          [rp, n](caf::error& err) mutable {
            rp.deliver(std::vector<ack_reply>(
                n, ack_reply{core::ack_error::none, false, false,
                             writer_error(err)}));
          });
  return rp;
}

queue_actor::behavior_type queue(queue_ptr self, queue_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  for (auto& rec : st.cfg.partitions)
    if (auto ok = add_partition(self, rec); !ok)
      self->quit(caf::make_error(caf::sec::runtime_error,
                                 storage::to_string(ok.err())));
  return {
      [self](push_atom, std::vector<push_item>& items) {
        return on_push(self, items);
      },
      [self](seal_atom, std::vector<push_item>& items) {
        return on_prepare(self, items);
      },
      [self](settle_atom, const push_token& token,
             std::optional<storage::error>& failure) {
        auto run = std::static_pointer_cast<push_run>(token);
        return finish(self, *run, std::move(failure));
      },
      [self](pop_atom, queue_pop_request& req) { return on_pop(self, req); },
      [self](ack_atom, const std::string& partition, const std::string& group,
             std::vector<core::ack_request>& reqs) {
        return on_ack(self, partition, group, reqs);
      },
      [self](timeout_atom, std::uint64_t id) { on_timeout(self, id); },
      [self](
          stage_atom, const std::string& partition, const std::string& group,
          std::vector<core::ack_request>& reqs) -> caf::delegated<stage_reply> {
        auto it = self->state.partitions.find(partition);
        if (it == self->state.partitions.end()) {
          auto rp = self->make_response_promise<stage_reply>();
          stage_reply refused;
          refused.refused
              = core::stage_refusal{0, to_string(core::ack_error::not_found)};
          rp.deliver(std::move(refused));
          return {};
        }
        return self->delegate(it->second.actor, stage_atom::value, group,
                              std::move(reqs));
      },
      [self](settle_atom, const std::string& partition,
             const std::string& group, std::uint64_t id, bool commit) {
        auto it = self->state.partitions.find(partition);
        if (it == self->state.partitions.end())
          return;
        self->send(it->second.actor, settle_atom::value, group, id, commit);
        if (commit)
          wake(self); // a released lease may serve parked pops
      },
  };
}

} // namespace

std::vector<std::size_t> rotation_order(std::size_t n, std::size_t start) {
  std::vector<std::size_t> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    out.push_back((start + i) % n);
  return out;
}

storage::expected<void> check_partition_name(const std::string& name) {
  if (name.empty() || name.size() > 255)
    return storage::make_error(storage::ec::invalid_argument,
                               "must be 1..255 bytes");
  if (name.starts_with("__"))
    return storage::make_error(storage::ec::invalid_argument,
                               "must not start with __ (reserved)");
  for (unsigned char c : name)
    if (c == '/' || c < 0x20 || c == 0x7f)
      return storage::make_error(storage::ec::invalid_argument,
                                 "must not contain '/' or control characters");
  return {};
}

storage::expected<void> queue_config::validate() const {
  return node.validate("queue");
}

storage::expected<queue_actor> spawn_queue(caf::actor_system& sys,
                                           queue_config cfg) {
  SPOOL_TRY(cfg.validate());
  return sys.spawn(queue, std::move(cfg));
}

} // namespace spool::actors
