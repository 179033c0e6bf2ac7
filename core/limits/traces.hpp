#pragma once

/// The limits of a message trace (docs/traces.md), checked at the broker's
/// edge before the message is even looked up. Pure: no CAF, no storage
/// access.

#include <cstddef>

#include "storage/error.hpp" // expected, api_error
#include "storage/records.hpp"

namespace spool::core {

/// The most bytes of a trace's `data` (its JSON text).
inline constexpr std::size_t max_trace_data = 64u << 10;
/// The most names one trace carries (after repeats are dropped).
inline constexpr std::size_t max_trace_names = 32;

/// Checks `rec` (eventType, consumerGroup and workerId as texts of at most
/// 255 bytes, data present and at most 64 KiB, each name 1..255 bytes of
/// UTF-8 without control characters, at most 32 distinct names) and drops
/// repeated names, keeping the first of each. Errors: `invalid_argument`, or
/// `too_large` for the data.
expected<void> check_trace(storage::trace_record& rec);

} // namespace spool::core
