#pragma once

/// The io threads of the front doors: one Asio io_context run by a few
/// threads, shared by the HTTP and msgpack listeners (spoold makes one and
/// hands it to both; a listener made without one makes its own).

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <optional>
#include <thread>
#include <vector>

namespace spool::io {

class pool {
public:
  pool() = default;
  ~pool() {
    stop();
  }
  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;

  asio::io_context& context() {
    return io_;
  }
  /// Starts `n` threads (at least one); once.
  void start(unsigned n) {
    if (!threads_.empty())
      return;
    for (unsigned i = 0; i < std::max(1u, n); ++i)
      threads_.emplace_back([this] { io_.run(); });
  }
  bool started() const {
    return !threads_.empty();
  }
  /// The threads end once nothing is left to run (what is posted runs
  /// first); never started, what is posted runs here. Then joined.
  void stop() {
    if (stopped_)
      return;
    stopped_ = true;
    work_.reset();
    if (threads_.empty())
      io_.run();
    for (auto& t : threads_)
      if (t.get_id() == std::this_thread::get_id())
        t.detach(); // the last owner let go on an io thread: it ends itself
      else
        t.join();
    threads_.clear();
  }

private:
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
      work_{asio::make_work_guard(io_)};
  std::vector<std::thread> threads_;
  bool stopped_ = false;
};

} // namespace spool::io
