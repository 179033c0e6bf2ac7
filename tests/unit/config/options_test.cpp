// Server options: defaults, environment, command line, precise errors.

#include <catch2/catch.hpp>

#include <map>

#include <unistd.h>

#include "config/options.hpp"

using namespace spool::config;

namespace {

auto env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

} // namespace

TEST_CASE("options default to strict durability in ./data", "[config]") {
  auto r = parse({}, env_of({}));
  REQUIRE(r.options);
  CHECK(r.options->data_dir == "./data");
  CHECK(r.options->durability == durability_mode::strict);
}

TEST_CASE("the command line wins over the environment", "[config]") {
  auto r = parse(
      {"--data-dir", "/tmp/a", "--durability=relaxed"},
      env_of({{"SPOOL_DATA_DIR", "/tmp/b"}, {"SPOOL_LOG_LEVEL", "debug"}}));
  REQUIRE(r.options);
  CHECK(r.options->data_dir == "/tmp/a");
  CHECK(r.options->durability == durability_mode::relaxed);
  CHECK(r.options->log_level == "debug");
}

TEST_CASE("bad options are refused with a precise message",
          "[config][bad-input]") {
  CHECK(parse({"--durability", "sometimes"}, env_of({})).error
        == "durability must be strict or relaxed, got 'sometimes'");
  CHECK(parse({"--nope", "1"}, env_of({})).error == "unknown option --nope");
  CHECK(parse({"--nope"}, env_of({})).error == "unknown option --nope");
  CHECK(parse({"--version"}, env_of({})).version);
  CHECK(parse({"--data-dir"}, env_of({})).error
        == "option --data-dir needs a value");
  CHECK(parse({"stray"}, env_of({})).error == "unexpected argument 'stray'");
  CHECK(
      parse({}, env_of({{"SPOOL_INITIAL_MAP_MIB", "0"}})).error
      == "SPOOL_INITIAL_MAP_MIB: initial-map-mib must be 1..1048576, got '0'");
  CHECK(!parse({"--log-level", "loud"}, env_of({})).options);
  CHECK(parse({"--help"}, env_of({})).help);
}

TEST_CASE("pop caps come from the environment or the command line and are "
          "range-checked",
          "[config]") {
  auto d = parse({}, env_of({}));
  REQUIRE(d.options);
  CHECK(d.options->pop.max_batch == 10'000);
  CHECK(d.options->pop.max_parked == 10'000);
  auto r = parse({"--pop-max-batch", "500", "--pop-max-parked=3"},
                 env_of({{"SPOOL_POP_MAX_TIMEOUT_MS", "1000"},
                         {"SPOOL_POP_MAX_BATCH", "7"}}));
  REQUIRE(r.options);
  CHECK(r.options->pop.max_batch == 500); // the command line wins
  CHECK(r.options->pop.max_parked == 3);
  CHECK(r.options->pop.max_timeout_ms == 1000);
  CHECK(parse({"--pop-max-batch", "0"}, env_of({})).error
        == "pop-max-batch must be 1..1000000, got '0'");
  CHECK(parse({"--pop-max-partitions", "x"}, env_of({})).error
        == "pop-max-partitions must be 1..10000, got 'x'");
}

TEST_CASE("defaultSubscriptionMode is all unless configured new", "[config]") {
  CHECK_FALSE(parse({}, env_of({})).options->default_subscription_new);
  CHECK(parse({"--default-subscription-mode", "new"}, env_of({}))
            .options->default_subscription_new);
  CHECK(parse({}, env_of({{"SPOOL_DEFAULT_SUBSCRIPTION_MODE", "new-only"}}))
            .options->default_subscription_new);
  auto bad = parse({"--default-subscription-mode=latest"}, env_of({}));
  CHECK_FALSE(bad.options);
  CHECK(bad.error
        == "default-subscription-mode must be all or new, got 'latest'");
}

TEST_CASE("retention.intervalSeconds comes from the environment or the "
          "command line, default 10",
          "[config][retention]") {
  auto d = parse({}, env_of({}));
  REQUIRE(d.options);
  CHECK(d.options->retention.interval_s == 10);
  auto e = parse({}, env_of({{"SPOOL_RETENTION_INTERVAL_SECONDS", "3"}}));
  REQUIRE(e.options);
  CHECK(e.options->retention.interval_s == 3);
  auto c = parse({"--retention-interval-seconds=5"},
                 env_of({{"SPOOL_RETENTION_INTERVAL_SECONDS", "3"}}));
  REQUIRE(c.options);
  CHECK(c.options->retention.interval_s == 5); // the command line wins
  CHECK(parse({"--retention-interval-seconds", "0"}, env_of({})).error
        == "retention-interval-seconds must be 1..86400, got '0'");
}

TEST_CASE("push and lease limits have defaults, flags and bounds",
          "[config][limits]") {
  auto d = parse({}, env_of({}));
  REQUIRE(d.options);
  CHECK(d.options->push.max_items == 100'000);
  CHECK(d.options->push.max_bytes == std::uint64_t{256} << 20);
  CHECK(d.options->lease.max_extend_s == 3600);
  auto r = parse({"--push-max-items", "5", "--lease-max-extend-seconds", "60"},
                 env_of({{"SPOOL_PUSH_MAX_BYTES", "1024"}}));
  REQUIRE(r.options);
  CHECK(r.options->push.max_items == 5);
  CHECK(r.options->push.max_bytes == 1024);
  CHECK(r.options->lease.max_extend_s == 60);
  CHECK_FALSE(parse({"--push-max-items", "0"}, env_of({})).options);
  CHECK_FALSE(
      parse({"--lease-max-extend-seconds", "604801"}, env_of({})).options);
}

namespace {

/// A TOML file in the temp folder, removed at the end.
struct toml_file {
  std::string path;
  explicit toml_file(const std::string& text) {
    char tmpl[] = "/tmp/spool-config-XXXXXX";
    int fd = ::mkstemp(tmpl);
    path = tmpl;
    auto n = ::write(fd, text.data(), text.size());
    (void)n;
    ::close(fd);
  }
  ~toml_file() {
    ::unlink(path.c_str());
  }
};

} // namespace

TEST_CASE("a TOML file gives the same keys, tables prefix them, the "
          "environment and flags win over it",
          "[config]") {
  toml_file f{"http-port = 7000\n"
              "durability = \"relaxed\"\n"
              "access-log = true\n"
              "[pop]\n"
              "max-batch = 500\n"
              "[http]\n"
              "max-pipeline = 4\n"};
  auto r = parse({"--config", f.path}, env_of({}));
  REQUIRE(r.options);
  CHECK(r.options->http.port == 7000);
  CHECK(r.options->durability == durability_mode::relaxed);
  CHECK(r.options->http.access_log);
  CHECK(r.options->pop.max_batch == 500);
  CHECK(r.options->http.max_pipeline == 4);
  CHECK(r.options->config_file == f.path);
  auto env = parse(
      {}, env_of({{"SPOOL_CONFIG", f.path}, {"SPOOL_HTTP_PORT", "7001"}}));
  REQUIRE(env.options);
  CHECK(env.options->http.port == 7001);
  CHECK(env.options->pop.max_batch == 500);
  auto flag = parse({"--config=" + f.path, "--http-port", "7002"},
                    env_of({{"SPOOL_HTTP_PORT", "7001"}}));
  REQUIRE(flag.options);
  CHECK(flag.options->http.port == 7002);
}

TEST_CASE("a bad TOML file is refused with the file, the key and the reason",
          "[config][bad-input]") {
  toml_file unknown{"nope = 1\n"};
  auto r = parse({"--config", unknown.path}, env_of({}));
  CHECK_FALSE(r.options);
  CHECK(r.error == "config " + unknown.path + ": unknown option 'nope'");
  toml_file range{"[http]\nport = 70000\n"};
  r = parse({"--config", range.path}, env_of({}));
  CHECK(r.error
        == "config " + range.path
               + ": http-port must be 0..65535, got '70000'");
  toml_file type{"http-port = 1.5\n"};
  r = parse({"--config", type.path}, env_of({}));
  CHECK(r.error
        == "config " + type.path
               + ": http-port must be a string, an integer or a "
                 "boolean");
  toml_file syntax{"http-port = \n"};
  r = parse({"--config", syntax.path}, env_of({}));
  CHECK_THAT(r.error, Catch::StartsWith("config " + syntax.path + ": "));
  CHECK_THAT(r.error, Catch::Contains("(line 1)"));
  r = parse({"--config", "/nonexistent/spool.toml"}, env_of({}));
  CHECK_FALSE(r.options);
  CHECK_THAT(r.error, Catch::StartsWith("config /nonexistent/spool.toml: "));
}

TEST_CASE("HTTP options have defaults and bounds", "[config]") {
  auto r = parse({}, env_of({}));
  REQUIRE(r.options);
  CHECK(r.options->http.port == 6632);
  CHECK(r.options->http.address == "0.0.0.0");
  CHECK(r.options->http.max_body_bytes == 64u << 20);
  CHECK_FALSE(r.options->http.access_log);
  auto bad = parse({"--access-log", "sometimes"}, env_of({}));
  CHECK(bad.error == "access-log must be true or false, got 'sometimes'");
  CHECK(parse({"--io-threads", "0"}, env_of({})).error
        == "io-threads must be 1..64, got '0'");
}

TEST_CASE("the encryption key comes from Queen's QUEEN_ENCRYPTION_KEY, "
          "SPOOL_ENCRYPTION_KEY or a file, never two at once",
          "[config][encryption]") {
  std::string hex(64, 'a');
  auto queen = parse({}, env_of({{"QUEEN_ENCRYPTION_KEY", hex}}));
  REQUIRE(queen.options);
  CHECK(queen.options->encryption.key == hex);
  CHECK(queen.options->encryption.enabled());
  auto own
      = parse({}, env_of({{"SPOOL_ENCRYPTION_KEY", hex},
                          {"QUEEN_ENCRYPTION_KEY", std::string(64, 'b')}}));
  REQUIRE(own.options);
  CHECK(own.options->encryption.key == hex);
  auto file = parse({"--encryption-key-file", "/etc/spool/keys"}, env_of({}));
  REQUIRE(file.options);
  CHECK(file.options->encryption.key_file == "/etc/spool/keys");
  CHECK(parse({"--encryption-key-file", "/etc/spool/keys"},
              env_of({{"QUEEN_ENCRYPTION_KEY", hex}}))
            .error
        == "give encryption-key or encryption-key-file, not both");
  CHECK(parse({"--segment-compression", "lz4"}, env_of({})).error
        == "segment-compression must be zstd or off, got 'lz4'");
  CHECK_FALSE(parse({}, env_of({})).options->encryption.enabled());
}
