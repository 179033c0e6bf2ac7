// Reading the body of POST /api/v1/traces (api/requests.hpp).

#include "protocol/api/requests_detail.hpp"

namespace spool::api {

namespace {

/// The most elements of `traceNames` read (repeats included; the broker
/// allows 32 distinct).
constexpr std::size_t max_trace_name_elements = 256;

} // namespace

expected<node::trace_request> read_trace_body(std::string& body) {
  od::document doc;
  auto obj = json::open_object(body, doc);
  if (!obj)
    return obj.err();
  node::trace_request t;
  bool has_data = false;
  // A string field: null leaves `out` as it is.
  auto text = [](od::value& v, std::string_view key,
                 std::string& out) -> expected<void> {
    auto s = opt_string<json_format>(v, std::string{key});
    if (!s)
      return s.err();
    if (*s)
      out = std::move(**s);
    return {};
  };
  SPOOL_TRY(json::for_each_field(
      *obj, "body", [&](std::string_view key, od::value& v) -> expected<void> {
        if (key == "transactionId")
          return text(v, key, t.transaction_id);
        if (key == "partitionId")
          return text(v, key, t.partition_id);
        if (key == "eventType")
          return text(v, key, t.event_type);
        if (key == "consumerGroup")
          return text(v, key, t.consumer_group);
        if (key == "workerId")
          return text(v, key, t.worker_id);
        if (key == "data") {
          if (json::is_null(v))
            return {};
          auto raw = json::as_raw(v, key);
          if (!raw)
            return raw.err();
          t.data = std::string{*raw};
          has_data = true;
          return {};
        }
        if (key == "traceNames") {
          if (json::is_null(v))
            return {};
          if (auto s = v.get_string(); !s.error()) {
            t.names.emplace_back(s.value_unsafe());
            return {};
          }
          auto arr = json::as_array(v, "traceNames");
          if (!arr)
            return make_error(errc::invalid_argument,
                              "traceNames must be a string or an array of "
                              "strings");
          return json::for_each_element(
              *arr, "traceNames",
              [&](std::size_t i, od::value& e) -> expected<void> {
                if (i == max_trace_name_elements)
                  return make_error(errc::invalid_argument,
                                    "traceNames holds more than ",
                                    max_trace_name_elements, " elements");
                auto s = json::as_string(e, "traceNames[" + std::to_string(i)
                                                + "]");
                if (!s)
                  return s.err();
                t.names.emplace_back(*s);
                return {};
              });
        }
        return {};
      }));
  if (t.transaction_id.empty() || t.partition_id.empty())
    return make_error(errc::invalid_argument,
                      "transactionId and partitionId are required");
  if (!has_data)
    return make_error(errc::invalid_argument, "data is required");
  if (t.event_type.empty())
    t.event_type = "info";
  if (t.consumer_group.empty())
    t.consumer_group = std::string{queue_mode_group};
  return t;
}

} // namespace spool::api
