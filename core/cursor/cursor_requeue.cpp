// The requeue lifecycle of a cursor's dead letters (semantics.md §4): a DLQ
// entry requeued to its group is delivered again alone, before new frames,
// until acked (it leaves the DLQ) or failed past the limit (it returns).
// Planning and granting, and settlement, are in cursor_core.cpp.

#include "core/cursor/cursor_core.hpp"

#include <algorithm>

namespace spool::core {

// -- requeued dead letters ----------------------------------------------------

cursor_core::requeue_result cursor_core::requeue(std::uint64_t dlq_id,
                                                 offset off) {
  if (find_requeued(dlq_id) != nullptr)
    return requeue_result::pending;
  if (requeued_.size() >= max_requeued)
    return requeue_result::full;
  requeued_.push_back(storage::requeued_frame{dlq_id, off, 0, 0, false});
  return requeue_result::added;
}

bool cursor_core::drop_requeued(std::uint64_t dlq_id) {
  auto it = std::find_if(requeued_.begin(), requeued_.end(),
                         [&](auto& r) { return r.dlq_id == dlq_id; });
  if (it == requeued_.end() || it->leased)
    return false;
  requeued_.erase(it);
  return true;
}

storage::requeued_frame* cursor_core::find_requeued(std::uint64_t dlq_id) {
  for (auto& r : requeued_)
    if (r.dlq_id == dlq_id)
      return &r;
  return nullptr;
}

ack_outcome cursor_core::ack_requeued(const ack_request& req, mono_time now) {
  ack_outcome out;
  auto id = *lease_->requeued;
  out.changed = true;
  out.lease_released = true;
  settled_.front() = true;
  switch (req.status) {
  case ack_status::completed:
    requeued_.erase(std::find_if(requeued_.begin(), requeued_.end(),
                                 [&](auto& r) { return r.dlq_id == id; }));
    out.requeue_done = id;
    out.settled = 1;
    end_lease(now, milliseconds{0});
    break;
  case ack_status::dlq:
    out.dead = return_requeued(id, req.error);
    end_lease(now, milliseconds{0});
    break;
  case ack_status::failed: {
    auto failures = find_requeued(id)->failures + 1;
    out.dead = charge_requeued(id, req.error);
    end_lease(now, req.delay ? *req.delay : retry_delay_for(failures));
    break;
  }
  case ack_status::retry:
    end_lease(now, req.delay.value_or(milliseconds{0}));
    break;
  }
  return out;
}

std::optional<dead_letter>
cursor_core::charge_requeued(std::uint64_t dlq_id, const std::string& error) {
  auto* r = find_requeued(dlq_id);
  if (r == nullptr)
    return std::nullopt;
  r->failures += 1;
  if (static_cast<std::int64_t>(r->failures) > policy_.retry_limit)
    return return_requeued(dlq_id, error);
  return std::nullopt;
}

dead_letter cursor_core::return_requeued(std::uint64_t dlq_id,
                                         std::string error) {
  auto it = std::find_if(requeued_.begin(), requeued_.end(),
                         [&](auto& r) { return r.dlq_id == dlq_id; });
  dead_letter d{it->off, std::move(error), it->deliveries, it->failures,
                dlq_id};
  requeued_.erase(it);
  return d;
}

} // namespace spool::core
