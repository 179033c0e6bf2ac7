// The broker's namespace/task pops: its queues by priority with starvation
// aging, parked across queues, woken by the queues that may serve them.

#include "actors/broker/broker_state.hpp"
#include "vocab/queries.hpp"

namespace spool::actors::broker_detail {

// -- namespace/task pops
// -------------------------------------------------------

/// One try of a namespace pop over its queues, in serving order.
struct namespace_run {
  namespace_pop_request req;
  std::vector<std::string> order;
  std::size_t next = 0;
  std::optional<mono_time> retry_at;
  std::function<void(namespace_pop_reply)> done;
};

void namespace_step(broker_ptr self, std::shared_ptr<namespace_run> run) {
  auto& st = self->state;
  while (run->next < run->order.size()) {
    auto name = run->order[run->next++];
    auto it = st.queues.find(name);
    if (it == st.queues.end())
      continue;              // deleted meanwhile
    auto pop = run->req.pop; // a wildcard pop (on_namespace_pop)
    pop.wait = false;
    self->request(it->second, caf::infinite, pop_atom::value, pop)
        .then(
            [self, run, name](queue_pop_reply& r) {
              if (!r.claimed.empty() || r.failure) {
                run->done(namespace_pop_reply{name, std::move(r)});
                return;
              }
              if (r.retry_at
                  && (!run->retry_at || *r.retry_at < *run->retry_at))
                run->retry_at = r.retry_at;
              namespace_step(self, run);
            },
            [self, run](caf::error&) { namespace_step(self, run); });
    return;
  }
  namespace_pop_reply empty;
  empty.reply.reason
      = run->order.empty() ? empty_reason::no_partition : empty_reason::empty;
  empty.reply.retry_at = run->retry_at;
  run->done(std::move(empty));
}

/// Tries the namespace's queues once: higher priority first, starved queues
/// (oldest waiting frame older than the cap) before all.
void try_namespace(broker_ptr self, const namespace_pop_request& req,
                   std::function<void(namespace_pop_reply)> done) {
  auto& st = self->state;
  std::vector<core::queue_candidate> candidates;
  std::vector<queue_actor> actors;
  for (auto& [name, rec] : st.records)
    if (core::serves(rec.name_space, rec.task, req.name_space, req.task)
        && named_by_prefixes(name, req.queue_prefixes)) {
      candidates.push_back({name, rec.options.priority, std::nullopt});
      actors.push_back(st.queues.at(name));
    }
  auto run = std::make_shared<namespace_run>();
  run->req = req;
  run->done = std::move(done);
  fan_out<storage::micros>(
      self, actors,
      [self, run,
       candidates](std::vector<fanned<storage::micros>> oldest) mutable {
        for (std::size_t i = 0; i < candidates.size(); ++i)
          if (oldest[i].reply && *oldest[i].reply > 0)
            candidates[i].oldest_waiting = *oldest[i].reply;
        auto& st = self->state;
        auto starvation = static_cast<storage::micros>(
            st.cfg.pop.max_starvation_s * 1'000'000);
        for (auto i :
             core::serving_order(candidates, st.cfg.node.wall(), starvation))
          run->order.push_back(candidates[i].name);
        namespace_step(self, run);
      },
      oldest_atom::value, req.pop.group);
}

void arm(broker_ptr self) {
  auto& st = self->state;
  auto due = st.parked.next_due();
  if (!due)
    return;
  if (auto id = st.timer.arm(*due))
    self->delayed_send(
        self,
        std::max(*due - self->clock().now(), mono_clock::duration::zero()),
        timeout_atom::value, *id);
}

/// The parked namespace pops `queues` may serve (those of their namespaces
/// and tasks) try again, in arrival order; the others stay parked.
void wake(broker_ptr self, const std::vector<std::string>& queues) {
  auto& st = self->state;
  if (st.parked.idle())
    return;
  std::vector<const storage::queue_record*> recs;
  std::vector<std::string> spaces;
  for (auto& name : queues)
    if (auto it = st.records.find(name);
        it != st.records.end() && !it->second.name_space.empty()) {
      recs.push_back(&it->second);
      spaces.push_back(it->second.name_space);
    }
  if (recs.empty())
    return;
  st.parked.wake(spaces, [&](const namespace_pop_request& r) {
    return std::any_of(recs.begin(), recs.end(), [&](auto* rec) {
      return core::serves(rec->name_space, rec->task, r.name_space, r.task);
    });
  });
}

void on_timeout(broker_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (!st.timer.fire(id))
    return;
  st.parked.expire(self->clock().now());
  arm(self);
}

caf::result<namespace_pop_reply> on_namespace_pop(broker_ptr self,
                                                  namespace_pop_request& req) {
  auto fail = [](api_error err) {
    namespace_pop_reply r;
    r.reply.failure = std::move(err);
    return r;
  };
  if (req.name_space.empty())
    return fail(
        make_error(errc::invalid_argument, "namespace must not be empty"));
  req.pop.partition.reset(); // always a wildcard pop: `partitions` counts
  if (auto ok = check_pop(self->state.cfg.pop, req.pop); !ok)
    return fail(ok.err());
  if (auto ok = core::check_name(core::name_kind::name_space, req.name_space);
      !ok)
    return fail(ok.err());
  if (req.task)
    if (auto ok = core::check_name(core::name_kind::task, *req.task); !ok)
      return fail(ok.err());
  auto deadline = self->clock().now() + req.pop.timeout;
  bool may_park = req.pop.wait && req.pop.timeout.count() > 0;
  auto rp = promise_for<namespace_pop_reply>(self);
  self->state.parked.submit(std::move(req), rp, deadline, may_park);
  return rp.later();
}

} // namespace spool::actors::broker_detail
