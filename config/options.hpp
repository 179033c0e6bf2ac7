#pragma once

/// Server options: defaults, environment variables (SPOOL_*), command line
/// (wins over the environment), and validation. No CAF, no storage types.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace spool::config {

enum class durability_mode : std::uint8_t { strict, relaxed };

/// Server-wide caps on pops (semantics.md §3: `pop.max*`).
struct pop_limits {
  /// Largest `batch` (--pop-max-batch, SPOOL_POP_MAX_BATCH).
  std::uint64_t max_batch = 10'000;
  /// Largest wildcard `partitions` (--pop-max-partitions).
  std::uint64_t max_partitions = 100;
  /// Longest long-poll `timeout` in ms (--pop-max-timeout-ms).
  std::uint64_t max_timeout_ms = 300'000;
  /// A response stops adding frames past this many payload bytes (at least
  /// one frame) (--pop-max-bytes).
  std::uint64_t max_bytes = 64u << 20;
  /// Parked long-poll pops per server; beyond, a pop is refused (503)
  /// (--pop-max-parked).
  std::uint64_t max_parked = 10'000;
  /// Namespace/task pops serve a queue whose oldest waiting frame is older
  /// than this first, whatever its priority
  /// (--priority-max-starvation-seconds).
  std::uint64_t max_starvation_s = 30;
};

/// Server-wide caps on one push request (issue 11: every input bounded).
struct push_limits {
  /// Most items in one push or transaction (--push-max-items).
  std::uint64_t max_items = 100'000;
  /// Most payload bytes in one push or transaction (--push-max-bytes).
  std::uint64_t max_bytes = std::uint64_t{256} << 20;
};

/// Lease settings (semantics.md §4).
struct lease_limits {
  /// An extend adds 1..this many seconds (--lease-max-extend-seconds,
  /// `lease.maxExtendSeconds`).
  std::uint64_t max_extend_s = 3'600;
};

/// Server-wide retention settings (semantics.md §7).
struct retention_settings {
  /// Retention runs on each partition at least this often, in seconds
  /// (--retention-interval-seconds, SPOOL_RETENTION_INTERVAL_SECONDS).
  std::uint64_t interval_s = 10;
};

struct server_options {
  /// Folder of the LMDB environment (SPOOL_DATA_DIR, --data-dir).
  std::string data_dir = "./data";
  /// strict = fsync per group commit (default); relaxed = no fsync.
  durability_mode durability = durability_mode::strict;
  /// spdlog level name (SPOOL_LOG_LEVEL, --log-level).
  std::string log_level = "info";
  /// First LMDB map size in MiB; the map grows on demand.
  std::uint64_t initial_map_mib = 1024;
  pop_limits pop;
  push_limits push;
  lease_limits lease;
  /// Where a consumer group starts when its first pop names no mode:
  /// `all` (false) or `new` (true) (--default-subscription-mode,
  /// SPOOL_DEFAULT_SUBSCRIPTION_MODE; semantics.md §5).
  bool default_subscription_new = false;
  retention_settings retention;
};

/// The result of parsing: options, a request for help, or an error message.
struct parse_result {
  std::optional<server_options> options;
  bool help = false;
  std::string error;
};

/// Reads `getenv`-style lookups, then `args` (argv without the program name).
parse_result parse(const std::vector<std::string>& args,
                   const std::function<const char*(const char*)>& getenv);

/// Usage text for --help.
std::string usage();

} // namespace spool::config
