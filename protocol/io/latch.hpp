#pragma once

/// The state of one request in flight on a connection, shared by the
/// thread that answers it and the connection's strand: answered once, and
/// abandoned (its client left) at most once, running what was asked then
/// (a parked pop's cancel).

#include <functional>
#include <mutex>
#include <utility>

namespace spool::io {

class request_latch {
public:
  /// True the first time (the answer goes out), false after.
  bool answer() {
    std::lock_guard lock{mx_};
    if (answered_)
      return false;
    answered_ = true;
    return true;
  }
  /// `f` runs once if the request is abandoned (at once if it was).
  void on_abandon(std::function<void()> f) {
    {
      std::lock_guard lock{mx_};
      if (!abandoned_) {
        fn_ = std::move(f);
        return;
      }
    }
    f();
  }
  /// Its client left: what `on_abandon` asked runs now.
  void abandon() {
    std::function<void()> f;
    {
      std::lock_guard lock{mx_};
      abandoned_ = true;
      f = std::move(fn_);
    }
    if (f)
      f();
  }

private:
  std::mutex mx_;
  bool answered_ = false;
  bool abandoned_ = false;
  std::function<void()> fn_;
};

} // namespace spool::io
