#include "core/cursor/cursor_txn.hpp"

#include <algorithm>

namespace spool::core {

std::variant<staged_acks, stage_refusal>
stage_acks(const cursor_core& core, const std::vector<ack_request>& reqs,
           offset last_offset, mono_time now) {
  staged_acks staged{core, {}, {}, false};
  staged.outcomes.reserve(reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    auto* req = &reqs[i];
    if (req->status == ack_status::retry)
      return stage_refusal{i, "retry is not allowed in a transaction"};
    ack_request named;
    if (!req->lease_id && !req->lease_epoch) {
      if (!req->lease_in || req->lease_in->empty())
        return stage_refusal{i, "an ack in a transaction must name its lease"};
      // Named at the body level: the live lease must be one of them (an
      // earlier failed ack of this transaction may have ended it).
      auto live = staged.after.live_lease(now);
      if (!live
          || !std::binary_search(req->lease_in->begin(), req->lease_in->end(),
                                 live->id))
        return stage_refusal{i, to_string(ack_error::invalid_lease)};
      named = *req;
      named.lease_id = live->id;
      req = &named;
    }
    auto out = staged.after.ack(*req, last_offset, now);
    if (out.error != ack_error::none)
      return stage_refusal{i, to_string(out.error)};
    staged.changed = staged.changed || out.changed;
    if (out.dead)
      staged.dead.push_back(*out.dead);
    staged.outcomes.push_back(std::move(out));
  }
  return staged;
}

} // namespace spool::core
