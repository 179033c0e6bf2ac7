#pragma once

// Running the `spool` CLI against a spoold under test: its exit code and
// output (cli_test.cpp, cluster_test.cpp).

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "system/http_fixture.hpp"

namespace spool::test {

struct cli_result {
  int code = -1;
  std::string out; ///< stdout (and stderr, when asked for)
  std::chrono::milliseconds took{0};
  json j() const {
    return json::parse(out);
  }
};

/// Runs `spool <args>` with SPOOL_SERVER=`server`, stdin from `stdin_path`:
/// its exit code, its stdout (with stderr when `with_stderr`) and how long
/// it took.
inline cli_result run_cli(const std::string& server, const std::string& args,
                          const std::string& stdin_path, bool with_stderr) {
  auto cmd = "SPOOL_SERVER=" + server + " " + std::string{SPOOL_CLI_PATH} + " "
             + args + " < " + stdin_path
             + (with_stderr ? " 2>&1" : " 2>/dev/null");
  cli_result r;
  auto start = std::chrono::steady_clock::now();
  auto* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, n);
  auto st = ::pclose(p);
  r.took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

/// `srv`'s msgpack door as `--server` takes it.
inline std::string mp_address(const spoold_server& srv) {
  return "127.0.0.1:" + std::to_string(srv.mp_port());
}

} // namespace spool::test
