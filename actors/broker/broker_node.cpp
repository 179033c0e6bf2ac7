// The broker's node-API requests that name things as the wire does: acks by
// partition uuid (and transactionId), extend and release by lease id, and
// cancel by request token routed to its queue. A partition uuid and a lease
// id carry their queue's id (vocab/slot.hpp): each is routed by the id
// alone, and the queue resolves it.

#include "actors/broker/broker_state.hpp"

namespace spool::actors::broker_detail {

void forget_queue(broker_ptr self, const std::string& name) {
  auto& st = self->state;
  if (auto rec = st.records.find(name); rec != st.records.end())
    st.name_of_id.erase(rec->second.id.value);
}

namespace {

/// The acks of one queue, with their item indices.
struct ack_share {
  std::string queue;
  queue_actor actor;
  std::vector<std::size_t> items;
  std::vector<located_ack> acks;
};

/// Why item `a` is malformed (nothing of the list is applied then).
std::optional<api_error> malformed(const located_ack& a) {
  SPOOL_TRY(core::check_name(core::name_kind::group, a.group));
  SPOOL_TRY(core::check_ack(a.ack));
  return std::nullopt;
}

/// The queue that granted lease `id` or owns partition uuid `id`, by the
/// queue id the id carries (`queues.end()`: none live; a queue deleted and
/// created again under its name has another id).
std::map<std::string, queue_actor>::iterator queue_of(broker_ptr self,
                                                      const std::string& id) {
  auto& st = self->state;
  auto qid = queue_of_id(id);
  auto name = qid ? st.name_of_id.find(*qid) : st.name_of_id.end();
  return name == st.name_of_id.end() ? st.queues.end()
                                     : st.queues.find(name->second);
}

} // namespace

caf::result<std::vector<located_ack_reply>>
on_located_ack(broker_ptr self, std::vector<located_ack>& acks) {
  auto& st = self->state;
  std::vector<located_ack_reply> out(acks.size());
  for (std::size_t i = 0; i < acks.size(); ++i)
    if (auto bad = malformed(acks[i])) {
      // As the per-partition ack: every item answers the error.
      auto err
          = make_error(bad->code, "acknowledgments[", i, "].", bad->message);
      for (auto& o : out)
        o.reply.failure = err;
      return out;
    }
  std::vector<ack_share> shares;
  std::map<std::string_view, std::size_t> index; // views of `queues` keys
  // Consecutive items mostly name the same partition (one batch's acks):
  // its lookup is made once for the run (a copy: the items move on).
  std::optional<std::string> last_uuid;
  auto q = st.queues.end();
  for (std::size_t i = 0; i < acks.size(); ++i) {
    auto& a = acks[i];
    if (last_uuid != a.partition_uuid) {
      last_uuid = a.partition_uuid;
      q = queue_of(self, a.partition_uuid);
    }
    if (q == st.queues.end()) {
      out[i].reply.error = ack_error::not_found;
      out[i].reply.failure = id_refusal(self, a.partition_uuid);
      continue;
    }
    auto [it, fresh] = index.try_emplace(q->first, shares.size());
    if (fresh)
      shares.push_back({q->first, q->second, {}, {}});
    shares[it->second].items.push_back(i);
    shares[it->second].acks.push_back(std::move(a));
  }
  if (shares.empty())
    return out;
  auto rp = promise_for<std::vector<located_ack_reply>>(self);
  auto run = std::make_shared<
      std::pair<std::vector<ack_share>, std::vector<located_ack_reply>>>(
      std::move(shares), std::move(out));
  gather<std::vector<located_ack_reply>>(
      run->first.size(),
      [self, run](std::size_t k) {
        auto& s = run->first[k];
        // Asked once per share: its acks are not needed after.
        return self->request(s.actor, caf::infinite, ack_atom::value,
                             std::move(s.acks));
      },
      [self, rp,
       run](std::vector<fanned<std::vector<located_ack_reply>>> rs) mutable {
        auto& [shares, out] = *run;
        std::vector<std::string> woke;
        for (std::size_t k = 0; k < shares.size(); ++k) {
          auto& s = shares[k];
          for (std::size_t j = 0; j < s.items.size(); ++j) {
            auto& slot = out[s.items[j]];
            if (!rs[k].reply || j >= rs[k].reply->size()) {
              slot.reply.failure
                  = rs[k].reply
                        ? make_error(errc::internal, "queue ", s.queue,
                                     " answered ", rs[k].reply->size(),
                                     " replies for ", s.items.size(), " acks")
                        : unreachable(rs[k].error, "queue");
              continue;
            }
            slot = std::move((*rs[k].reply)[j]);
            if (slot.reply.lease_released)
              woke.push_back(s.queue);
          }
        }
        rp.deliver(std::move(out));
        if (!woke.empty()) // a released lease may serve a namespace pop
          wake(self, woke);
      });
  return rp.later();
}

caf::result<lease_extend_reply> on_extend_lease(broker_ptr self,
                                                const std::string& id,
                                                std::chrono::milliseconds by) {
  auto q = queue_of(self, id);
  if (q == self->state.queues.end()) {
    lease_extend_reply none;
    none.error = extend_error::not_found;
    none.failure = id_refusal(self, id);
    return none;
  }
  return self->delegate(q->second, extend_atom::value, id, by);
}

caf::result<bool> on_release_lease(broker_ptr self, const std::string& id) {
  auto q = queue_of(self, id);
  if (q == self->state.queues.end())
    return false;
  // Parked namespace pops wait: the released lease wakes them.
  return via_queue<bool>(
      self, q->first, q->second, [](bool released) { return released; },
      [](caf::error&) { return false; }, release_atom::value, id);
}

std::optional<core::txn_result> locate_txn_acks(broker_ptr self,
                                                core::txn_request& req) {
  for (std::size_t i = 0; i < req.ops.size(); ++i) {
    auto* ack = std::get_if<core::txn_ack_op>(&req.ops[i]);
    if (ack == nullptr)
      continue;
    auto q = queue_of(self, ack->partition_uuid);
    if (q == self->state.queues.end()) { // the queue resolves the rest
      // Of a slot not served here: the slot's answer (txn_slot).
      if (id_refusal(self, ack->partition_uuid))
        continue;
      return core::txn_rollback(req.id.value_or(""), i,
                                to_string(ack_error::not_found));
    }
    ack->queue = q->first;
  }
  return std::nullopt;
}

std::optional<api_error> txn_slot(broker_ptr self,
                                  const core::txn_request& req) {
  if (!self->state.cfg.slots)
    return std::nullopt;
  std::vector<std::string> names;
  for (auto& op : req.ops) {
    if (auto* ack = std::get_if<core::txn_ack_op>(&op)) {
      if (ack->queue.empty()) // not located: its slot is not served here
        return id_refusal(self, ack->partition_uuid);
      names.push_back(ack->queue);
    } else
      for (auto& item : std::get<core::txn_push_op>(op).items)
        names.push_back(item.queue);
  }
  return one_slot(self, names);
}

std::uint64_t txn_term(broker_ptr self, const core::txn_request& req) {
  auto& store = self->state.cfg.node.store;
  for (auto& op : req.ops) {
    if (auto* ack = std::get_if<core::txn_ack_op>(&op)) {
      if (!ack->queue.empty())
        return slot_term(self, store.slot_of(ack->queue));
    } else
      for (auto& item : std::get<core::txn_push_op>(op).items)
        return slot_term(self, store.slot_of(item.queue));
  }
  return no_term;
}

void on_cancel(broker_ptr self, const std::string& token,
               const std::optional<std::string>& queue) {
  auto& st = self->state;
  if (auto c = st.creating.find(token); c != st.creating.end())
    c->second = true;
  st.parked.cancel(token); // a namespace pop parks here
  if (!queue)
    return;
  if (auto q = st.queues.find(*queue); q != st.queues.end())
    self->send(q->second, cancel_atom::value, token);
}

void find_then(broker_ptr self, const find_request& req,
               std::function<void(find_reply)> k) {
  auto q = queue_of(self, req.partition_uuid);
  if (q == self->state.queues.end()) {
    find_reply r;
    r.failure
        = id_refusal(self, req.partition_uuid)
              .value_or(make_error(errc::not_found, "Partition not found"));
    return k(std::move(r));
  }
  browse_request b;
  b.partition_uuid = req.partition_uuid;
  b.transaction_id = req.transaction_id;
  self->request(q->second, caf::infinite, browse_atom::value, std::move(b))
      .then(
          [k, queue = q->first, queue_id = *queue_of_id(req.partition_uuid)](
              browse_reply& r) mutable {
            find_reply out;
            out.queue = std::move(queue);
            out.partition = std::move(r.partition);
            out.partition_uuid = std::move(r.partition_uuid);
            out.queue_id = storage::queue_id{queue_id};
            out.partition_id = r.partition_id;
            out.failure = std::move(r.failure);
            if (!r.frames.empty())
              out.frame = std::move(r.frames.front());
            k(std::move(out));
          },
          [k](caf::error& err) mutable {
            find_reply out;
            out.failure = unreachable(err, "queue");
            k(std::move(out));
          });
}

caf::result<find_reply> on_find(broker_ptr self, const find_request& req) {
  auto rp = promise_for<find_reply>(self);
  find_then(self, req,
            [rp](find_reply r) mutable { rp.deliver(std::move(r)); });
  return rp.later();
}

} // namespace spool::actors::broker_detail
