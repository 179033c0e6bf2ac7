// Reading DLQ selections from a body or a query (api/requests.hpp).

#include "protocol/api/requests_detail.hpp"
#include "protocol/time/rfc3339.hpp"

namespace spool::api {

expected<dlq_filter> read_dlq_filter_body(std::string& body) {
  od::document doc;
  auto obj = json::open_object(body, doc);
  if (!obj)
    return obj.err();
  dlq_filter f;
  SPOOL_TRY(json::for_each_field(
      *obj, "body", [&](std::string_view key, od::value& v) -> expected<void> {
        if (json::is_null(v))
          return {};
        if (key == "ids") {
          auto arr = json::as_array(v, "ids");
          if (!arr)
            return arr.err();
          return json::for_each_element(
              *arr, "ids", [&](std::size_t i, od::value& e) -> expected<void> {
                auto id = json::as_uint(e, "ids[" + std::to_string(i) + "]");
                if (!id)
                  return id.err();
                f.ids.push_back(*id);
                return {};
              });
        }
        if (key == "from" || key == "to") {
          auto t = read_timestamp(v, std::string{key});
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
        auto s = json::as_string(v, std::string{key});
        if (!s)
          return s.err();
        if (!s->empty())
          *target = std::string{*s};
        return {};
      }));
  return f;
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
