#pragma once

/// Supervision without cascades (issue 11): a parent (partition, queue,
/// broker) is linked to its children so that its own end ends them, but a
/// child's death does not end the parent. The parent's exit handler gives
/// every exit to `on_child`; an exit it does not claim (the parent's own
/// parent, or a `send_exit` from outside) ends the parent as CAF's default
/// handler would.

#include <caf/exit_reason.hpp>
#include <caf/system_messages.hpp>

#include <spdlog/spdlog.h>

#include "actors/metrics.hpp"

namespace spool::actors {

/// `on_child(source, reason)` returns true when `source` was a child (and
/// handled it).
template <class Self, class OnChild>
void supervise(Self* self, OnChild on_child) {
  self->set_exit_handler([self, on_child](caf::exit_msg& msg) {
    if (on_child(msg.source, msg.reason))
      return;
    if (msg.reason)
      self->quit(std::move(msg.reason));
  });
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
