#pragma once

// spoold as a child process of a benchmark, on free loopback ports with a
// data folder of its own (or a running one given by port), with its CPU
// and RSS read from /proc; and this process's own CPU.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace spool::bench {

/// spoold as a child process (unless --port names a running one).
struct spoold_child {
  pid_t pid = -1;
  int port = 0;    ///< HTTP
  int mp_port = 0; ///< msgpack
  std::filesystem::path dir;

  /// More arguments for spoold (cluster mode's, set before `start`).
  std::vector<std::string> extra;

  /// Starts `spoold` (durability, extra parked pops) unless `fixed_port`
  /// names a running one.
  void start(const std::string& spoold, int fixed_port,
             const std::string& durability, int parked_pops = 100) {
    if (fixed_port) {
      port = fixed_port;
      return;
    }
    char tmpl[] = "/tmp/spool-bench-XXXXXX";
    dir = ::mkdtemp(tmpl);
    binary_ = spoold;
    durability_ = durability;
    parked_ = parked_pops;
    launch();
  }

  /// Starts it again on the same data (after `kill9` or `stop`).
  void launch() {
    auto log = dir / "spoold.log";
    std::error_code ec; // the last run's ports are not read as this one's
    std::filesystem::remove(log, ec);
    auto parent = ::getpid();
    pid = ::fork();
    if (pid == 0) {
      // Killed with the bench, even when it aborts before its destructors
      // (when the forking thread ends: every spawn is on the main thread).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(127);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::string data = (dir / "data").string();
      std::string parked = std::to_string(parked_ + 100);
      std::vector<const char*> argv = {binary_.c_str(),
                                       "--data-dir",
                                       data.c_str(),
                                       "--http-address",
                                       "127.0.0.1",
                                       "--http-port",
                                       "0",
                                       "--msgpack-address",
                                       "127.0.0.1",
                                       "--msgpack-port",
                                       "0",
                                       "--durability",
                                       durability_.c_str(),
                                       "--pop-max-parked",
                                       parked.c_str(),
                                       "--log-level",
                                       "info"};
      for (auto& a : extra)
        argv.push_back(a.c_str());
      argv.push_back(nullptr);
      ::execv(binary_.c_str(), const_cast<char**>(argv.data()));
      ::_exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in{log};
      std::string text{std::istreambuf_iterator<char>{in}, {}};
      auto at = text.find("HTTP listening on 127.0.0.1:");
      auto mp = text.find("msgpack on 127.0.0.1:");
      if (at != std::string::npos && mp != std::string::npos
          && text.find("; ready") != std::string::npos) {
        port = std::stoi(text.substr(at + 28));
        mp_port = std::stoi(text.substr(mp + 21));
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    std::fprintf(stderr, "spoold did not start\n");
    std::exit(1);
  }

  /// Killed with SIGKILL (its data stays for `launch`).
  void kill9() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }

  /// Stopped with SIGTERM, waited for (its data stays for `launch`).
  void stop() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }

  /// spoold's user+sys CPU seconds so far.
  double cpu() const {
    if (pid <= 0)
      return 0;
    std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
    std::string s{std::istreambuf_iterator<char>{in}, {}};
    auto rp = s.rfind(')');
    std::vector<std::string> f;
    std::size_t i = rp + 2;
    while (i < s.size()) {
      auto j = s.find(' ', i);
      f.push_back(s.substr(i, j - i));
      if (j == std::string::npos)
        break;
      i = j + 1;
    }
    // fields after the name: state is f[0]; utime is field 14 → f[11]
    return (std::stod(f[11]) + std::stod(f[12]))
           / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }

  long rss_kb() const {
    return status_kb("VmRSS:");
  }

  /// A field of /proc/PID/status in kB (`VmRSS:`, `RssAnon:`, `VmHWM:`);
  /// 0 if absent.
  long status_kb(const std::string& field) const {
    std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(field, 0) == 0)
        return std::stol(line.substr(field.size()));
    return 0;
  }

  ~spoold_child() {
    bool hung = false;
    if (pid > 0) {
      // A clean stop, within 30 s; past it, SIGKILL and say so (a stop that
      // hangs is a bug to report, not a reason to hang the bench).
      ::kill(pid, SIGTERM);
      auto deadline
          = std::chrono::steady_clock::now() + std::chrono::seconds{30};
      while (::waitpid(pid, nullptr, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          std::fprintf(stderr,
                       "spoold (pid %d) did not stop within 30 s of SIGTERM: "
                       "killed; its log stays: %s\n",
                       static_cast<int>(pid), (dir / "spoold.log").c_str());
          ::kill(pid, SIGKILL);
          ::waitpid(pid, nullptr, 0);
          hung = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
      }
    }
    if (!dir.empty() && !hung) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }

private:
  std::string binary_;
  std::string durability_ = "strict";
  int parked_ = 100;
};

inline double self_cpu() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec)
         + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

} // namespace spool::bench
