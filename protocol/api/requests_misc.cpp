// Reading pop queries and the bodies of seek, subscription, configure and
// extend (api/requests.hpp).

#include "protocol/api/requests_detail.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

template <class F>
expected<micros> read_timestamp(typename F::value& v,
                                const std::string& field) {
  auto s = F::as_string(v, field);
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

namespace {

template <class F>
expected<seek_target> seek_fields(typename F::object_t& obj) {
  seek_target t;
  std::optional<api_error> bad_time;
  SPOOL_TRY(F::fields(obj, "body",
                      [&](std::string_view key, auto& v) -> expected<void> {
                        if (key == "toEnd" || key == "toStart") {
                          if (F::is_null(v))
                            return {};
                          auto b = F::as_bool(v, std::string{key});
                          if (!b)
                            return b.err();
                          (key == "toEnd" ? t.to_end : t.to_start) = *b;
                        } else if (key == "timestamp") {
                          if (F::is_null(v))
                            return {};
                          auto ts = read_timestamp<F>(v, "timestamp");
                          if (!ts) // decided below: toEnd wins over a timestamp
                            bad_time = ts.err();
                          else
                            t.timestamp = *ts;
                        } else if (key == "offset" || key == "shiftBy") {
                          auto n = F::as_int(v, std::string{key});
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

template <class F>
expected<micros> subscription_fields(typename F::object_t& obj) {
  std::optional<micros> ts;
  SPOOL_TRY(F::fields(obj, "body",
                      [&](std::string_view key, auto& v) -> expected<void> {
                        if (key != "subscriptionTimestamp" || F::is_null(v))
                          return {};
                        auto t = read_timestamp<F>(v, "subscriptionTimestamp");
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

template <class F>
expected<void> read_option(std::string_view key, typename F::value& v,
                           options_patch& p,
                           std::vector<std::string>& unknown) {
  auto name = "options." + std::string{key};
  for (auto& o : int_option_names)
    if (key == o.name) {
      auto n = F::as_int(v, name);
      if (!n)
        return n.err();
      p.*o.field = *n;
      return {};
    }
  for (auto& o : bool_option_names)
    if (key == o.name) {
      auto b = F::as_bool(v, name);
      if (!b)
        return b.err();
      p.*o.field = *b;
      return {};
    }
  if (key == "retryBackoffMs") {
    auto arr = F::as_array(v, name);
    if (!arr)
      return arr.err();
    auto& list = p.retry_backoff_ms.emplace();
    return F::elements(
        *arr, name, [&](std::size_t i, auto& e) -> expected<void> {
          auto n = F::as_int(e, name + "[" + std::to_string(i) + "]");
          if (!n)
            return n.err();
          list.push_back(*n);
          return {};
        });
  }
  unknown.emplace_back(key);
  return {};
}

template <class F>
expected<configure_body> configure_fields(typename F::object_t& obj) {
  configure_body out;
  bool has_queue = false;
  SPOOL_TRY(F::fields(
      obj, "body", [&](std::string_view key, auto& v) -> expected<void> {
        if (key == "queue") {
          auto s = F::as_string(v, "queue");
          if (!s)
            return make_error(errc::invalid_argument, "queue is required");
          out.req.queue = *s;
          has_queue = true;
        } else if (key == "namespace" || key == "task") {
          if (F::is_null(v))
            return {};
          auto s = F::as_string(v, std::string{key});
          if (!s)
            return s.err();
          (key == "namespace" ? out.req.name_space : out.req.task)
              = std::string{*s};
        } else if (key == "options") {
          if (F::is_null(v))
            return {};
          auto o = F::as_object(v, "options");
          if (!o)
            return o.err();
          return F::fields(*o, "options",
                           [&](std::string_view k, auto& ov) -> expected<void> {
                             return read_option<F>(k, ov, out.req.options,
                                                   out.unknown_options);
                           });
        }
        return {};
      }));
  if (!has_queue)
    return make_error(errc::invalid_argument, "queue is required");
  return out;
}

template <class F>
expected<milliseconds> extend_fields(typename F::object_t& obj) {
  milliseconds by{60'000};
  SPOOL_TRY(F::fields(
      obj, "body", [&](std::string_view key, auto& v) -> expected<void> {
        if (key != "seconds" || F::is_null(v))
          return {};
        auto n = F::as_int(v, "seconds");
        if (!n)
          return n.err();
        if (*n < 0 || *n > 1'000'000'000)
          return make_error(errc::invalid_argument, "seconds is out of range");
        by = milliseconds{*n * 1000};
        return {};
      }));
  return by;
}

} // namespace

template expected<micros> read_timestamp<json_format>(od::value&,
                                                      const std::string&);
template expected<micros> read_timestamp<mp::format>(const mp::object&,
                                                     const std::string&);

expected<seek_target> read_seek_body(std::string& body, bool empty_is_to_end) {
  if (body.empty() && empty_is_to_end) {
    seek_target t;
    t.to_end = true;
    return t;
  }
  return read_json_body(body, seek_fields<json_format>);
}

expected<seek_target> read_seek_body(const mp::object& req) {
  return read_mp_request(req, seek_fields<mp::format>);
}

expected<micros> read_subscription_body(std::string& body) {
  return read_json_body(body, subscription_fields<json_format>);
}

expected<micros> read_subscription_body(const mp::object& req) {
  return read_mp_request(req, subscription_fields<mp::format>);
}

expected<configure_body> read_configure_body(std::string& body) {
  return read_json_body(body, configure_fields<json_format>);
}

expected<configure_body> read_configure_body(const mp::object& req) {
  return read_mp_request(req, configure_fields<mp::format>);
}

expected<milliseconds> read_extend_body(std::string& body) {
  if (body.empty())
    return milliseconds{60'000};
  return read_json_body(body, extend_fields<json_format>);
}

expected<milliseconds> read_extend_body(const mp::object& req) {
  return read_mp_request(req, extend_fields<mp::format>);
}

} // namespace spool::api
