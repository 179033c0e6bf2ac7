#pragma once

// A window of requests in flight, for the benchmarks that pipeline
// requests on one connection (mp_bench, partitions_bench).

#include <condition_variable>
#include <mutex>

namespace spool::bench {

/// Keeps `n` requests in flight until `more()` says stop; waits for the
/// last answer.
class window {
public:
  explicit window(int n) : n_(n) {
  }
  template <class Send>
  void run(Send send) {
    std::unique_lock lock{mx_};
    while (true) {
      cv_.wait(lock, [&] { return open_ < n_ || failed_; });
      if (failed_ || stop_)
        break;
      ++open_;
      lock.unlock();
      bool go = send();
      lock.lock();
      if (!go) {
        --open_;
        stop_ = true;
      }
    }
    cv_.wait(lock, [&] { return open_ == 0; });
  }
  void done(bool ok) {
    std::lock_guard lock{mx_};
    --open_;
    if (!ok)
      failed_ = true;
    cv_.notify_all();
  }
  bool failed() const {
    return failed_;
  }

private:
  int n_;
  int open_ = 0;
  bool stop_ = false;
  bool failed_ = false;
  std::mutex mx_;
  std::condition_variable cv_;
};

} // namespace spool::bench
