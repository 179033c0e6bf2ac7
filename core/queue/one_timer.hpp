#pragma once

// One timer message in flight per actor, at the earliest deadline asked
// for: the queue's long poll and DLQ sweep, the broker's namespace parking,
// a partition's retention, a cursor's expiries and the writer's stall
// timer. The timer message carries the id `arm` gave; a later, earlier
// deadline supersedes it, and a superseded message is ignored (`fire` is
// false). No CAF.

#include <cstdint>
#include <optional>

namespace spool::core {

template <class Time>
class one_timer {
public:
  /// The id of a timer message to send for `due`; none when a timer is
  /// armed at `due` or earlier already.
  std::optional<std::uint64_t> arm(Time due) {
    if (armed_ && *armed_ <= due)
      return std::nullopt;
    armed_ = due;
    return ++id_;
  }
  /// Whether a timer message with `id` is the armed one (it is disarmed
  /// then); false for a superseded or cancelled one.
  bool fire(std::uint64_t id) {
    if (id != id_)
      return false;
    armed_.reset();
    return true;
  }
  /// Disarms: the message in flight will be ignored.
  void cancel() {
    armed_.reset();
    ++id_;
  }
  bool armed() const {
    return armed_.has_value();
  }

private:
  std::optional<Time> armed_;
  std::uint64_t id_ = 0;
};

} // namespace spool::core
