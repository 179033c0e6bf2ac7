#pragma once

/// Serializes the creation of directory entries (queues in the broker,
/// partitions and options in a queue): while one creation write is in
/// flight, every later request that needs one waits for it and then looks
/// again. So two concurrent first pushes to a new name never create it
/// twice, and two configures never overwrite each other's options. Pure: no
/// CAF include; the owning actor calls it from its handlers only.

#include <functional>
#include <utility>
#include <vector>

namespace spool::core {

class creation_gate {
public:
  /// Whether a creation is in flight.
  bool busy() const noexcept {
    return busy_;
  }

  /// Nothing in flight, nobody waiting and no `leave` running its waiters:
  /// the owner may drop the gate.
  bool idle() const noexcept {
    return !busy_ && waiting_.empty() && leaving_ == 0;
  }

  /// Starts a creation (the gate must be free).
  void enter() noexcept {
    busy_ = true;
  }

  /// Runs `k` once the creation in flight ends (at once if none is).
  void wait(std::function<void()> k) {
    if (!busy_) {
      k();
      return;
    }
    waiting_.push_back(std::move(k));
  }

  /// Ends the creation in flight and runs the waiters in arrival order; a
  /// waiter that starts a creation makes the ones after it wait again.
  void leave() {
    busy_ = false;
    auto ready = std::move(waiting_);
    waiting_.clear();
    ++leaving_;
    for (auto& k : ready)
      wait(std::move(k));
    --leaving_;
  }

private:
  bool busy_ = false;
  int leaving_ = 0; ///< `leave` calls running their waiters
  std::vector<std::function<void()>> waiting_;
};

} // namespace spool::core
