// spoold: the Spool broker daemon.
//
// What it does today: opens the store (LMDB in --data-dir), recovers and logs
// the catalog, then waits for SIGTERM/SIGINT and closes the store cleanly.
// It does not serve clients yet: the actor core and the HTTP/msgpack front
// doors are later issues, and it says so instead of pretending.

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <pthread.h>

#include "config/options.hpp"
#include "storage/store.hpp"

namespace {

spool::storage::store_options
to_store_options(const spool::config::server_options& opts) {
  spool::storage::store_options s;
  s.env.dir = opts.data_dir;
  s.env.mode = opts.durability == spool::config::durability_mode::strict
                   ? spool::storage::durability::strict
                   : spool::storage::durability::relaxed;
  s.env.initial_map_bytes = static_cast<std::size_t>(opts.initial_map_mib)
                            << 20;
  return s;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = spool::config::parse(
      args, [](const char* name) { return std::getenv(name); });
  if (parsed.help) {
    std::fputs(spool::config::usage().c_str(), stdout);
    return 0;
  }
  if (!parsed.options) {
    std::fprintf(stderr, "spoold: %s\n%s", parsed.error.c_str(),
                 spool::config::usage().c_str());
    return 2;
  }
  auto& opts = *parsed.options;
  spdlog::set_level(spdlog::level::from_str(opts.log_level));

  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  spdlog::info("spoold starting: data dir {}, durability {}", opts.data_dir,
               opts.durability == spool::config::durability_mode::strict
                   ? "strict"
                   : "relaxed");
  auto st = spool::storage::store::open(to_store_options(opts));
  if (!st) {
    spdlog::critical("cannot open the store: {}", to_string(st.err()));
    return 1;
  }
  auto& cat = (*st)->recovered();
  spdlog::info("recovered {} queue(s), {} partition(s)", cat.queues.size(),
               cat.partitions.size());
  for (auto& p : cat.partitions)
    spdlog::info("  queue {} partition '{}' ({}): lastOffset {}, watermark {}",
                 p.queue.value, p.name, p.uuid, p.last_offset().value,
                 p.watermark.value);
  spdlog::warn("no client protocol is built yet (HTTP and msgpack front doors "
               "come with later issues): spoold holds the store open and "
               "serves nothing; stop it with SIGTERM");

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {} received: closing the store", sig);
  if (auto closed = (*st)->close(); !closed) {
    spdlog::critical("closing the store failed: {}", to_string(closed.err()));
    return 1;
  }
  spdlog::info("store closed; bye");
  return 0;
}
