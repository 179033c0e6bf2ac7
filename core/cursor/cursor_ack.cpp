// A cursor's acks (cursor_core.hpp, semantics.md §4): one frame by offset
// or transactionId, or the live lease's frames up to an offset.

#include "core/cursor/cursor_core.hpp"

namespace spool::core {

ack_outcome cursor_core::ack(const ack_request& req, offset last_offset,
                             mono_time now) {
  ack_outcome out;
  bool live = lease_ && now < lease_->expires;
  if (req.lease_id || req.lease_epoch) {
    if (!live || (req.lease_id && *req.lease_id != lease_->id)
        || (req.lease_epoch && *req.lease_epoch != lease_->epoch)) {
      out.error = ack_error::invalid_lease;
      return out;
    }
  }
  if (req.up_to) {
    if (!req.lease_id) { // refused by check_ack: never on any lease
      out.error = ack_error::invalid_lease;
      return out;
    }
    return ack_through(*req.up_to, last_offset, now);
  }
  // The frame: by offset, or by transactionId (the frame of the last lease
  // with that id; a frame of an earlier lease is not known); then the rules
  // of an ack by offset, on `at`.
  offset at = req.off;
  if (req.transaction_id) {
    auto off = frame_of(*req.transaction_id);
    if (!off) {
      out.error = live ? ack_error::not_in_lease : ack_error::invalid_lease;
      return out;
    }
    at = *off;
  }
  if (at.value < 0 || at > last_offset) {
    out.error = ack_error::not_found;
    return out;
  }
  // The frame of a requeue lease: its offset is usually at or below
  // committed, so it is recognised before the idempotent check.
  if (lease_ && lease_->requeued && lease_offsets_.front() == at
      && !settled_.front()) {
    if (!live) {
      out.error = ack_error::invalid_lease;
      return out;
    }
    return ack_requeued(req, now);
  }
  // The frame's place in the lease (O(1) for a run of offsets, else a
  // binary search: a list of n acks stays O(n log n)).
  auto idx = lease_index(at);
  // Settled already: idempotent success, nothing changes.
  if (at <= committed_ || is_done(at) || (idx && settled_[*idx]))
    return out;
  if (!live) {
    out.error = ack_error::invalid_lease;
    return out;
  }
  if (!idx) {
    out.error = ack_error::not_in_lease;
    return out;
  }
  out.changed = true;
  switch (req.status) {
  case ack_status::completed:
    complete(*idx);
    out.settled = 1;
    break;
  case ack_status::dlq:
    out.dead = bury(at, req.error);
    settled_[*idx] = true;
    --unsettled_;
    out.settled = 1;
    break;
  case ack_status::failed: {
    out.dead = charge(at, req.error);
    out.settled = out.dead ? 1 : 0; // past retryLimit: done, in the DLQ
    auto delay
        = req.delay ? *req.delay : retry_delay_for(counters(at).failures);
    end_lease(now, delay);
    out.lease_released = true;
    break;
  }
  case ack_status::retry:
    end_lease(now, req.delay.value_or(milliseconds{0}));
    out.lease_released = true;
    break;
  }
  end_if_settled(out, now);
  return out;
}

ack_outcome cursor_core::ack_through(offset up_to, offset last_offset,
                                     mono_time now) {
  ack_outcome out;
  if (up_to.value < 0 || up_to > last_offset) {
    out.error = ack_error::not_found;
    return out;
  }
  // ack() checked the lease named (check_ack: an upTo names one).
  if (!lease_ || now >= lease_->expires) {
    out.error = ack_error::invalid_lease;
    return out;
  }
  if (lease_->requeued) { // one dead letter, usually below committed
    if (lease_offsets_.front() <= up_to && !settled_.front())
      return ack_requeued(ack_request{}, now);
    if (lease_offsets_.front() > up_to && up_to > committed_)
      out.error = ack_error::not_in_lease;
    return out;
  }
  // Every frame of the lease at or below up_to; none at all: the offset
  // is not this lease's, unless it is at or below committed (settled:
  // success, as for one frame). Frames settled already count, so a repeat
  // of a partial ack succeeds.
  bool any = false;
  for (std::size_t i = 0; i < lease_offsets_.size(); ++i) {
    if (lease_offsets_[i] > up_to)
      continue;
    any = true;
    if (settled_[i] || is_done(lease_offsets_[i]))
      continue;
    complete(i);
    out.changed = true;
    ++out.settled;
  }
  if (!any && up_to > committed_)
    out.error = ack_error::not_in_lease;
  if (out.changed)
    end_if_settled(out, now);
  return out;
}

void cursor_core::complete(std::size_t idx) {
  counters(lease_offsets_[idx]).done = true;
  settled_[idx] = true;
  --unsettled_;
}

void cursor_core::end_if_settled(ack_outcome& out, mono_time now) {
  if (lease_ && unsettled_ == 0) {
    end_lease(now, milliseconds{0});
    out.lease_released = true;
  }
  advance();
}

} // namespace spool::core
