#pragma once

/// Where a consumer group starts (semantics.md §5, the product document's
/// "Where a new consumer group starts"): the timestamp grammar and the
/// record a group's first pop registers. Pure: no CAF include.

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "storage/records.hpp"
#include "storage/types.hpp"
#include "vocab/delivery.hpp"

namespace spool::core {

/// The internal group of pops without a consumer group (queue mode): always
/// registers as `all`, its modes ignored.
inline constexpr std::string_view queue_mode_group = spool::queue_mode_group;

/// An RFC 3339 date-time (`2026-07-30T00:00:00Z`, `…T02:00:00.5+02:00`):
/// `T` or `t` or a space between date and time, `Z`/`z` or `±hh:mm`;
/// fraction digits beyond µs are truncated. Answers µs since the epoch
/// (UTC), or none when unparsable.
std::optional<storage::micros> parse_timestamp(std::string_view text);

/// What a pop says about where a new group starts; empty means absent.
struct subscription_params {
  std::string mode; ///< subscriptionMode: new / new-only, anything else all
  std::string from; ///< subscriptionFrom: `now` or an RFC 3339 timestamp
};

/// The record a group's first pop registers at `now`. Precedence:
/// subscriptionFrom=timestamp > subscriptionFrom=now > subscriptionMode >
/// `server_default`. An unparsable subscriptionFrom means `new` at `now`.
/// Queue mode is always `all`.
storage::subscription_record
registration(std::string_view group, const subscription_params& params,
             storage::subscription_mode server_default, storage::micros now);

/// The `registered_at` stamps of one queue's registrations: strictly
/// increasing (`max(wall, last + 1)`), even within one microsecond or with
/// the wall clock stepping back, so a subscription update that read one
/// registration never applies to another of the same group (its ABA
/// guard). Seeded from the stored records at start.
class registration_clock {
public:
  /// A stored registration stamped at `at`.
  void saw(storage::micros at) noexcept {
    last_ = std::max(last_, at);
  }
  /// The stamp of a new registration at wall time `wall`.
  storage::micros next(storage::micros wall) noexcept {
    last_ = std::max(wall, last_ + 1);
    return last_;
  }

private:
  storage::micros last_ = 0;
};

/// `all`, `new` or `timestamp` (for messages and listings).
std::string_view to_string(storage::subscription_mode mode);

} // namespace spool::core
