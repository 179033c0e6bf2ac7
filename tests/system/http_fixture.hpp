#pragma once

// System tests over HTTP: the real spoold on a free loopback port with a
// data folder of its own (its log in a file there), and a small blocking
// HTTP/1.1 client over a plain socket (so that a test can pipeline, send
// broken bytes, or hang up mid-request). Every wait has a timeout.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "unit/storage/fixture.hpp"

namespace spool::test {

using json = nlohmann::json;
using namespace std::chrono_literals;

struct http_response {
  int status = 0;
  std::map<std::string, std::string> headers; ///< names in lower case
  std::string body;

  json body_json() const {
    return json::parse(body);
  }
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string{} : it->second;
  }
};

/// A loopback port free now (the kernel's pick, released again): for a
/// server that must come back on it, or ports named before their servers
/// start (a cluster's peers).
inline std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// One client connection to 127.0.0.1:port: bytes out, bytes in.
class tcp_conn {
public:
  explicit tcp_conn(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw std::runtime_error("cannot connect to port "
                               + std::to_string(port));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~tcp_conn() {
    close();
  }
  tcp_conn(const tcp_conn&) = delete;
  tcp_conn& operator=(const tcp_conn&) = delete;

  void close() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

  /// Sends the bytes as they are.
  void send_raw(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      auto n
          = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0)
        throw std::runtime_error("send failed");
      off += static_cast<std::size_t>(n);
    }
  }

  int fd() const {
    return fd_;
  }

  /// Every byte read so far.
  const std::string& received() const {
    return buf_;
  }

  /// The server closed the connection (EOF) within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout = 5s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto before = buf_.size();
      if (!fill(deadline))
        return eof_;
      if (buf_.size() == before)
        return eof_;
    }
  }

protected:
  bool fill(std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || eof_)
      return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
      return false;
    char tmp[65536];
    auto n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

/// An HTTP/1.1 client connection.
class http_conn : public tcp_conn {
public:
  using tcp_conn::tcp_conn;

  static std::string format(const std::string& method,
                            const std::string& target,
                            const std::string& body = "",
                            const std::string& extra_headers = "") {
    std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    r += extra_headers;
    if (!body.empty() || method == "POST")
      r += "Content-Type: application/json\r\nContent-Length: "
           + std::to_string(body.size()) + "\r\n";
    r += "\r\n" + body;
    return r;
  }

  /// The next response, or none when the server closed the connection or
  /// nothing came within `timeout`.
  /// (`head`: the answer to a HEAD, which has no body whatever its
  /// Content-Length says.)
  std::optional<http_response>
  read_response(std::chrono::milliseconds timeout = 15s, bool is_head = false) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill(deadline))
        return std::nullopt;
    http_response r;
    std::istringstream head{buf_.substr(0, head_end)};
    std::string line;
    std::getline(head, line);
    if (line.size() < 12)
      return std::nullopt;
    r.status = std::stoi(line.substr(9, 3));
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      auto colon = line.find(':');
      if (colon == std::string::npos)
        continue;
      auto name = line.substr(0, colon);
      for (auto& ch : name)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      auto value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ')
        value.erase(0, 1);
      r.headers[name] = value;
    }
    std::size_t len = 0;
    if (auto cl = r.header("content-length"); !cl.empty() && !is_head)
      len = std::stoul(cl);
    auto body_start = head_end + 4;
    while (buf_.size() < body_start + len)
      if (!fill(deadline))
        return std::nullopt;
    r.body = buf_.substr(body_start, len);
    buf_.erase(0, body_start + len);
    return r;
  }

  http_response request(const std::string& method, const std::string& target,
                        const std::string& body = "",
                        const std::string& extra_headers = "",
                        std::chrono::milliseconds timeout = 15s) {
    send_raw(format(method, target, body, extra_headers));
    auto r = read_response(timeout);
    if (!r)
      throw std::runtime_error("no response to " + method + " " + target);
    return *r;
  }
};

/// The real spoold on 127.0.0.1 and a free port; its data folder survives
/// restarts of the process (kill -9, SIGTERM, start again).
class spoold_server {
public:
  explicit spoold_server(std::vector<std::string> extra = {}) :
      extra_(std::move(extra)) {
    start();
  }
  ~spoold_server() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  spoold_server(const spoold_server&) = delete;
  spoold_server& operator=(const spoold_server&) = delete;

  std::filesystem::path data() const {
    return dir_.path / "data";
  }

  /// The options the next `start` passes after the fixture's own.
  void set_options(std::vector<std::string> extra) {
    extra_ = std::move(extra);
  }

  /// Starts spoold (again) and waits until it listens.
  void start() {
    log_path_ = dir_.path / ("spoold-" + std::to_string(++runs_) + ".log");
    std::vector<std::string> args = {
        SPOOLD_PATH, "--data-dir",        data().string(), "--initial-map-mib",
        "16",        "--http-address",    "127.0.0.1",     "--http-port",
        "0",         "--msgpack-address", "127.0.0.1",     "--msgpack-port",
        "0"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    auto parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      // Killed with the test, even when it aborts before its destructors
      // (when the forking thread ends: every spawn is on the main thread).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(127);
      int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv;
      for (auto& a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(SPOOLD_PATH, argv.data());
      ::_exit(127);
    }
    if (!wait_for_log("; ready", 20s))
      throw std::runtime_error("spoold did not start:\n" + log());
    auto text = log();
    auto at = text.find("HTTP listening on 127.0.0.1:");
    port_ = static_cast<std::uint16_t>(std::stoi(
        text.substr(at + std::string{"HTTP listening on 127.0.0.1:"}.size())));
    at = text.find("msgpack on 127.0.0.1:");
    mp_port_ = static_cast<std::uint16_t>(std::stoi(
        text.substr(at + std::string{"msgpack on 127.0.0.1:"}.size())));
  }

  std::uint16_t port() const {
    return port_;
  }
  pid_t pid() const {
    return pid_;
  }
  /// The msgpack door's port.
  std::uint16_t mp_port() const {
    return mp_port_;
  }

  /// The current run's log.
  std::string log() const {
    std::ifstream in{log_path_};
    return {std::istreambuf_iterator<char>{in}, {}};
  }

  /// Waits (polling the log file) until it contains `needle`.
  bool wait_for_log(const std::string& needle,
                    std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (log().find(needle) != std::string::npos)
        return true;
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return log().find(needle) != std::string::npos;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  void kill9() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  void signal(int sig) {
    ::kill(pid_, sig);
  }

  /// Waits until it died by SIGKILL (a fail point's end), up to `timeout`.
  bool wait_killed(std::chrono::milliseconds timeout = 20s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  /// Waits for the exit: the exit code, or none (a signal, or a timeout).
  std::optional<int> wait_exit(std::chrono::milliseconds timeout = 20s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        if (WIFEXITED(st))
          return WEXITSTATUS(st);
        // A death by signal is a crash: say which, with spoold's own words.
        std::fprintf(stderr, "spoold died by signal %d; its log:\n%s\n",
                     WTERMSIG(st), log().c_str());
        return std::nullopt;
      }
      std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
  }

  /// One request on a connection of its own, answered within `timeout`.
  http_response request(const std::string& method, const std::string& target,
                        const std::string& body = "",
                        std::chrono::milliseconds timeout = 15s) {
    http_conn c{port_};
    return c.request(method, target, body, "", timeout);
  }
  http_response get(const std::string& target) {
    return request("GET", target);
  }
  http_response post(const std::string& target, const std::string& body) {
    return request("POST", target, body);
  }
  http_response del(const std::string& target) {
    return request("DELETE", target);
  }

  /// One series' value on the Prometheus page (`name` with its labels,
  /// as printed), -1 when the page does not show it.
  std::int64_t metric(const std::string& series) {
    auto text = get("/metrics/prometheus").body;
    auto at = text.find("\n" + series + " ");
    if (at == std::string::npos)
      return -1;
    return std::stoll(text.substr(at + series.size() + 2));
  }

  /// A deadline poll: true once `series` reads a value `ok` accepts, false
  /// if it does not within `timeout`.
  template <class Ok, class = std::enable_if_t<
                          std::is_invocable_r_v<bool, Ok, std::int64_t>>>
  bool metric_becomes(const std::string& series, Ok ok,
                      std::chrono::milliseconds timeout = 5s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!ok(metric(series))) {
      if (std::chrono::steady_clock::now() >= deadline)
        return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }
  bool metric_becomes(const std::string& series, std::int64_t value,
                      std::chrono::milliseconds timeout = 5s) {
    return metric_becomes(
        series, [value](std::int64_t v) { return v == value; }, timeout);
  }

private:
  temp_dir dir_;
  std::vector<std::string> extra_;
  std::filesystem::path log_path_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  std::uint16_t mp_port_ = 0;
  int runs_ = 0;
};

/// A push body of `n` items to `queue` (payload {"n": i}).
inline std::string push_body(const std::string& queue, int n,
                             const std::string& partition = "Default",
                             int first = 0) {
  json items = json::array();
  for (int i = first; i < first + n; ++i)
    items.push_back(
        {{"queue", queue}, {"partition", partition}, {"payload", {{"n", i}}}});
  return json{{"items", items}}.dump();
}

} // namespace spool::test
