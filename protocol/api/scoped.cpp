#include "protocol/api/scoped.hpp"

#include <algorithm>

#include "vocab/delivery.hpp"
#include "vocab/slot.hpp"

namespace spool::api {

// -- scoped_gateway -----------------------------------------------------------

namespace {

const char* const insufficient = "Insufficient permissions: ";

} // namespace

void scoped_gateway::audit(std::string_view outcome) const {
  auto& c = *ctx_;
  if (c.sec == nullptr)
    return;
  c.sec->write({c.who.subject.empty() ? "-" : c.who.subject,
                auth::to_string(c.who.granted), c.from, c.door, c.what,
                outcome});
}

std::optional<api_error>
scoped_gateway::refuse_queue(std::string_view queue) const {
  if (!ctx_ || ctx_->who.may_use_queue(queue))
    return std::nullopt;
  audit(concat("403 queues claim: queue ", queue));
  return make_error(errc::forbidden, insufficient,
                    "the token's queues claim does not cover queue ", queue);
}

std::optional<api_error>
scoped_gateway::refuse_group(const std::optional<std::string>& group) const {
  std::string_view g = group ? std::string_view{*group} : queue_mode_group;
  if (!ctx_ || ctx_->who.may_use_group(g))
    return std::nullopt;
  audit(concat("403 groups claim: group ", g));
  if (!group)
    return make_error(errc::forbidden, insufficient,
                      "the token's groups claim does not cover queue mode (",
                      queue_mode_group, ", a request without consumerGroup)");
  return make_error(errc::forbidden, insufficient,
                    "the token's groups claim does not cover consumer group ",
                    g);
}

std::optional<api_error>
scoped_gateway::refuse_spanning(bool queues, bool groups,
                                std::string_view why) const {
  if (!ctx_
      || !((queues && ctx_->who.queue_prefixes)
           || (groups && ctx_->who.groups)))
    return std::nullopt;
  audit(concat("403 queues or groups claim: ", why));
  return make_error(errc::forbidden, insufficient, why);
}

std::optional<api_error>
scoped_gateway::refuse_whole_queue(std::string_view queue) const {
  if (auto e = refuse_queue(queue))
    return e;
  return refuse_spanning(false, true,
                         "this acts on every consumer group of the queue: "
                         "it needs a token without a groups claim");
}

std::optional<api_error> scoped_gateway::refuse_dlq(const dlq_filter& f) const {
  if (!ctx_)
    return std::nullopt;
  if (auto e = f.queue ? refuse_queue(*f.queue)
                       : refuse_spanning(true, false,
                                         "a token with a queues claim must "
                                         "name the queue"))
    return e;
  if (!f.group)
    return refuse_spanning(false, true,
                           "a token with a groups claim must name the "
                           "consumer group");
  return refuse_group(f.group);
}

bool scoped_gateway::served_here(std::uint64_t queue) const {
  auto served = gw_->served_slots();
  return !served
         || std::find(served->begin(), served->end(), slot_of_id(queue))
                != served->end();
}

void scoped_gateway::resolve(const std::vector<std::string_view>& ids,
                             covered_fn then) const {
  auto n = ids.size();
  std::vector<std::optional<std::uint64_t>> queues(n);
  std::vector<bool> local(n, true);
  std::vector<std::uint64_t> wanted;
  if (ctx_->who.queue_prefixes) {      // else every queue is covered
    auto served = gw_->served_slots(); // read once for the request
    for (std::size_t i = 0; i < n; ++i) {
      queues[i] = queue_of_id(ids[i]); // none: the node refuses the id
      if (!queues[i])
        continue;
      local[i]
          = !served
            || std::find(served->begin(), served->end(), slot_of_id(*queues[i]))
                   != served->end();
      if (local[i])
        wanted.push_back(*queues[i]);
    }
  }
  dir_->resolve(*gw_, wanted,
                [self = *this, queues = std::move(queues),
                 local = std::move(local),
                 then = std::move(then)](std::optional<api_error> failed) {
                  if (failed)
                    return then(std::move(*failed));
                  std::vector<bool> covered(queues.size(), true);
                  for (std::size_t i = 0; i < queues.size(); ++i) {
                    if (!queues[i])
                      continue;
                    if (auto name = self.dir_->name_of(*queues[i]))
                      covered[i] = self.ctx_->who.may_use_queue(*name);
                    else // another node's slot: it answers where the
                      covered[i] = !local[i]; // leader is, touching nothing
                  }
                  then(std::move(covered));
                });
}

expected<gateway*> scoped_gateway::whole() const {
  if (auto e = refuse_spanning(true, true,
                               "this spans the whole node: it needs a token "
                               "without a queues or groups claim"))
    return std::move(*e);
  return gw_;
}

void scoped_gateway::push(node::push_request req,
                          done<node::push_reply> k) const {
  if (!ctx_)
    return gw_->push(std::move(req), std::move(k));
  for (auto& i : req.items)
    if (auto e = refuse_queue(i.queue))
      return k(*e);
  gw_->push(std::move(req),
            [dir = dir_, k = std::move(k)](expected<node::push_reply> r) {
              if (r)
                for (auto& i : r->items)
                  dir->learn_id(i.partition_id, i.queue);
              k(std::move(r));
            });
}

void scoped_gateway::pop(node::pop_request req, done<node::pop_reply> k) const {
  if (!ctx_)
    return gw_->pop(std::move(req), std::move(k));
  if (auto e = refuse_group(req.group))
    return k(*e);
  if (req.name_space)
    req.queue_prefixes = ctx_->who.queue_prefixes; // the node filters
  else if (auto e = refuse_queue(req.queue))
    return k(*e);
  gw_->pop(std::move(req),
           [dir = dir_, k = std::move(k)](expected<node::pop_reply> r) {
             if (r)
               for (auto& m : r->messages)
                 dir->learn_id(m.partition_id, m.queue);
             k(std::move(r));
           });
}

void scoped_gateway::ack(node::ack_request req, done<node::ack_reply> k) const {
  if (!ctx_)
    return gw_->ack(std::move(req), std::move(k));
  for (auto& i : req.items)
    if (auto e = refuse_group(req.group ? req.group : i.group))
      return k(*e);
  auto all = std::make_shared<node::ack_request>(std::move(req));
  std::vector<std::string_view> ids;
  for (auto& i : all->items)
    ids.push_back(i.partition_id);
  resolve(ids, [self = *this, all,
                k = std::move(k)](expected<std::vector<bool>> covered) mutable {
    if (!covered)
      return k(std::move(covered).err());
    // An item of a queue the claim leaves out answers as an unknown
    // partition's; the others go to the node.
    node::ack_request in;
    in.group = all->group;
    std::vector<std::size_t> kept;
    for (std::size_t i = 0; i < all->items.size(); ++i)
      if ((*covered)[i]) {
        kept.push_back(i);
        in.items.push_back(std::move(all->items[i]));
      }
    if (kept.size() == all->items.size())
      return self.gw_->ack(std::move(in), std::move(k));
    node::ack_reply out;
    out.items.resize(all->items.size());
    for (auto& o : out.items)
      o.error = to_string(ack_error::not_found);
    if (kept.empty())
      return k(std::move(out));
    self.gw_->ack(
        std::move(in), [out = std::move(out), kept = std::move(kept),
                        k = std::move(k)](expected<node::ack_reply> r) mutable {
          if (!r)
            return k(std::move(r));
          for (std::size_t j = 0; j < kept.size() && j < r->items.size(); ++j)
            out.items[kept[j]] = std::move(r->items[j]);
          k(std::move(out));
        });
  });
}

namespace {

node::extend_reply lease_not_found() {
  node::extend_reply none;
  none.error = to_string(extend_error::not_found);
  return none;
}

} // namespace

void scoped_gateway::extend(node::extend_request req,
                            done<node::extend_reply> k) const {
  if (!ctx_)
    return gw_->extend(std::move(req), std::move(k));
  auto id = req.lease_id; // the view outlives the request's move
  resolve({id}, [self = *this, req = std::move(req), k = std::move(k)](
                    expected<std::vector<bool>> covered) mutable {
    if (!covered)
      return k(std::move(covered).err());
    if (!(*covered)[0])
      return k(lease_not_found());
    auto q = queue_of_id(req.lease_id);
    if (!self.ctx_->who.groups || !q || !self.served_here(*q))
      return self.gw_->extend(std::move(req), std::move(k));
    self.extend_as_group(*q, std::move(req), std::move(k));
  });
}

void scoped_gateway::extend_as_group(std::uint64_t queue,
                                     node::extend_request req,
                                     done<node::extend_reply> k) const {
  // The lease must be one of a covered group's, which the queue's cursors
  // say (a lease id names its queue, not its group).
  dir_->resolve(*gw_, {queue},
                [self = *this, queue, req = std::move(req),
                 k = std::move(k)](std::optional<api_error> failed) mutable {
                  if (failed)
                    return k(std::move(*failed));
                  auto name = self.dir_->name_of(queue);
                  if (!name)
                    return k(lease_not_found());
                  node::groups_request cursors;
                  cursors.queue = *name;
                  auto* gw = self.gw_;
                  gw->groups(
                      std::move(cursors),
                      [self, req = std::move(req), k = std::move(k)](
                          expected<std::vector<node::cursor_view>> cs) mutable {
                        if (!cs)
                          return k(std::move(cs).err());
                        auto held = std::find_if(
                            cs->begin(), cs->end(),
                            [&](const node::cursor_view& v) {
                              return v.lease && v.lease->id == req.lease_id;
                            });
                        if (held == cs->end()
                            || !self.ctx_->who.may_use_group(held->group))
                          return k(lease_not_found());
                        self.gw_->extend(std::move(req), std::move(k));
                      });
                });
}

void scoped_gateway::seek(node::seek_request req,
                          done<node::seek_reply> k) const {
  if (ctx_) {
    if (auto e = refuse_queue(req.queue))
      return k(*e);
    if (auto e = refuse_group(req.group))
      return k(*e);
  }
  gw_->seek(std::move(req), std::move(k));
}

void scoped_gateway::update_subscription(
    node::subscription_request req, done<node::subscription_reply> k) const {
  if (ctx_) {
    if (auto e = refuse_group(req.group))
      return k(*e);
    if (auto e = refuse_spanning(true, false,
                                 "a subscription change spans every queue "
                                 "of the group: it needs a token without a "
                                 "queues claim"))
      return k(*e);
  }
  gw_->update_subscription(std::move(req), std::move(k));
}

void scoped_gateway::configure(node::configure_request req,
                               done<node::configure_reply> k) const {
  if (!ctx_)
    return gw_->configure(std::move(req), std::move(k));
  if (auto e = refuse_whole_queue(req.queue))
    return k(*e);
  gw_->configure(std::move(req), [dir = dir_, k = std::move(k)](
                                     expected<node::configure_reply> r) {
    if (r)
      dir->learn(r->queue.id, r->queue.name);
    k(std::move(r));
  });
}

void scoped_gateway::queues(std::optional<std::string> name,
                            done<std::vector<node::queue_info>> k) const {
  if (!ctx_)
    return gw_->queues(std::move(name), std::move(k));
  if (name)
    if (auto e = refuse_queue(*name))
      return k(*e);
  gw_->queues(std::move(name), [ctx = ctx_, dir = dir_, k = std::move(k)](
                                   expected<std::vector<node::queue_info>> qs) {
    if (qs) {
      for (auto& q : *qs)
        dir->learn(q.id, q.name);
      std::erase_if(*qs, [&](const node::queue_info& q) {
        return !ctx->who.may_use_queue(q.name);
      });
    }
    k(std::move(qs));
  });
}

void scoped_gateway::delete_queue(const std::string& name, done<bool> k) const {
  if (auto e = refuse_whole_queue(name))
    return k(*e);
  gw_->delete_queue(name, std::move(k));
}

void scoped_gateway::purge(node::purge_request req, done<std::size_t> k) const {
  if (auto e = refuse_whole_queue(req.queue))
    return k(*e);
  gw_->purge(std::move(req), std::move(k));
}

void scoped_gateway::browse(node::browse_request req,
                            done<node::browse_reply> k) const {
  if (auto e = refuse_queue(req.queue))
    return k(*e);
  gw_->browse(std::move(req), std::move(k));
}

template <class Req, class T, class Call>
void scoped_gateway::by_partition(Req req, done<T> k, Call call) const {
  auto id = req.partition_id;
  resolve({id}, [self = *this, req = std::move(req), k = std::move(k),
                 call](expected<std::vector<bool>> covered) mutable {
    if (!covered)
      return k(std::move(covered).err());
    if (!(*covered)[0]) // as the node answers an unknown uuid
      return k(make_error(errc::not_found, "Partition not found"));
    call(*self.gw_, std::move(req), std::move(k));
  });
}

void scoped_gateway::find(node::find_request req, done<node::message> k) const {
  if (!ctx_)
    return gw_->find(std::move(req), std::move(k));
  by_partition(std::move(req), std::move(k),
               [](gateway& gw, node::find_request r, done<node::message> k) {
                 gw.find(std::move(r), std::move(k));
               });
}

void scoped_gateway::groups(node::groups_request req,
                            done<std::vector<node::cursor_view>> k) const {
  if (!ctx_)
    return gw_->groups(std::move(req), std::move(k));
  if (req.group)
    if (auto e = refuse_group(req.group))
      return k(*e);
  if (req.queue)
    if (auto e = refuse_queue(*req.queue))
      return k(*e);
  // A listing: only the cursors the claims cover.
  gw_->groups(std::move(req), [ctx = ctx_, k = std::move(k)](
                                  expected<std::vector<node::cursor_view>> cs) {
    if (cs)
      std::erase_if(*cs, [&](const node::cursor_view& v) {
        return !ctx->who.may_use_queue(v.queue)
               || !ctx->who.may_use_group(v.group);
      });
    k(std::move(cs));
  });
}

void scoped_gateway::delete_group(node::delete_group_request req,
                                  done<node::delete_group_reply> k) const {
  if (ctx_) {
    if (auto e = refuse_group(req.group))
      return k(*e);
    auto e = req.queue ? refuse_queue(*req.queue)
                       : refuse_spanning(true, false,
                                         "a token with a queues claim must "
                                         "name the queue");
    if (e)
      return k(*e);
  }
  gw_->delete_group(std::move(req), std::move(k));
}

void scoped_gateway::dlq_list(dlq_query q, done<node::dlq_page> k) const {
  if (auto e = refuse_dlq(q.filter))
    return k(*e);
  gw_->dlq_list(std::move(q), std::move(k));
}

void scoped_gateway::dlq_requeue(dlq_filter f, done<node::dlq_count> k) const {
  if (auto e = refuse_dlq(f))
    return k(*e);
  gw_->dlq_requeue(std::move(f), std::move(k));
}

void scoped_gateway::dlq_delete(dlq_filter f, done<node::dlq_count> k) const {
  if (auto e = refuse_dlq(f))
    return k(*e);
  gw_->dlq_delete(std::move(f), std::move(k));
}

void scoped_gateway::transaction(node::txn_request req,
                                 done<node::txn_reply> k) const {
  if (!ctx_)
    return gw_->transaction(std::move(req), std::move(k));
  auto all = std::make_shared<node::txn_request>(std::move(req));
  std::vector<std::string_view> ids; // views of `all`'s strings
  std::vector<std::size_t> op_of;    // each id's operation
  for (std::size_t i = 0; i < all->operations.size(); ++i) {
    auto& op = all->operations[i];
    if (auto* p = std::get_if<node::txn_push>(&op)) {
      for (auto& item : p->items)
        if (auto e = refuse_queue(item.queue))
          return k(*e);
      continue;
    }
    auto& a = std::get<node::txn_ack>(op).ack;
    if (auto e = refuse_group(a.group))
      return k(*e);
    ids.push_back(a.partition_id);
    op_of.push_back(i);
  }
  resolve(ids, [self = *this, all, op_of = std::move(op_of),
                k = std::move(k)](expected<std::vector<bool>> covered) mutable {
    if (!covered)
      return k(std::move(covered).err());
    for (std::size_t j = 0; j < op_of.size(); ++j)
      if (!(*covered)[j]) {
        // As the node answers an ack of an unknown partition: rolled back.
        node::txn_reply r;
        r.transaction_id = all->transaction_id.value_or("");
        r.failed_op = op_of[j];
        r.error = concat("operations[", op_of[j],
                         "]: ", to_string(ack_error::not_found));
        return k(std::move(r));
      }
    self.gw_->transaction(std::move(*all), std::move(k));
  });
}

void scoped_gateway::add_trace(node::trace_request req,
                               done<std::string> k) const {
  if (!ctx_)
    return gw_->add_trace(std::move(req), std::move(k));
  if (auto e = refuse_group(req.consumer_group))
    return k(*e);
  by_partition(std::move(req), std::move(k),
               [](gateway& gw, node::trace_request r, done<std::string> k) {
                 gw.add_trace(std::move(r), std::move(k));
               });
}

void scoped_gateway::traces(node::find_request req,
                            done<std::vector<node::trace>> k) const {
  if (!ctx_)
    return gw_->traces(std::move(req), std::move(k));
  auto id = req.partition_id;
  resolve({id}, [self = *this, req = std::move(req), k = std::move(k)](
                    expected<std::vector<bool>> covered) mutable {
    if (!covered)
      return k(std::move(covered).err());
    if (!(*covered)[0])
      return k(std::vector<node::trace>{}); // as an unknown message's
    // Only the traces the groups claim covers.
    self.gw_->traces(std::move(req),
                     [ctx = self.ctx_,
                      k = std::move(k)](expected<std::vector<node::trace>> ts) {
                       if (ts)
                         std::erase_if(*ts, [&](const node::trace& t) {
                           return !ctx->who.may_use_group(t.consumer_group);
                         });
                       k(std::move(ts));
                     });
  });
}

void scoped_gateway::traces_named(node::trace_name_query q,
                                  done<node::trace_page> k) const {
  if (auto e = refuse_spanning(true, true,
                               "traces by name span every queue and group: "
                               "they need a token without a queues or "
                               "groups claim"))
    return k(*e);
  gw_->traces_named(std::move(q), std::move(k));
}

void scoped_gateway::trace_names(node::trace_names_query q,
                                 done<node::trace_names_page> k) const {
  if (auto e = refuse_spanning(true, true,
                               "trace names span every queue and group: "
                               "they need a token without a queues or "
                               "groups claim"))
    return k(*e);
  gw_->trace_names(std::move(q), std::move(k));
}

scoped_gateway
scope_for(gateway& gw, const std::shared_ptr<queue_directory>& dir,
          const security& sec, const std::optional<auth::principal>& who,
          std::string_view from, std::string_view door, std::string_view what) {
  if (!sec.enabled() || !who || who->unrestricted())
    return scoped_gateway{gw, nullptr};
  auto ctx = std::make_shared<scope_context>();
  ctx->who = *who;
  ctx->sec = &sec;
  ctx->from = from;
  ctx->door = door;
  ctx->what = what;
  return scoped_gateway{gw, dir, std::move(ctx)};
}

} // namespace spool::api
