#pragma once

#include <string>
#include <vector>

#include "vocab/slot.hpp"

namespace spool {

/// Slots as ranges, ascending: `0-3,9,12-15` ("none" for no slot). What a
/// cluster node's listings say they cover (`X-Spool-Slots`).
std::string show_slot_ranges(std::vector<slot_t> slots);

} // namespace spool
