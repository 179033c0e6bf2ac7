// Reading pop queries and the bodies of seek, subscription, configure and
// extend (api/requests.hpp).

#include "protocol/api/requests_detail.hpp"
#include "protocol/time/rfc3339.hpp"

namespace spool::api {

expected<micros> read_timestamp(od::value& v, const std::string& field) {
  auto s = json::as_string(v, field);
  if (!s)
    return s.err();
  auto t = timefmt::parse_rfc3339(*s);
  if (!t)
    return make_error(errc::invalid_argument, "Invalid timestamp: ", *s);
  return *t;
}

namespace {

/// A non-negative integer parameter.
expected<std::optional<std::uint64_t>> query_count(const call& c,
                                                   std::string_view key) {
  auto n = query_int(c, key);
  if (!n)
    return n.err();
  if (!*n)
    return std::optional<std::uint64_t>{};
  if (**n < 0)
    return make_error(errc::invalid_argument, key,
                      " must be a non-negative integer");
  return std::optional<std::uint64_t>{static_cast<std::uint64_t>(**n)};
}

} // namespace

expected<std::pair<std::size_t, std::size_t>>
read_page_query(const call& c, std::size_t dflt, std::size_t max) {
  auto limit = query_int(c, "limit");
  if (!limit)
    return limit.err();
  auto offset = query_int(c, "offset");
  if (!offset)
    return offset.err();
  std::pair<std::size_t, std::size_t> out{dflt, 0};
  if (*limit) {
    if (**limit < 1 || static_cast<std::uint64_t>(**limit) > max)
      return make_error(errc::invalid_argument, "limit must be 1..", max);
    out.first = static_cast<std::size_t>(**limit);
  }
  if (*offset) {
    if (**offset < 0)
      return make_error(errc::invalid_argument, "offset must be non-negative");
    out.second = static_cast<std::size_t>(**offset);
  }
  return out;
}

expected<node::pop_request> read_pop_query(const call& c, bool wildcard) {
  node::pop_request req;
  auto batch = query_count(c, "batch");
  if (!batch)
    return batch.err();
  if (*batch)
    req.batch = **batch;
  if (wildcard) { // the partition route claims one (Queen: silently 1)
    auto parts = query_count(c, "partitions");
    if (!parts)
      return parts.err();
    if (*parts)
      req.partitions = **parts;
  }
  auto wait = query_bool(c, "wait");
  if (!wait)
    return wait.err();
  req.wait = wait->value_or(false);
  auto timeout = query_count(c, "timeout");
  if (!timeout)
    return timeout.err();
  if (*timeout) {
    if (**timeout > std::uint64_t{1} << 40)
      return make_error(errc::invalid_argument, "timeout is out of range");
    req.timeout = milliseconds{static_cast<std::int64_t>(**timeout)};
  }
  auto auto_ack = query_bool(c, "autoAck");
  if (!auto_ack)
    return auto_ack.err();
  req.auto_ack = auto_ack->value_or(false);
  auto max_bytes = query_count(c, "maxBytes");
  if (!max_bytes)
    return max_bytes.err();
  if (*max_bytes)
    req.max_bytes = **max_bytes;
  req.group = query_str(c, "consumerGroup"); // empty or absent: queue mode
  req.subscription_mode = query_str(c, "subscriptionMode").value_or("");
  req.subscription_from = query_str(c, "subscriptionFrom").value_or("");
  return req;
}

expected<seek_target> read_seek_body(std::string& body, bool empty_is_to_end) {
  seek_target t;
  if (body.empty() && empty_is_to_end) {
    t.to_end = true;
    return t;
  }
  od::document doc;
  auto obj = json::open_object(body, doc);
  if (!obj)
    return obj.err();
  std::optional<api_error> bad_time;
  SPOOL_TRY(json::for_each_field(
      *obj, "body", [&](std::string_view key, od::value& v) -> expected<void> {
        if (key == "toEnd" || key == "toStart") {
          if (json::is_null(v))
            return {};
          auto b = json::as_bool(v, std::string{key});
          if (!b)
            return b.err();
          (key == "toEnd" ? t.to_end : t.to_start) = *b;
        } else if (key == "timestamp") {
          if (json::is_null(v))
            return {};
          auto ts = read_timestamp(v, "timestamp");
          if (!ts) // decided below: toEnd wins over a timestamp
            bad_time = ts.err();
          else
            t.timestamp = *ts;
        } else if (key == "offset" || key == "shiftBy") {
          auto n = json::as_int(v, std::string{key});
          if (!n)
            return n.err();
          (key == "offset" ? t.offset : t.shift_by) = *n;
        }
        return {};
      }));
  if (t.to_end)
    return t;
  if (bad_time)
    return *bad_time;
  if (!t.timestamp && !t.to_start && !t.offset && !t.shift_by)
    return make_error(errc::invalid_argument,
                      "Must specify toEnd=true or a timestamp");
  return t;
}

expected<micros> read_subscription_body(std::string& body) {
  od::document doc;
  auto obj = json::open_object(body, doc);
  if (!obj)
    return obj.err();
  std::optional<micros> ts;
  SPOOL_TRY(json::for_each_field(
      *obj, "body", [&](std::string_view key, od::value& v) -> expected<void> {
        if (key != "subscriptionTimestamp" || json::is_null(v))
          return {};
        auto t = read_timestamp(v, "subscriptionTimestamp");
        if (!t)
          return t.err();
        ts = *t;
        return {};
      }));
  if (!ts)
    return make_error(errc::invalid_argument,
                      "Missing subscriptionTimestamp in request body");
  return *ts;
}

namespace {

using int_field = std::optional<std::int64_t> options_patch::*;
using bool_field = std::optional<bool> options_patch::*;

struct int_option {
  const char* name;
  int_field field;
};
struct bool_option {
  const char* name;
  bool_field field;
};

constexpr int_option int_options[] = {
    {"leaseTime", &options_patch::lease_time_s},
    {"retryLimit", &options_patch::retry_limit},
    {"retryDelay", &options_patch::retry_delay_ms},
    {"maxDeliveries", &options_patch::max_deliveries},
    {"maxSize", &options_patch::max_size},
    {"delayedProcessing", &options_patch::delayed_processing_s},
    {"windowBuffer", &options_patch::window_buffer_s},
    {"windowBufferMax", &options_patch::window_buffer_max_s},
    {"retentionSeconds", &options_patch::retention_s},
    {"completedRetentionSeconds", &options_patch::completed_retention_s},
    {"maxWaitTimeSeconds", &options_patch::max_wait_time_s},
    {"dlqRetentionSeconds", &options_patch::dlq_retention_s},
    {"dedupWindowSeconds", &options_patch::dedup_window_s},
    {"groupIdleSeconds", &options_patch::group_idle_s},
    {"priority", &options_patch::priority},
    {"ttl", &options_patch::ttl_s},
};

constexpr bool_option bool_options[] = {
    {"retentionEnabled", &options_patch::retention_enabled},
    {"deadLetterQueue", &options_patch::dead_letter_queue},
    {"dlqAfterMaxRetries", &options_patch::dlq_after_max_retries},
    {"encryptionEnabled", &options_patch::encryption_enabled},
};

expected<void> read_option(std::string_view key, od::value& v, options_patch& p,
                           std::vector<std::string>& unknown) {
  auto name = "options." + std::string{key};
  for (auto& o : int_options)
    if (key == o.name) {
      auto n = json::as_int(v, name);
      if (!n)
        return n.err();
      p.*o.field = *n;
      return {};
    }
  for (auto& o : bool_options)
    if (key == o.name) {
      auto b = json::as_bool(v, name);
      if (!b)
        return b.err();
      p.*o.field = *b;
      return {};
    }
  if (key == "retryBackoffMs") {
    auto arr = json::as_array(v, name);
    if (!arr)
      return arr.err();
    auto& list = p.retry_backoff_ms.emplace();
    return json::for_each_element(
        *arr, name, [&](std::size_t i, od::value& e) -> expected<void> {
          auto n = json::as_int(e, name + "[" + std::to_string(i) + "]");
          if (!n)
            return n.err();
          list.push_back(*n);
          return {};
        });
  }
  unknown.emplace_back(key);
  return {};
}

} // namespace

expected<configure_body> read_configure_body(std::string& body) {
  od::document doc;
  auto obj = json::open_object(body, doc);
  if (!obj)
    return obj.err();
  configure_body out;
  bool has_queue = false;
  SPOOL_TRY(json::for_each_field(
      *obj, "body", [&](std::string_view key, od::value& v) -> expected<void> {
        if (key == "queue") {
          auto s = json::as_string(v, "queue");
          if (!s)
            return make_error(errc::invalid_argument, "queue is required");
          out.req.queue = *s;
          has_queue = true;
        } else if (key == "namespace" || key == "task") {
          if (json::is_null(v))
            return {};
          auto s = json::as_string(v, std::string{key});
          if (!s)
            return s.err();
          (key == "namespace" ? out.req.name_space : out.req.task)
              = std::string{*s};
        } else if (key == "options") {
          if (json::is_null(v))
            return {};
          auto o = json::as_object(v, "options");
          if (!o)
            return o.err();
          return json::for_each_field(
              *o, "options",
              [&](std::string_view k, od::value& ov) -> expected<void> {
                return read_option(k, ov, out.req.options, out.unknown_options);
              });
        }
        return {};
      }));
  if (!has_queue)
    return make_error(errc::invalid_argument, "queue is required");
  return out;
}

expected<milliseconds> read_extend_body(std::string& body) {
  milliseconds by{60'000};
  if (body.empty())
    return by;
  od::document doc;
  auto obj = json::open_object(body, doc);
  if (!obj)
    return obj.err();
  SPOOL_TRY(json::for_each_field(
      *obj, "body", [&](std::string_view key, od::value& v) -> expected<void> {
        if (key != "seconds" || json::is_null(v))
          return {};
        auto n = json::as_int(v, "seconds");
        if (!n)
          return n.err();
        if (*n < 0 || *n > 1'000'000'000)
          return make_error(errc::invalid_argument, "seconds is out of range");
        by = milliseconds{*n * 1000};
        return {};
      }));
  return by;
}

} // namespace spool::api
