#pragma once

// Runs the real spoold as a child process and reads what it logs, with
// timeouts on every wait (no sleeps).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace spool::test {

class child_process {
public:
  /// Starts `path` with `args`; stdout and stderr both go to one pipe.
  child_process(const std::string& path, const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe(fds) != 0)
      return;
    auto parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      // Killed with the test, even when it aborts before its destructors
      // (when the forking thread ends: every spawn is on the main thread).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(127);
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(path.c_str()));
      for (auto& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(path.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_fd_ = fds[0];
  }

  ~child_process() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0)
      ::close(out_fd_);
  }

  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  bool started() const {
    return pid_ > 0;
  }

  /// Reads output until it contains `needle`; false on timeout or EOF.
  bool wait_for_output(const std::string& needle,
                       std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (output_.find(needle) == std::string::npos) {
      if (!read_some(deadline))
        return false;
    }
    return true;
  }

  void signal(int sig) {
    ::kill(pid_, sig);
  }

  /// Waits for the exit and returns the exit code (nullopt: timeout or a
  /// death by signal). Reads the remaining output meanwhile.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!status_) {
      int st = 0;
      auto r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        status_ = st;
        break;
      }
      if (!read_some(deadline) && std::chrono::steady_clock::now() >= deadline)
        return std::nullopt;
    }
    while (read_some(std::chrono::steady_clock::now())) {
    }
    if (WIFEXITED(*status_))
      return WEXITSTATUS(*status_);
    return std::nullopt;
  }

  const std::string& output() const {
    return output_;
  }

private:
  /// Reads what is available until `deadline`; false on EOF or timeout.
  bool read_some(std::chrono::steady_clock::time_point deadline) {
    if (eof_)
      return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{out_fd_, POLLIN, 0};
    int ms = static_cast<int>(std::max<std::int64_t>(0, left.count()));
    if (::poll(&p, 1, ms) <= 0)
      return false;
    char buf[4096];
    auto n = ::read(out_fd_, buf, sizeof(buf));
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    output_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool eof_ = false;
  std::string output_;
  std::optional<int> status_;
};

} // namespace spool::test
