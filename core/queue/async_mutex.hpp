#pragma once

/// An asynchronous mutex for one actor's handlers: while one holder's work
/// (a write, a fan-out) is in flight, every later request that needs the
/// mutex waits its turn, in arrival order, and then looks again. Used for
/// the creation of directory entries (queues in the broker, partitions and
/// options in a queue: two concurrent first pushes to a new name never
/// create it twice, two configures never overwrite each other's options), a
/// queue's maxSize check, and each group's registration, deletion and seeks.
/// Pure: the owning actor calls it from its handlers only (one thread).

#include <functional>
#include <utility>
#include <vector>

namespace spool::core {

class async_mutex {
public:
  /// Whether a holder's work is in flight.
  bool busy() const noexcept {
    return busy_;
  }

  /// Nothing in flight, nobody waiting and no `leave` running its waiters:
  /// the owner may drop the mutex.
  bool idle() const noexcept {
    return !busy_ && waiting_.empty() && leaving_ == 0;
  }

  /// Takes the mutex (it must be free).
  void enter() noexcept {
    busy_ = true;
  }

  /// Runs `k` once the holder's work ends (at once if there is none).
  void wait(std::function<void()> k) {
    if (!busy_) {
      k();
      return;
    }
    waiting_.push_back(std::move(k));
  }

  /// Releases the mutex and runs the waiters in arrival order; a waiter
  /// that takes it makes the ones after it wait again.
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
