#include <catch2/catch.hpp>

#include "core/queue/options.hpp"

using spool::core::apply_options;
using spool::core::options_patch;
using spool::storage::queue_options;

TEST_CASE("configure changes only the options it names", "[options]") {
  queue_options base;
  base.retry_limit = 7;
  base.priority = 5;
  options_patch p;
  p.lease_time_s = 60;
  auto out = apply_options(base, p);
  REQUIRE(out);
  CHECK(out->lease_time_s == 60);
  CHECK(out->retry_limit == 7);
  CHECK(out->priority == 5);
  auto expected = base;
  expected.lease_time_s = 60;
  CHECK(*out == expected);
}

TEST_CASE("queues get the documented default options", "[options]") {
  queue_options d;
  CHECK(d.lease_time_s == 300);
  CHECK(d.retry_limit == 3);
  CHECK(d.retry_delay_ms == 0);
  CHECK(d.dlq_retention_s == 14 * 24 * 3600);
  CHECK(d.retention_enabled);
  CHECK_FALSE(d.encryption_enabled);
  auto out = apply_options(d, options_patch{});
  REQUIRE(out);
  CHECK(*out == d);
}

TEST_CASE("an option out of range is refused naming the option and nothing "
          "is applied",
          "[options][bad-input]") {
  queue_options base;
  auto refuse = [&](options_patch p, const std::string& needle) {
    auto out = apply_options(base, p);
    REQUIRE_FALSE(out);
    CHECK(out.err().code == spool::errc::invalid_argument);
    CHECK_THAT(out.err().message, Catch::Contains(needle));
  };
  options_patch p;
  p.lease_time_s = 0;
  refuse(p, "option leaseTime must be between 1 and 604800 seconds, got 0");
  p = {};
  p.retry_limit = -1;
  refuse(p, "option retryLimit");
  p = {};
  p.retry_delay_ms = -5;
  refuse(p, "option retryDelay");
  p = {};
  p.retry_backoff_ms = std::vector<std::int64_t>{10, -1};
  refuse(p, "option retryBackoffMs must be between 0 and");
  p = {};
  p.retry_backoff_ms = std::vector<std::int64_t>(65, 1);
  refuse(p, "option retryBackoffMs must have at most 64 entries, got 65");
  p = {};
  p.max_deliveries = -1;
  refuse(p, "option maxDeliveries");
  p = {};
  p.max_size = -1;
  refuse(p, "option maxSize");
  p = {};
  p.delayed_processing_s = -1;
  refuse(p, "option delayedProcessing");
  p = {};
  p.window_buffer_s = 400LL * 24 * 3600;
  refuse(p, "option windowBuffer must be between 0 and 31536000 seconds");
  p = {};
  p.retention_s = -1;
  refuse(p, "option retentionSeconds");
  p = {};
  p.completed_retention_s = INT64_MAX;
  refuse(p, "option completedRetentionSeconds");
  p = {};
  p.max_wait_time_s = -1;
  refuse(p, "option maxWaitTimeSeconds");
  p = {};
  p.dlq_retention_s = -1;
  refuse(p, "option dlqRetentionSeconds");
  p = {};
  p.dedup_window_s = -1;
  refuse(p, "option dedupWindowSeconds");
  p = {};
  p.group_idle_s = -1;
  refuse(p, "option groupIdleSeconds");
  p = {};
  p.priority = 2'000'000;
  refuse(p, "option priority");
  p = {};
  p.ttl_s = -1;
  refuse(p, "option ttl");
  // A bad option among good ones: the good ones are not applied either.
  p = {};
  p.lease_time_s = 10;
  p.retry_limit = -3;
  refuse(p, "option retryLimit");
}

TEST_CASE("configure refuses delayedProcessing at or above "
          "maxWaitTimeSeconds",
          "[options][bad-input]") {
  queue_options base;
  options_patch p;
  p.delayed_processing_s = 60;
  p.max_wait_time_s = 60;
  auto out = apply_options(base, p);
  REQUIRE_FALSE(out);
  CHECK_THAT(out.err().message,
             Catch::Contains("option delayedProcessing must be below "
                             "maxWaitTimeSeconds (60), got 60"));
  // Judged against the stored value when only one of them is named.
  base.max_wait_time_s = 30;
  options_patch q;
  q.delayed_processing_s = 45;
  CHECK_FALSE(apply_options(base, q));
  q.delayed_processing_s = 29;
  CHECK(apply_options(base, q));
  // maxWaitTimeSeconds 0 means no limit.
  options_patch r;
  r.max_wait_time_s = 0;
  r.delayed_processing_s = 3600;
  CHECK(apply_options(base, r));
}

TEST_CASE("windowBufferMax below windowBuffer is refused",
          "[options][bad-input]") {
  options_patch p;
  p.window_buffer_s = 10;
  p.window_buffer_max_s = 5;
  auto out = apply_options(queue_options{}, p);
  REQUIRE_FALSE(out);
  CHECK_THAT(out.err().message, Catch::Contains("option windowBufferMax"));
  p.window_buffer_max_s = 10;
  auto ok = apply_options(queue_options{}, p);
  REQUIRE(ok);
  CHECK(ok->window_buffer_max_s == 10);
}

TEST_CASE("encryptionEnabled true is refused when the server has no key",
          "[options][bad-input]") {
  options_patch p;
  p.encryption_enabled = true;
  auto out = apply_options(queue_options{}, p);
  REQUIRE_FALSE(out);
  CHECK_THAT(out.err().message, Catch::Contains("option encryptionEnabled"));
  CHECK_THAT(out.err().message, Catch::Contains("--encryption-key-file"));
  auto keyed = apply_options(queue_options{}, p, true);
  REQUIRE(keyed);
  CHECK(keyed->encryption_enabled);
  p.encryption_enabled = false;
  CHECK(apply_options(queue_options{}, p));
}

TEST_CASE("boolean and list options are set as named", "[options]") {
  options_patch p;
  p.retention_enabled = false;
  p.dead_letter_queue = false;
  p.dlq_after_max_retries = true;
  p.retry_backoff_ms = std::vector<std::int64_t>{100, 200, 400};
  auto out = apply_options(queue_options{}, p);
  REQUIRE(out);
  CHECK_FALSE(out->retention_enabled);
  CHECK(out->dead_letter_queue == false);
  CHECK(out->dlq_after_max_retries == true);
  CHECK(out->retry_backoff_ms == std::vector<std::int64_t>{100, 200, 400});
}
