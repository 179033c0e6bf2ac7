// Reading DLQ selections from a body or a query (api/requests.hpp).

#include "protocol/api/requests_detail.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

namespace {

template <class F>
expected<dlq_filter> dlq_filter_fields(typename F::object_t& obj) {
  dlq_filter f;
  SPOOL_TRY(F::fields(
      obj, "body", [&](std::string_view key, auto& v) -> expected<void> {
        if (F::is_null(v))
          return {};
        if (key == "ids") {
          auto arr = F::as_array(v, "ids");
          if (!arr)
            return arr.err();
          return F::elements(
              *arr, "ids", [&](std::size_t i, auto& e) -> expected<void> {
                auto id = F::as_uint(e, "ids[" + std::to_string(i) + "]");
                if (!id)
                  return id.err();
                f.ids.push_back(*id);
                return {};
              });
        }
        if (key == "from" || key == "to") {
          auto t = read_timestamp<F>(v, std::string{key});
          if (!t)
            return t.err();
          (key == "from" ? f.from : f.to) = *t;
          return {};
        }
        std::optional<std::string>* target = key == "queue"           ? &f.queue
                                             : key == "consumerGroup" ? &f.group
                                             : key == "partition" ? &f.partition
                                                                  : nullptr;
        if (!target)
          return {};
        auto s = F::as_string(v, std::string{key});
        if (!s)
          return s.err();
        if (!s->empty())
          *target = std::string{*s};
        return {};
      }));
  return f;
}

} // namespace

expected<dlq_filter> read_dlq_filter_body(std::string& body) {
  return read_json_body(body, dlq_filter_fields<json_format>);
}

expected<dlq_filter> read_dlq_filter_body(const mp::object& req) {
  return read_mp_request(req, dlq_filter_fields<mp::format>);
}

expected<dlq_filter> read_dlq_filter_query(const call& c) {
  dlq_filter f;
  f.queue = query_str(c, "queue");
  f.group = query_str(c, "consumerGroup");
  f.partition = query_str(c, "partition");
  for (auto key : {"from", "to"}) {
    auto s = query_str(c, key);
    if (!s)
      continue;
    auto t = timefmt::parse_rfc3339(*s);
    if (!t)
      return make_error(errc::invalid_argument, "Invalid timestamp: ", *s);
    (std::string_view{key} == "from" ? f.from : f.to) = *t;
  }
  return f;
}

} // namespace spool::api
