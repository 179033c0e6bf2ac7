#include "config/options.hpp"

#include "config/option_table.hpp"
#include "config/security.hpp"

#include <toml++/toml.h>

#include <cctype>
#include <charconv>
#include <string_view>

namespace spool::config {

using detail::flag;
using detail::num;
using detail::option;

namespace {

/// The options of this file; `table` adds the others'.
const std::vector<option>& base_table() {
  static const std::vector<option> t = {
      {"data-dir", "LMDB folder",
       [](server_options& o, const std::string& v) -> std::string {
         if (v.empty())
           return "data-dir must not be empty";
         o.data_dir = v;
         return {};
       },
       [](const server_options& o) { return o.data_dir; }},
      {"durability",
       "strict (fsync per group commit) | relaxed (one fsync per commit, not "
       "two: MDB_NOMETASYNC)",
       [](server_options& o, const std::string& v) -> std::string {
         if (v == "strict")
           o.durability = durability_mode::strict;
         else if (v == "relaxed")
           o.durability = durability_mode::relaxed;
         else
           return "durability must be strict or relaxed, got '" + v + "'";
         return {};
       },
       [](const server_options& o) {
         return std::string{
             o.durability == durability_mode::strict ? "strict" : "relaxed"};
       }},
      {"log-level", "trace | debug | info | warn | error | critical | off",
       [](server_options& o, const std::string& v) -> std::string {
         static constexpr std::string_view levels[]
             = {"trace", "debug", "info", "warn", "error", "critical", "off"};
         for (auto l : levels)
           if (v == l) {
             o.log_level = v;
             return {};
           }
         return "log-level must be one of trace, debug, info, warn, error, "
                "critical, off; got '"
                + v + "'";
       },
       [](const server_options& o) { return o.log_level; }},
      num("initial-map-mib", "first LMDB map size; grows on demand", 1,
          1u << 20,
          [](server_options& o) -> std::uint64_t& {
            return o.initial_map_mib;
          }),
      num("slots",
          "slots of a store created now (a store keeps the number it was "
          "created with)",
          1, 65536,
          [](server_options& o) -> std::uint64_t& { return o.slots; }),
      num("slot-log-entries",
          "each slot's log keeps its last this many batches (what a "
          "follower can catch up from, and truncate can undo)",
          1, std::uint64_t{1} << 40,
          [](server_options& o) -> std::uint64_t& {
            return o.slot_log_entries;
          }),
      num("slot-log-mib",
          "each slot's log keeps no more than this many MiB of batches (the "
          "newest always stays)",
          1, std::uint64_t{1} << 20,
          [](server_options& o) -> std::uint64_t& { return o.slot_log_mib; }),
      {"node-id", "this node's name among peers (cluster mode)",
       [](server_options& o, const std::string& v) -> std::string {
         o.cluster.node_id = v;
         return {};
       },
       [](const server_options& o) { return o.cluster.node_id; }},
      {"peers",
       "every node of the cluster with its peer address, "
       "n1=host:port,n2=host:port,... (none: one node)",
       [](server_options& o, const std::string& v) {
         return parse_peers(v, o.cluster.peers);
       },
       [](const server_options& o) { return show_peers(o.cluster.peers); }},
      num("replication-factor", "nodes that hold each slot (cluster mode)", 1,
          64,
          [](server_options& o) -> std::uint64_t& {
            return o.cluster.replication_factor;
          }),
      {"cluster-id", "peers of another cluster id are refused",
       [](server_options& o, const std::string& v) -> std::string {
         if (v.empty() || v.size() > 64)
           return "cluster-id must be 1..64 characters";
         o.cluster.cluster_id = v;
         return {};
       },
       [](const server_options& o) { return o.cluster.cluster_id; }},
      {"cluster-secret-file",
       "file of the secret the peers prove they share (cluster mode)",
       [](server_options& o, const std::string& v) -> std::string {
         o.cluster.secret_file = v;
         return {};
       },
       [](const server_options& o) { return o.cluster.secret_file; }},
      {"peer-tls-cert-file",
       "PEM certificate chain of this node on the peer links (mutual TLS "
       "between peers; reloaded on SIGHUP)",
       [](server_options& o, const std::string& v) -> std::string {
         o.cluster.peer_tls_cert_file = v;
         return {};
       },
       [](const server_options& o) { return o.cluster.peer_tls_cert_file; }},
      {"peer-tls-key-file", "PEM private key of peer-tls-cert-file",
       [](server_options& o, const std::string& v) -> std::string {
         o.cluster.peer_tls_key_file = v;
         return {};
       },
       [](const server_options& o) { return o.cluster.peer_tls_key_file; }},
      {"peer-tls-ca-file",
       "PEM CA bundle every peer's certificate must chain to",
       [](server_options& o, const std::string& v) -> std::string {
         o.cluster.peer_tls_ca_file = v;
         return {};
       },
       [](const server_options& o) { return o.cluster.peer_tls_ca_file; }},
      {"advertise-http",
       "host:port where clients reach this node's HTTP door, as refusals "
       "of its slots name it (cluster mode; default: the listen address, "
       "or this node's peers host when it listens on 0.0.0.0)",
       [](server_options& o, const std::string& v) {
         o.cluster.advertise_http = v;
         return check_advertised("advertise-http", v);
       },
       [](const server_options& o) { return o.cluster.advertise_http; }},
      {"advertise-msgpack",
       "host:port where clients reach this node's msgpack door (cluster "
       "mode; default as advertise-http)",
       [](server_options& o, const std::string& v) {
         o.cluster.advertise_msgpack = v;
         return check_advertised("advertise-msgpack", v);
       },
       [](const server_options& o) { return o.cluster.advertise_msgpack; }},
      {"http-address", "listen address of the HTTP door",
       [](server_options& o, const std::string& v) -> std::string {
         if (v.empty())
           return "http-address must not be empty";
         o.http.address = v;
         return {};
       },
       [](const server_options& o) { return o.http.address; }},
      num("http-port", "port of the HTTP door (0: a free one)", 0, 65535,
          [](server_options& o) -> std::uint64_t& { return o.http.port; }),
      num("io-threads", "io threads of the front doors", 1, 64,
          [](server_options& o) -> std::uint64_t& {
            return o.http.io_threads;
          }),
      num("http-max-connections", "open connections at most (503 beyond)", 1,
          1'000'000,
          [](server_options& o) -> std::uint64_t& {
            return o.http.max_connections;
          }),
      num("http-max-body-bytes", "request body bytes at most (413 beyond)", 1,
          std::uint64_t{1} << 32,
          [](server_options& o) -> std::uint64_t& {
            return o.http.max_body_bytes;
          }),
      num("http-max-header-bytes",
          "request line and header bytes at most (431 beyond)", 1024,
          80u << 10, // http_parser's own bound (HTTP_MAX_HEADER_SIZE)
          [](server_options& o) -> std::uint64_t& {
            return o.http.max_header_bytes;
          }),
      num("http-max-pipeline", "requests answered at once per connection", 1,
          1024,
          [](server_options& o) -> std::uint64_t& {
            return o.http.max_pipeline;
          }),
      num("http-idle-timeout-ms", "an idle connection closes after this", 100,
          86'400'000,
          [](server_options& o) -> std::uint64_t& {
            return o.http.idle_timeout_ms;
          }),
      num("http-request-timeout-ms",
          "a request must arrive whole this soon (408)", 100, 3'600'000,
          [](server_options& o) -> std::uint64_t& {
            return o.http.request_timeout_ms;
          }),
      {"msgpack-address", "listen address of the msgpack door",
       [](server_options& o, const std::string& v) -> std::string {
         if (v.empty())
           return "msgpack-address must not be empty";
         o.msgpack.address = v;
         return {};
       },
       [](const server_options& o) { return o.msgpack.address; }},
      num("msgpack-port", "port of the msgpack door (0: a free one)", 0, 65535,
          [](server_options& o) -> std::uint64_t& { return o.msgpack.port; }),
      num("msgpack-max-connections",
          "open msgpack connections at most (unavailable beyond)", 1, 1'000'000,
          [](server_options& o) -> std::uint64_t& {
            return o.msgpack.max_connections;
          }),
      num("msgpack-max-frame-bytes",
          "msgpack frame bytes at most (too_large and close beyond)", 1024,
          std::uint64_t{1} << 31,
          [](server_options& o) -> std::uint64_t& {
            return o.msgpack.max_frame_bytes;
          }),
      num("msgpack-max-in-flight",
          "unanswered msgpack requests per connection (then not read)", 1,
          65'536,
          [](server_options& o) -> std::uint64_t& {
            return o.msgpack.max_in_flight;
          }),
      num("msgpack-idle-timeout-ms",
          "a msgpack connection with nothing in flight closes after this", 100,
          86'400'000,
          [](server_options& o) -> std::uint64_t& {
            return o.msgpack.idle_timeout_ms;
          }),
      num("msgpack-frame-timeout-ms",
          "a msgpack frame must arrive whole this soon (then close)", 100,
          3'600'000,
          [](server_options& o) -> std::uint64_t& {
            return o.msgpack.frame_timeout_ms;
          }),
      flag("access-log", "one log line per answered request",
           [](server_options& o) -> bool& { return o.http.access_log; }),
      num("shutdown-grace-ms", "on SIGTERM, in-flight requests get this long",
          0, 3'600'000,
          [](server_options& o) -> std::uint64_t& {
            return o.shutdown_grace_ms;
          }),
      num("pop-max-batch", "largest pop batch", 1, 1'000'000,
          [](server_options& o) -> std::uint64_t& { return o.pop.max_batch; }),
      num("pop-max-partitions", "largest wildcard partitions", 1, 10'000,
          [](server_options& o) -> std::uint64_t& {
            return o.pop.max_partitions;
          }),
      num("pop-max-timeout-ms", "longest long-poll timeout", 0, 3'600'000,
          [](server_options& o) -> std::uint64_t& {
            return o.pop.max_timeout_ms;
          }),
      num("pop-max-bytes", "payload bytes per pop response", 1,
          std::uint64_t{1} << 32,
          [](server_options& o) -> std::uint64_t& { return o.pop.max_bytes; }),
      num("pop-max-parked", "parked long-poll pops per server (503 beyond)", 0,
          10'000'000,
          [](server_options& o) -> std::uint64_t& { return o.pop.max_parked; }),
      num("push-max-items", "items per push or transaction", 1, 10'000'000,
          [](server_options& o) -> std::uint64_t& { return o.push.max_items; }),
      num("push-max-bytes", "payload bytes per push or transaction", 1,
          std::uint64_t{1} << 34,
          [](server_options& o) -> std::uint64_t& { return o.push.max_bytes; }),
      num("lease-max-extend-seconds", "most seconds one lease extend adds", 1,
          7 * 86'400,
          [](server_options& o) -> std::uint64_t& {
            return o.lease.max_extend_s;
          }),
      num("priority-max-starvation-seconds",
          "namespace pops serve a queue waiting longer first", 0, 86'400,
          [](server_options& o) -> std::uint64_t& {
            return o.pop.max_starvation_s;
          }),
      {"default-subscription-mode",
       "where a new consumer group starts: all | new",
       [](server_options& o, const std::string& v) -> std::string {
         if (v == "all")
           o.default_subscription_new = false;
         else if (v == "new" || v == "new-only")
           o.default_subscription_new = true;
         else
           return "default-subscription-mode must be all or new, got '" + v
                  + "'";
         return {};
       },
       [](const server_options& o) {
         return std::string{o.default_subscription_new ? "new" : "all"};
       }},
      num("partition-idle-seconds",
          "a partition actor untouched this long stops if it holds nothing "
          "but its stored rows (0: never)",
          0, 86'400,
          [](server_options& o)
              -> std::uint64_t& { return o.partitions.idle_s; }),
      num("partition-max-live",
          "past this many live partition actors the least recently used "
          "idle ones stop first (0: no cap)",
          0, 100'000'000,
          [](server_options& o)
              -> std::uint64_t& { return o.partitions.max_live; }),
      num("retention-interval-seconds",
          "retention runs on each partition at least this often", 1, 86'400,
          [](server_options& o) -> std::uint64_t& {
            return o.retention.interval_s;
          }),
      {"segment-compression",
       "zstd: compress a segment's body when that makes it smaller | off",
       [](server_options& o, const std::string& v) -> std::string {
         if (v != "zstd" && v != "off")
           return "segment-compression must be zstd or off, got '" + v + "'";
         o.segment_compression = v == "zstd";
         return {};
       },
       [](const server_options& o) {
         return std::string{o.segment_compression ? "zstd" : "off"};
       }},
  };
  return t;
}

const std::vector<option>& table() {
  static const std::vector<option> t = [] {
    auto all = base_table();
    for (auto& o : detail::security_options())
      all.push_back(std::move(o));
    return all;
  }();
  return t;
}

/// SPOOL_ and the name in capitals, `-` as `_`.
std::string env_name(std::string_view name) {
  std::string s = "SPOOL_";
  for (char c : name)
    s += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return s;
}

/// Applies one named option; returns an error message or "".
bool known(std::string_view name) {
  for (auto& o : table())
    if (name == o.name)
      return true;
  return false;
}

std::string apply(server_options& opts, std::string_view name,
                  const std::string& value) {
  for (auto& o : table())
    if (name == o.name)
      return o.apply(opts, value);
  return "unknown option --" + std::string{name};
}

/// Applies a table of the file (`prefix` is its name, with `-`).
std::string apply_toml(server_options& opts, const toml::table& t,
                       const std::string& prefix) {
  for (auto& [k, node] : t) {
    auto name = prefix + std::string{k.str()};
    std::string value;
    if (auto* sub = node.as_table()) {
      if (auto err = apply_toml(opts, *sub, name + "-"); !err.empty())
        return err;
      continue;
    }
    if (auto s = node.value<std::string>(); s && node.is_string())
      value = *s;
    else if (auto i = node.value<std::int64_t>(); i && node.is_integer())
      value = std::to_string(*i);
    else if (auto b = node.value<bool>(); b && node.is_boolean())
      value = *b ? "true" : "false";
    else
      return name + " must be a string, an integer or a boolean";
    if (name == "config")
      return "config cannot name another file";
    if (auto err = apply(opts, name, value); !err.empty())
      return err.starts_with("unknown option --")
                 ? "unknown option '" + name + "'"
                 : err;
  }
  return {};
}

std::string read_file(server_options& opts, const std::string& path) {
  try {
    auto t = toml::parse_file(path);
    if (auto err = apply_toml(opts, t, ""); !err.empty())
      return path + ": " + err;
  } catch (const toml::parse_error& e) {
    return path + ": " + std::string{e.description()} + " (line "
           + std::to_string(e.source().begin.line) + ")";
  }
  opts.config_file = path;
  return {};
}

} // namespace

parse_result parse(const std::vector<std::string>& args,
                   const std::function<const char*(const char*)>& getenv) {
  parse_result result;
  server_options opts;
  // The file first: --config (or --config=) wins over SPOOL_CONFIG.
  std::string file;
  if (const char* v = getenv("SPOOL_CONFIG"); v != nullptr && *v != '\0')
    file = v;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size())
      file = args[i + 1];
    else if (args[i].starts_with("--config="))
      file = args[i].substr(9);
    else if (args[i] == "--help" || args[i] == "-h") {
      result.help = true;
      return result;
    } else if (args[i] == "--version") {
      result.version = true;
      return result;
    }
  }
  if (!file.empty())
    if (auto err = read_file(opts, file); !err.empty()) {
      result.error = "config " + err;
      return result;
    }
  // Queen's variables, so that a Queen deployment switches over; Spool's
  // own win.
  for (auto [var, name] : detail::queen_variables()) {
    if (const char* v = getenv(var); v != nullptr && *v != '\0') {
      if (auto err = apply(opts, name, v); !err.empty()) {
        result.error = std::string{var} + ": " + err;
        return result;
      }
    }
  }
  for (auto& o : table()) {
    auto var = env_name(o.name);
    if (const char* v = getenv(var.c_str()); v != nullptr && *v != '\0') {
      if (auto err = o.apply(opts, v); !err.empty()) {
        result.error = var + ": " + err;
        return result;
      }
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg.substr(0, 2) != "--") {
      result.error = "unexpected argument '" + args[i] + "'";
      return result;
    }
    arg.remove_prefix(2);
    std::string value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      value = std::string{arg.substr(eq + 1)};
      arg = arg.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      result.error = arg == "config" || known(arg)
                         ? "option --" + std::string{arg} + " needs a value"
                         : "unknown option --" + std::string{arg};
      return result;
    }
    if (arg == "config")
      continue; // read above
    if (auto err = apply(opts, arg, value); !err.empty()) {
      result.error = err;
      return result;
    }
  }
  if (auto err = check_cluster(opts.cluster,
                               opts.durability == durability_mode::relaxed);
      !err.empty()) {
    result.error = err;
    return result;
  }
  if (auto err = detail::check_security(opts); !err.empty()) {
    result.error = err;
    return result;
  }
  result.options = std::move(opts);
  return result;
}

std::string usage() {
  std::string s = "usage: spoold [--config FILE] [options] | --help | "
                  "--version\n"
                  "Each option is also an environment variable (SPOOL_ and "
                  "its name in capitals)\n"
                  "and a key of the TOML file; flags win over variables, "
                  "variables over the file.\n\n";
  s += "  --config FILE\n      a TOML file of these options (SPOOL_CONFIG)\n";
  server_options defaults;
  for (auto& o : table()) {
    s += "  --";
    s += o.name;
    s += " VALUE\n      ";
    s += o.help;
    s += " (";
    s += env_name(o.name);
    s += ", default ";
    s += o.show(defaults);
    s += ")\n";
  }
  return s;
}

std::vector<std::pair<std::string, std::string>>
describe(const server_options& opts) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& o : table())
    out.emplace_back(o.name, o.show(opts));
  return out;
}

} // namespace spool::config
