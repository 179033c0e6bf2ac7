#pragma once

/// Server options: defaults, a TOML file, environment variables (SPOOL_*),
/// command line (each wins over the one before), and validation. One table
/// of options (options.cpp) names each once: its flag, its variable, its
/// file key, its help line. No CAF, no storage types.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/cluster.hpp"
#include "config/security.hpp"

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

/// Partitions as virtual actors (docs/architecture.md, "Passivation").
struct partition_settings {
  /// A partition actor untouched this long stops, if it holds nothing but
  /// its stored rows (--partition-idle-seconds; 0 = never).
  std::uint64_t idle_s = 0;
  /// Past this many live partition actors on the node, the least recently
  /// used idle ones stop first (--partition-max-live; 0 = no cap).
  std::uint64_t max_live = 0;
};

/// The HTTP front door (protocol/http/server.hpp).
struct http_settings {
  /// Listen address (--http-address); 0.0.0.0 = every interface.
  std::string address = "0.0.0.0";
  /// Port (--http-port); 0 = a free one (tests), logged at start.
  std::uint64_t port = 6632;
  /// io threads for the front doors (--io-threads).
  std::uint64_t io_threads = 1;
  /// Open connections at most; beyond, 503 and close
  /// (--http-max-connections).
  std::uint64_t max_connections = 20'000;
  /// Request body bytes at most (413 beyond) (--http-max-body-bytes).
  std::uint64_t max_body_bytes = std::uint64_t{64} << 20;
  /// Request line and headers at most (431 beyond)
  /// (--http-max-header-bytes).
  std::uint64_t max_header_bytes = 64u << 10;
  /// Requests answered at once per connection (pipelining); a client
  /// sending more is not read meanwhile (--http-max-pipeline).
  std::uint64_t max_pipeline = 16;
  /// A connection with nothing in flight closes after this
  /// (--http-idle-timeout-ms).
  std::uint64_t idle_timeout_ms = 60'000;
  /// A request must arrive whole this soon after its first byte, else 408
  /// (--http-request-timeout-ms).
  std::uint64_t request_timeout_ms = 30'000;
  /// One log line per answered request (--access-log true|false).
  bool access_log = false;
};

/// The msgpack/TCP front door (protocol/tcp/server.hpp); it shares the
/// io threads of the HTTP door (`--io-threads`).
struct msgpack_settings {
  /// Listen address (--msgpack-address).
  std::string address = "0.0.0.0";
  /// Port (--msgpack-port); 0 = a free one (tests), logged at start.
  std::uint64_t port = 6690;
  /// Open connections at most; beyond, an `unavailable` frame and close
  /// (--msgpack-max-connections).
  std::uint64_t max_connections = 20'000;
  /// A frame's length at most; beyond, a `too_large` frame and close
  /// (--msgpack-max-frame-bytes, `msgpack.maxFrameBytes`).
  std::uint64_t max_frame_bytes = std::uint64_t{64} << 20;
  /// Unanswered requests per connection; beyond, it is not read
  /// (--msgpack-max-in-flight, `msgpack.maxInFlight`).
  std::uint64_t max_in_flight = 1024;
  /// A connection with nothing in flight closes after this
  /// (--msgpack-idle-timeout-ms).
  std::uint64_t idle_timeout_ms = 600'000;
  /// A frame must arrive whole this soon after its first byte
  /// (--msgpack-frame-timeout-ms).
  std::uint64_t frame_timeout_ms = 30'000;
};

struct server_options {
  /// Folder of the LMDB environment (SPOOL_DATA_DIR, --data-dir).
  std::string data_dir = "./data";
  /// strict = fsync per group commit (default); relaxed = one fsync per commit,
  /// not two (MDB_NOMETASYNC).
  durability_mode durability = durability_mode::strict;
  /// Segment bodies are zstd-compressed when that makes them smaller
  /// (--segment-compression zstd, the default), or stored raw (off).
  bool segment_compression = true;
  /// spdlog level name (SPOOL_LOG_LEVEL, --log-level).
  std::string log_level = "info";
  /// First LMDB map size in MiB; the map grows on demand.
  std::uint64_t initial_map_mib = 1024;
  /// The number of slots of a store this start creates (--slots); a store
  /// that exists keeps its own (docs/storage.md, "Slots").
  std::uint64_t slots = 256;
  /// Each slot's log keeps its last this many batches (--slot-log-entries;
  /// docs/storage.md, "The slot log").
  std::uint64_t slot_log_entries = 100'000;
  /// ... and no more than this many MiB of them (--slot-log-mib).
  std::uint64_t slot_log_mib = 64;
  pop_limits pop;
  push_limits push;
  lease_limits lease;
  /// Where a consumer group starts when its first pop names no mode:
  /// `all` (false) or `new` (true) (--default-subscription-mode,
  /// SPOOL_DEFAULT_SUBSCRIPTION_MODE; semantics.md §5).
  bool default_subscription_new = false;
  retention_settings retention;
  partition_settings partitions;
  http_settings http;
  msgpack_settings msgpack;
  /// On SIGTERM, in-flight requests get this long to be answered before
  /// their connections are closed (--shutdown-grace-ms).
  std::uint64_t shutdown_grace_ms = 10'000;
  /// Cluster mode (--peers and the rest; none: one node).
  cluster_settings cluster;
  /// Tokens, roles, the audit log (docs/security.md).
  auth_settings auth;
  /// TLS on the front doors (docs/security.md, "TLS").
  tls_settings tls;
  /// Encryption at rest (docs/security.md, "Encryption at rest").
  encryption_settings encryption;
  /// The TOML file read (--config, SPOOL_CONFIG), "" for none.
  std::string config_file;
};

/// The result of parsing: options, a request for help, or an error message.
struct parse_result {
  std::optional<server_options> options;
  bool help = false;
  bool version = false; ///< `--version`: print the version, start nothing
  std::string error;
};

/// Defaults, then the TOML file named by `--config` or SPOOL_CONFIG (its
/// keys are the option names; a table's name prefixes its keys: `[http]
/// port = 6632` is `http-port`), then `getenv`-style lookups (SPOOL_*), then
/// `args` (argv without the program name): each later source wins.
parse_result parse(const std::vector<std::string>& args,
                   const std::function<const char*(const char*)>& getenv);

/// Usage text for --help: every option with its variable and default.
std::string usage();

/// Every option's name and value (logged at start).
std::vector<std::pair<std::string, std::string>>
describe(const server_options& opts);

} // namespace spool::config
