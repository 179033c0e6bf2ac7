#pragma once

/// Spool's CAF scheduler: work stealing whose steal takes constant time.
///
/// CAF 0.17's `work_stealing` keeps each worker's jobs in a singly linked
/// list and steals from its tail by walking the list from the head, under
/// both of its locks (`double_ended_queue::take_tail`). When one actor wakes
/// many (a queue fanning a seek out to 10,000 partitions), the thief walks
/// thousands of nodes per stolen job while the owner cannot touch its own
/// queue: quadratic in the burst (a seek of 10,000 partitions took 2 s
/// instead of 0.1 s). This policy is the same algorithm (own queue first,
/// steal the oldest job of a random victim, poll aggressively, then
/// moderately, then sleep) over a `std::deque` under one mutex per worker,
/// so every operation is O(1). One addition: a job queued on a busy worker
/// wakes a sleeping worker to steal it, instead of leaving it until that
/// worker's next timeout; so idle workers poll only briefly before they
/// sleep.

#include <caf/actor_system_config.hpp>

#include <cstddef>
#include <string_view>

namespace spool::actors {

/// Makes actor systems built from `cfg` use the scheduler named `policy`
/// with `threads` workers: "spool" (this one, the default of spoold and the
/// benchmarks), or CAF's own "stealing" or "sharing" (for comparison).
/// False for any other name.
bool use_scheduler(caf::actor_system_config& cfg, std::string_view policy,
                   std::size_t threads);

} // namespace spool::actors
