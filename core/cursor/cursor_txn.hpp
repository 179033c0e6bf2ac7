#pragma once

/// A transaction's acks on one cursor, staged (semantics.md §10): the
/// outcome is computed on a copy of the cursor core and applied only when the
/// transaction commits; an abort drops the copy, so the live cursor (lease,
/// counters, committed) never saw the acks. Pure: no CAF, no storage access.
///
/// Rules on top of §4 (checked in request order, the first failure wins):
/// - `retry` is refused (a transaction commits or aborts, it does not
///   release);
/// - an ack must name its lease (`leaseId` or `leaseEpoch`): a transaction
///   never settles a frame of a lease it did not see;
/// - any §4 error (`Invalid or expired lease`, `Message not in lease`,
///   `Message not found`) aborts the transaction;
/// - acks apply in order on the staged copy, so a `failed` that ends the
///   lease makes a later ack of the same lease fail, as it would outside a
///   transaction.

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/cursor/cursor_core.hpp"

namespace spool::core {

/// Why a staged ack was refused; `index` is its position in the request list.
struct stage_refusal {
  std::size_t index = 0;
  std::string reason;
};

/// Acks validated and applied on a copy of the core, not yet committed.
struct staged_acks {
  /// The cursor as it is once the transaction commits.
  cursor_core after;
  /// One outcome per request, in order.
  std::vector<ack_outcome> outcomes;
  /// Frames the acks dead-letter (their DLQ entries go in the same batch).
  std::vector<dead_letter> dead;
  /// Some ack changed the cursor (its record must be written).
  bool changed = false;
};

/// Validates and applies `reqs` on a copy of `core` at `now`; `core` itself
/// is untouched. `last_offset` tells unknown frames apart.
std::variant<staged_acks, stage_refusal>
stage_acks(const cursor_core& core, const std::vector<ack_request>& reqs,
           offset last_offset, mono_time now);

} // namespace spool::core
