#include "config/options.hpp"

#include <charconv>
#include <string_view>

namespace spool::config {

namespace {

/// Parses `value` as an integer in [lo, hi] into `out`; an error message
/// naming the option, or "".
std::string number(std::string_view name, const std::string& value,
                   std::uint64_t lo, std::uint64_t hi, std::uint64_t& out) {
  std::uint64_t n = 0;
  auto [end, ec]
      = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc{} || end != value.data() + value.size() || n < lo
      || n > hi)
    return std::string{name} + " must be " + std::to_string(lo) + ".."
           + std::to_string(hi) + ", got '" + value + "'";
  out = n;
  return {};
}

/// Applies one named option; returns an error message or "".
std::string apply(server_options& opts, std::string_view name,
                  const std::string& value) {
  if (name == "data-dir") {
    if (value.empty())
      return "data-dir must not be empty";
    opts.data_dir = value;
  } else if (name == "durability") {
    if (value == "strict")
      opts.durability = durability_mode::strict;
    else if (value == "relaxed")
      opts.durability = durability_mode::relaxed;
    else
      return "durability must be strict or relaxed, got '" + value + "'";
  } else if (name == "log-level") {
    static constexpr std::string_view levels[]
        = {"trace", "debug", "info", "warn", "error", "critical", "off"};
    bool known = false;
    for (auto l : levels)
      known = known || value == l;
    if (!known)
      return "log-level must be one of trace, debug, info, warn, error, "
             "critical, off; got '"
             + value + "'";
    opts.log_level = value;
  } else if (name == "initial-map-mib") {
    return number(name, value, 1, 1u << 20, opts.initial_map_mib);
  } else if (name == "pop-max-batch") {
    return number(name, value, 1, 1'000'000, opts.pop.max_batch);
  } else if (name == "pop-max-partitions") {
    return number(name, value, 1, 10'000, opts.pop.max_partitions);
  } else if (name == "pop-max-timeout-ms") {
    return number(name, value, 0, 3'600'000, opts.pop.max_timeout_ms);
  } else if (name == "pop-max-bytes") {
    return number(name, value, 1, std::uint64_t{1} << 32, opts.pop.max_bytes);
  } else if (name == "pop-max-parked") {
    return number(name, value, 0, 10'000'000, opts.pop.max_parked);
  } else if (name == "push-max-items") {
    return number(name, value, 1, 10'000'000, opts.push.max_items);
  } else if (name == "push-max-bytes") {
    return number(name, value, 1, std::uint64_t{1} << 34, opts.push.max_bytes);
  } else if (name == "lease-max-extend-seconds") {
    return number(name, value, 1, 7 * 86'400, opts.lease.max_extend_s);
  } else if (name == "default-subscription-mode") {
    if (value == "all")
      opts.default_subscription_new = false;
    else if (value == "new" || value == "new-only")
      opts.default_subscription_new = true;
    else
      return "default-subscription-mode must be all or new, got '" + value
             + "'";
  } else if (name == "priority-max-starvation-seconds") {
    return number(name, value, 0, 86'400, opts.pop.max_starvation_s);
  } else if (name == "retention-interval-seconds") {
    return number(name, value, 1, 86'400, opts.retention.interval_s);
  } else {
    return "unknown option --" + std::string{name};
  }
  return {};
}

} // namespace

parse_result parse(const std::vector<std::string>& args,
                   const std::function<const char*(const char*)>& getenv) {
  parse_result result;
  server_options opts;
  static constexpr std::pair<const char*, std::string_view> env_names[] = {
      {"SPOOL_DATA_DIR", "data-dir"},
      {"SPOOL_DURABILITY", "durability"},
      {"SPOOL_LOG_LEVEL", "log-level"},
      {"SPOOL_INITIAL_MAP_MIB", "initial-map-mib"},
      {"SPOOL_POP_MAX_BATCH", "pop-max-batch"},
      {"SPOOL_POP_MAX_PARTITIONS", "pop-max-partitions"},
      {"SPOOL_POP_MAX_TIMEOUT_MS", "pop-max-timeout-ms"},
      {"SPOOL_POP_MAX_BYTES", "pop-max-bytes"},
      {"SPOOL_POP_MAX_PARKED", "pop-max-parked"},
      {"SPOOL_PUSH_MAX_ITEMS", "push-max-items"},
      {"SPOOL_PUSH_MAX_BYTES", "push-max-bytes"},
      {"SPOOL_LEASE_MAX_EXTEND_SECONDS", "lease-max-extend-seconds"},
      {"SPOOL_PRIORITY_MAX_STARVATION_SECONDS",
       "priority-max-starvation-seconds"},
      {"SPOOL_DEFAULT_SUBSCRIPTION_MODE", "default-subscription-mode"},
      {"SPOOL_RETENTION_INTERVAL_SECONDS", "retention-interval-seconds"},
  };
  for (auto& [var, name] : env_names) {
    if (const char* v = getenv(var); v != nullptr && *v != '\0') {
      if (auto err = apply(opts, name, v); !err.empty()) {
        result.error = std::string{var} + ": " + err;
        return result;
      }
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      result.help = true;
      return result;
    }
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
      result.error = "option --" + std::string{arg} + " needs a value";
      return result;
    }
    if (auto err = apply(opts, arg, value); !err.empty()) {
      result.error = err;
      return result;
    }
  }
  result.options = std::move(opts);
  return result;
}

std::string usage() {
  return "usage: spoold [options]\n"
         "  --data-dir DIR          LMDB folder (SPOOL_DATA_DIR, ./data)\n"
         "  --durability MODE       strict (fsync, default) | relaxed "
         "(SPOOL_DURABILITY)\n"
         "  --log-level LEVEL       trace..off (SPOOL_LOG_LEVEL, info)\n"
         "  --initial-map-mib N     first LMDB map size; grows on demand "
         "(SPOOL_INITIAL_MAP_MIB, 1024)\n"
         "  --pop-max-batch N       largest pop batch (SPOOL_POP_MAX_BATCH, "
         "10000)\n"
         "  --pop-max-partitions N  largest wildcard partitions "
         "(SPOOL_POP_MAX_PARTITIONS, 100)\n"
         "  --pop-max-timeout-ms N  longest long-poll timeout "
         "(SPOOL_POP_MAX_TIMEOUT_MS, 300000)\n"
         "  --pop-max-bytes N       payload bytes per pop response "
         "(SPOOL_POP_MAX_BYTES, 67108864)\n"
         "  --pop-max-parked N      parked long-poll pops per server "
         "(SPOOL_POP_MAX_PARKED, 10000)\n"
         "  --push-max-items N      items per push or transaction "
         "(SPOOL_PUSH_MAX_ITEMS, 100000)\n"
         "  --push-max-bytes N      payload bytes per push or transaction\n"
         "                          (SPOOL_PUSH_MAX_BYTES, 268435456)\n"
         "  --lease-max-extend-seconds N\n"
         "                          most seconds one lease extend adds\n"
         "                          (SPOOL_LEASE_MAX_EXTEND_SECONDS, 3600)\n"
         "  --priority-max-starvation-seconds N\n"
         "                          namespace pops serve a queue waiting "
         "longer first\n"
         "                          (SPOOL_PRIORITY_MAX_STARVATION_SECONDS, "
         "30)\n"
         "  --default-subscription-mode MODE\n"
         "                          where a new consumer group starts: all | "
         "new\n"
         "                          (SPOOL_DEFAULT_SUBSCRIPTION_MODE, all)\n"
         "  --retention-interval-seconds N\n"
         "                          retention runs on each partition at "
         "least this often\n"
         "                          (SPOOL_RETENTION_INTERVAL_SECONDS, 10)\n";
}

} // namespace spool::config
