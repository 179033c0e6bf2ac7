#pragma once

/// Queue options (semantics.md §9) as `configure` changes them: a patch names
/// only the options a request sets, and `apply_options` checks the result
/// against the documented ranges. Pure: no CAF include.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/error.hpp"
#include "storage/records.hpp"

namespace spool::core {

using spool::options_patch;

/// The inclusive range of an integer option, with its wire name and unit.
struct option_range {
  const char* name; ///< Queen's name, as errors and the wire spell it
  std::int64_t min;
  std::int64_t max;
  const char* unit; ///< "seconds", "ms" or "" (a count)
};

/// The range of every integer option, in §9 order (documented in
/// docs/consumption.md, "Queue options").
const std::vector<option_range>& option_ranges();

/// `base` with `patch` applied, if every option of the result is in range
/// and the combination is allowed (delayedProcessing below a non-zero
/// maxWaitTimeSeconds; windowBufferMax not below windowBuffer). Otherwise an
/// `invalid_argument` error naming the first offending option; nothing is
/// applied then.
/// `encryption_keys`: whether the server has an encryption key; without
/// one, `encryptionEnabled: true` is refused (Queen would store clear text).
expected<storage::queue_options>
apply_options(const storage::queue_options& base, const options_patch& patch,
              bool encryption_keys = false);

} // namespace spool::core
