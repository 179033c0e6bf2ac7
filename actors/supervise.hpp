#pragma once

/// Supervision without cascades (issue 11): a parent (partition, queue,
/// broker) is linked to its children so that its own end ends them, but a
/// child's death does not end the parent. The parent's exit handler gives
/// every exit to `on_child`; an exit it does not claim (the parent's own
/// parent, or a `send_exit` from outside) ends the parent as CAF's default
/// handler would.

#include <caf/actor_clock.hpp>
#include <caf/exit_reason.hpp>
#include <caf/system_messages.hpp>

#include <chrono>
#include <deque>

#include <spdlog/spdlog.h>

#include "actors/metrics.hpp"
#include "storage/mutation.hpp"

namespace spool::actors {

/// `on_child(source, reason)` returns true when `source` was a child (and
/// handled it). `on_stop` runs before the parent ends (a stop, or its own
/// parent's end): it answers what it holds (parked pops) as it should be
/// answered (empty); promises it does not answer get
/// `request_receiver_down` as they go (`promise.hpp`).
template <class Self, class OnChild, class OnStop>
void supervise(Self* self, OnChild on_child, OnStop on_stop) {
  self->set_exit_handler([self, on_child, on_stop](caf::exit_msg& msg) {
    if (on_child(msg.source, msg.reason))
      return;
    if (msg.reason) {
      on_stop();
      self->quit(std::move(msg.reason));
    }
  });
}

template <class Self, class OnChild>
void supervise(Self* self, OnChild on_child) {
  supervise(self, std::move(on_child), [] {});
}

/// Restarts a parent allows: more than `max` child deaths within `window`
/// is not a transient fault (a record that fails every start, say), so the
/// parent ends instead of restarting in a loop (and its own parent, or
/// spoold, takes over).
struct restart_budget {
  std::size_t max = 10;
  std::chrono::seconds window{60};
  std::deque<caf::actor_clock::time_point> recent;

  /// Records a death at `now`; false when the budget is spent.
  bool spend(caf::actor_clock::time_point now) {
    while (!recent.empty() && recent.front() + window <= now)
      recent.pop_front();
    recent.push_back(now);
    return recent.size() <= max;
  }
};

/// The write barrier before a restart reads storage: an empty batch through
/// the (FIFO) writer is answered only after every batch the dead child sent
/// before it, so the restarted one reads what they wrote.
inline storage::write_batch barrier() {
  return {};
}

/// Logs and counts a child's death (a bug: no write failure ends an actor)
/// and says how it comes back.
inline void note_death(const std::shared_ptr<node_metrics>& metrics,
                       const char* what, const std::string& name,
                       const caf::error& reason, const char* restart) {
  spdlog::error("{} {} died ({}): {}", what, name, caf::to_string(reason),
                restart);
  if (metrics)
    metrics->actor_restarts += 1;
}

} // namespace spool::actors
