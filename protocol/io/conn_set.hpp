#pragma once

/// The open connections of a listener (HTTP, msgpack): a connection is
/// added unless the listener is closing, draining or full, and removes
/// itself when it closes; shutdown walks a snapshot and waits for the set
/// to empty.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

namespace spool::io {

template <class C>
class conn_set {
public:
  /// `make()`'s connection, added; none when draining, closing or `max`
  /// are open.
  template <class Make>
  std::shared_ptr<C> add(std::size_t max, Make make) {
    std::lock_guard lock{mx_};
    if (closing_ || draining_ || count_.load() >= max)
      return nullptr;
    auto c = make();
    set_.insert(c);
    count_.fetch_add(1);
    return c;
  }
  void remove(const std::shared_ptr<C>& c) {
    std::lock_guard lock{mx_};
    if (set_.erase(c) > 0)
      count_.fetch_sub(1);
  }
  /// Nothing is added from now on; the connections open now (to drain:
  /// none escapes the snapshot).
  std::vector<std::shared_ptr<C>> drain() {
    std::lock_guard lock{mx_};
    draining_ = true;
    return {set_.begin(), set_.end()};
  }
  /// The same, for the last close.
  std::vector<std::shared_ptr<C>> close() {
    std::lock_guard lock{mx_};
    closing_ = true;
    return {set_.begin(), set_.end()};
  }
  std::size_t size() const {
    return count_.load();
  }
  /// Waits until the set is empty, `deadline` passes, or `running()` is
  /// false (nothing would close them).
  template <class Running>
  void wait_empty(std::chrono::steady_clock::time_point deadline,
                  Running running) const {
    while (size() > 0 && running()
           && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds{2});
  }

private:
  std::mutex mx_;
  std::unordered_set<std::shared_ptr<C>> set_;
  std::atomic<std::size_t> count_{0};
  bool draining_ = false;
  bool closing_ = false;
};

} // namespace spool::io
