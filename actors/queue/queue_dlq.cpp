// A queue's dead letters: deletion and requeue (routed by partition to the
// group's cursors), and DLQ retention on one sweep timer.

#include "actors/queue/queue_state.hpp"

namespace spool::actors::queue_detail {

// -- DLQ deletion -------------------------------------------------------------

caf::result<dlq_count_reply> on_dlq_delete(queue_ptr self,
                                           const dlq_delete_request& req) {
  auto& st = self->state;
  // Entries of an earlier queue of this name go with its reaping; a queue
  // being deleted deletes its rows itself.
  if (st.deleted || req.queue_id != st.cfg.record.id || req.entries.empty())
    return dlq_count_reply{};
  auto rp = promise_for<dlq_count_reply>(self);
  storage::write_batch b;
  for (auto& [group, id] : req.entries)
    b.mutations.emplace_back(
        storage::mut::delete_dlq{st.cfg.record.id, group, id});
  write_then(
      self, st.cfg.node.writer, std::move(b),
      [rp, n = req.entries.size()](std::optional<api_error> failure) mutable {
        if (failure)
          rp.deliver(dlq_count_reply{0, std::move(failure), 0});
        else
          rp.deliver(dlq_count_reply{n, std::nullopt, 0});
      });
  return rp.later();
}

// -- DLQ requeue and retention ------------------------------------------------

caf::result<dlq_count_reply>
on_requeue(queue_ptr self, const std::string& group,
           std::vector<storage::dlq_entry>& entries) {
  auto& st = self->state;
  // Every entry's partition is resolved before anything is sent.
  std::map<std::uint64_t,
           std::pair<partition_actor, std::vector<storage::dlq_entry>>>
      parts;
  std::vector<std::size_t> indices;
  std::vector<std::string> names;
  // Partitions by id, once: a requeue of many entries is one pass.
  std::unordered_map<std::uint64_t, decltype(st.partitions.begin())> by_id;
  for (auto it = st.partitions.begin(); it != st.partitions.end(); ++it)
    by_id.emplace(it->second.rec.id.value, it);
  for (auto& e : entries) {
    auto found = by_id.find(e.partition.value);
    auto it = found == by_id.end() ? st.partitions.end() : found->second;
    if (it == st.partitions.end())
      return failed<dlq_count_reply>(make_error(
          errc::not_found, "Partition not found: ", e.partition.value));
    auto& slot = parts[e.partition.value];
    if (slot.second.empty()) { // each partition once
      indices.push_back(it->second.index);
      names.push_back(it->first);
    }
    slot.first = it->second.actor;
    slot.second.push_back(std::move(e));
  }
  if (parts.empty())
    return dlq_count_reply{};
  auto rp = promise_for<dlq_count_reply>(self);
  std::vector<std::pair<partition_actor, std::vector<storage::dlq_entry>>> asks;
  for (auto& [_, slot] : parts)
    asks.push_back(std::move(slot));
  auto n = asks.size();
  gather<dlq_count_reply>(
      n,
      [self, group, asks = std::move(asks)](std::size_t i) mutable {
        return self->request(asks[i].first, caf::infinite, requeue_atom::value,
                             group, std::move(asks[i].second));
      },
      [self, rp, group, indices,
       names](std::vector<fanned<dlq_count_reply>> slots) mutable {
        rp.deliver(total_of(slots));
        made_candidates(self, group, indices, names); // requeued ones are due
      });
  return rp.later();
}

/// Keeps the one sweep timer at the earliest due time (wall µs).
void arm_sweep(queue_ptr self, storage::micros due) {
  auto& st = self->state;
  if (st.sweep_due && *st.sweep_due <= due)
    return;
  st.sweep_due = due;
  auto delay = due - st.cfg.node.wall();
  if (delay <= 0) // due now: a message, not a timer
    self->send(self, dlq_sweep_atom::value, ++st.sweep_id);
  else
    self->delayed_send(self, std::chrono::microseconds{delay},
                       dlq_sweep_atom::value, ++st.sweep_id);
}

void on_sweep(queue_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (id != st.sweep_id)
    return;
  st.sweep_due.reset();
  if (st.sweeping) {
    st.sweep_again = true;
    return;
  }
  core::dlq_sweeper sweep(st.cfg.node.wall(),
                          st.cfg.record.options.dlq_retention_s,
                          st.cfg.dlq_sweep_step, st.cfg.dlq_sweep_gap);
  {
    auto t = st.cfg.node.store.read();
    if (!t)
      return;
    auto scanned = storage::tables::scan_queue_dlq(
        *t, st.cfg.record.id, [&](std::string_view g, auto& e) {
          sweep.see(g, e);
          return true;
        });
    if (!scanned)
      return;
  }
  auto next = sweep.next();
  if (sweep.expired().empty()) {
    if (next)
      arm_sweep(self, *next);
    return;
  }
  storage::write_batch b;
  for (auto& [group, dlq_id] : sweep.expired())
    b.mutations.emplace_back(
        storage::mut::delete_dlq{st.cfg.record.id, group, dlq_id});
  auto n = sweep.expired().size();
  st.sweeping = true;
  // The next sweep is armed once this one's delete is durable.
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                std::move(b))
      .then(
          [self, n, next](write_result& r) {
            auto& st = self->state;
            st.sweeping = false;
            if (r.ok() && st.cfg.node.metrics)
              st.cfg.node.metrics->dead_letters_expired += n;
            if (std::exchange(st.sweep_again, false))
              arm_sweep(self, st.cfg.node.wall());
            else if (next)
              arm_sweep(self, *next);
          },
          [self](caf::error&) {
            self->state.sweeping = false;
            self->state.sweep_again = false;
          });
}

} // namespace spool::actors::queue_detail
