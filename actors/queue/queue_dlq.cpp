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
      self, st.cfg.node.writer, st.cfg.node.term, std::move(b),
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
  if (st.deleted) // as a DLQ delete: its rows go with the queue
    return dlq_count_reply{};
  // Every entry's partition is resolved before anything is sent.
  for (auto& e : entries)
    if (!st.names_by_id.contains(e.partition.value))
      return failed<dlq_count_reply>(make_error(
          errc::not_found, "Partition not found: ", e.partition.value));
  if (entries.empty())
    return dlq_count_reply{};
  // The partitions asked in id order, each with its entries in order.
  std::stable_sort(entries.begin(), entries.end(), [](auto& a, auto& b) {
    return a.partition.value < b.partition.value;
  });
  auto groups = core::group_by_name(
      entries.size(), [&](std::size_t i) -> const std::string& {
        return st.names_by_id.at(entries[i].partition.value);
      });
  auto asks = core::distribute<storage::dlq_entry>(
      groups, [&](std::size_t i) -> storage::dlq_entry&& {
        return std::move(entries[i]);
      });
  std::vector<partition_actor> parts;
  for (auto& name : groups.names)
    parts.push_back(live(self, st.partitions.at(name)));
  auto rp = promise_for<dlq_count_reply>(self);
  gather<dlq_count_reply>(
      parts.size(),
      [self, group, parts, asks = std::move(asks)](std::size_t i) mutable {
        return self->request(parts[i], caf::infinite, requeue_atom::value,
                             group, std::move(asks[i]));
      },
      [self, rp, group, names = std::move(groups.names)](
          std::vector<fanned<dlq_count_reply>> slots) mutable {
        rp.deliver(total_of(slots));
        // Requeued ones are due: candidates again, their pops woken.
        for (auto& name : names)
          self->state.candidates.add(group,
                                     self->state.partitions.at(name).index);
        wake_for(self, names, group);
      });
  return rp.later();
}

/// Keeps the one sweep timer at the earliest due time (wall µs).
void arm_sweep(queue_ptr self, storage::micros due) {
  auto& st = self->state;
  auto id = st.sweep_timer.arm(due);
  if (!id)
    return;
  auto delay = due - st.cfg.node.wall();
  if (delay <= 0) // due now: a message, not a timer
    self->send(self, dlq_sweep_atom::value, *id);
  else
    self->delayed_send(self, std::chrono::microseconds{delay},
                       dlq_sweep_atom::value, *id);
}

namespace {

/// A sweep's read or delete failed: it runs again after `write_retry`
/// (a sweep that saw only expired entries has no next one to arm).
void retry_sweep(queue_ptr self) {
  auto& st = self->state;
  arm_sweep(self, st.cfg.node.wall()
                      + std::chrono::microseconds{st.cfg.write_retry}.count());
}

} // namespace

void on_sweep(queue_ptr self, std::uint64_t id) {
  auto& st = self->state;
  if (!st.sweep_timer.fire(id))
    return;
  if (st.sweeping) {
    st.sweep_again = true;
    return;
  }
  core::dlq_sweeper sweep(st.cfg.node.wall(),
                          st.cfg.record.options.dlq_retention_s,
                          st.cfg.dlq_sweep_step, st.cfg.dlq_sweep_gap);
  if (auto t = st.cfg.node.store.read();
      !t
      || !storage::tables::scan_queue_dlq(*t, st.cfg.record.id,
                                          [&](std::string_view g, auto& e) {
                                            sweep.see(g, e);
                                            return true;
                                          }))
    return retry_sweep(self);
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
  write_then(self, st.cfg.node.writer, st.cfg.node.term, std::move(b),
             [self, n, next](std::optional<api_error> failure) {
               auto& st = self->state;
               st.sweeping = false;
               if (failure) {
                 st.sweep_again = false;
                 return retry_sweep(self);
               }
               if (st.cfg.node.metrics)
                 st.cfg.node.metrics->dead_letters_expired += n;
               if (std::exchange(st.sweep_again, false))
                 arm_sweep(self, st.cfg.node.wall());
               else if (next)
                 arm_sweep(self, *next);
             });
}

} // namespace spool::actors::queue_detail
