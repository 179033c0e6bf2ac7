#include "protocol/api/service.hpp"

#include <charconv>

#include "protocol/json/write.hpp"

namespace spool::api {

void reply_json(http::exchange& ex, int status, std::string body,
                http::header_list extra) {
  http::response r;
  r.status = status;
  r.headers = std::move(extra);
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = std::move(body);
  ex.respond(std::move(r));
}

void reply_error(http::exchange& ex, const api_error& e) {
  auto wire = wire_of(e.code);
  http::header_list extra;
  if (wire.retry_after)
    extra.emplace_back("Retry-After", "1");
  if (!e.leader)
    return reply_json(ex, wire.http_status, json::error_body(e.message),
                      std::move(extra));
  // api.md: 421 names the slot's leader, for a client that follows it.
  if (!e.leader->http.empty())
    extra.emplace_back("X-Spool-Leader", e.leader->http);
  reply_json(ex, wire.http_status, json::error_body(e.message, *e.leader),
             std::move(extra));
}

std::optional<std::string> query_str(const call& c, std::string_view key) {
  auto v = c.query.get(key);
  if (!v || v->empty())
    return std::nullopt;
  return std::string{*v};
}

expected<std::optional<std::int64_t>> query_int(const call& c,
                                                std::string_view key) {
  auto v = c.query.get(key);
  if (!v || v->empty())
    return std::optional<std::int64_t>{};
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc{} || end != v->data() + v->size())
    return make_error(errc::invalid_argument, key, " must be an integer");
  return std::optional<std::int64_t>{n};
}

expected<std::optional<bool>> query_bool(const call& c, std::string_view key) {
  auto v = c.query.get(key);
  if (!v || v->empty())
    return std::optional<bool>{};
  if (*v == "true" || *v == "1")
    return std::optional<bool>{true};
  if (*v == "false" || *v == "0")
    return std::optional<bool>{false};
  return make_error(errc::invalid_argument, key, " must be true or false");
}

const char* to_string(readiness st) {
  return st == readiness::ready      ? "ready"
         : st == readiness::draining ? "draining"
                                     : "starting";
}

} // namespace spool::api
