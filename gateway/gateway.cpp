// The gateway over the node's broker: each call converts its request
// (gateway/convert.hpp), sends it from a short-lived helper actor of its
// own, and converts the answer there. A helper per request keeps parked
// pops out of any one actor's table of pending responses (CAF 0.17 keeps
// them in a list searched on every answer), and it ends with its answer.

#include "gateway/impl.hpp"

namespace spool {

using namespace gateway_detail;

gateway::gateway(std::unique_ptr<impl> p) : impl_(std::move(p)) {
}

gateway::~gateway() = default;

std::unique_ptr<gateway>
make_gateway(caf::actor_system& sys, actors::node_api node,
             std::function<micros()> wall,
             std::shared_ptr<const actors::node_metrics> metrics,
             std::shared_ptr<const cipher::keyring> encryption_keys) {
  auto i
      = std::make_unique<gateway::impl>(sys, std::move(node), std::move(wall));
  i->metrics = std::move(metrics);
  i->encryption_keys = std::move(encryption_keys);
  return std::make_unique<gateway>(std::move(i));
}

std::string gateway::new_token() {
  return impl_->next_id();
}

void gateway::push(node::push_request req, done<node::push_reply> k) {
  auto ids = std::make_shared<item_ids>();
  auto items = to_broker(req.items, *ids);
  impl_->ask<actors::queue_push_reply>(
      std::move(k),
      [ids](actors::queue_push_reply& r, const clocks&) {
        return from_broker(r, *ids);
      },
      actors::push_atom::value, std::move(items));
}

void gateway::pop(node::pop_request req, done<node::pop_reply> k) {
  if (req.token.empty())
    req.token = new_token();
  auto token = req.token;
  auto group = req.group.value_or(std::string{core::queue_mode_group});
  if (req.name_space) {
    actors::namespace_pop_request nreq;
    nreq.name_space = *req.name_space;
    nreq.task = req.task;
    nreq.queue_prefixes = std::move(req.queue_prefixes);
    nreq.pop = to_broker(req);
    impl_->ask_pop<actors::namespace_pop_reply>(
        token, std::nullopt, std::move(k),
        [group, keys = impl_->encryption_keys](
            actors::namespace_pop_reply& r,
            const clocks& now) -> expected<node::pop_reply> {
          if (r.reply.failure)
            return *r.reply.failure;
          return from_broker(r.queue, group, r.reply, now, keys.get());
        },
        std::make_tuple(std::move(nreq)));
    return;
  }
  auto convert = [name = req.queue, group, keys = impl_->encryption_keys](
                     actors::queue_pop_reply& r,
                     const clocks& now) -> expected<node::pop_reply> {
    if (r.failure)
      return *r.failure;
    return from_broker(name, group, r, now, keys.get());
  };
  auto queue = req.queue;
  auto pop = to_broker(req);
  impl_->ask_pop<actors::queue_pop_reply>(
      token, queue, std::move(k), std::move(convert),
      std::make_tuple(std::move(req.queue), std::move(pop)));
}

void gateway::cancel(const std::string& token) {
  std::lock_guard lock{impl_->pops->mx};
  auto it = impl_->pops->pops.find(token);
  if (it == impl_->pops->pops.end())
    return; // answered already (or never asked)
  if (it->second.helper)
    caf::anon_send(it->second.helper, actors::cancel_atom::value);
  else
    it->second.cancelled = true; // its helper is being spawned
}

std::size_t gateway::cancel_all() {
  std::lock_guard lock{impl_->pops->mx};
  impl_->pops->closed = true;
  for (auto& [token, e] : impl_->pops->pops) {
    if (e.helper)
      caf::anon_send(e.helper, actors::cancel_atom::value);
    else
      e.cancelled = true;
  }
  return impl_->pops->pops.size();
}

std::size_t gateway::pops_in_flight() const {
  std::lock_guard lock{impl_->pops->mx};
  return impl_->pops->pops.size();
}

node::node_counters gateway::counters() const {
  node::node_counters c;
  if (auto& m = impl_->metrics) {
    c.messages_acked = m->messages_acked.load();
    c.dead_letters_expired = m->dead_letters_expired.load();
    c.retention_deleted = m->retention_frames_deleted.load();
    c.actor_restarts = m->actor_restarts.load();
    c.pops_parked = m->pops_parked.load();
    c.partitions_loaded = m->partitions_loaded.load();
    c.partition_actors = m->partition_actors.load();
  }
  return c;
}

void gateway::ack(node::ack_request req, done<node::ack_reply> k) {
  auto located = to_broker(req);
  if (!located)
    return k(located.err());
  impl_->ask<std::vector<actors::located_ack_reply>>(
      std::move(k),
      [](std::vector<actors::located_ack_reply>& rs, const clocks&) {
        return from_broker(rs);
      },
      actors::ack_atom::value, std::move(*located));
}

void gateway::extend(node::extend_request req, done<node::extend_reply> k) {
  impl_->ask<actors::lease_extend_reply>(
      std::move(k),
      [](actors::lease_extend_reply& r, const clocks& now) {
        return from_broker(r, now);
      },
      actors::extend_atom::value, std::move(req.lease_id), req.by);
}

void gateway::release(const std::string& lease_id, done<bool> k) {
  impl_->ask<bool>(
      std::move(k),
      [](bool& released, const clocks&) -> expected<bool> { return released; },
      actors::release_atom::value, lease_id);
}

} // namespace spool
