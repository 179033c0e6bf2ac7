// Dead letters: the listing (Queen's shape, exact total, stable `after`),
// requeue and deletion by id or by filter (Spool's additions).

#include <charconv>
#include <tuple>

#include "protocol/api/encode.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/api/router.hpp"
#include "protocol/api/shapes.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

namespace {

void list(service&, call& c) {
  auto f = read_dlq_filter_query(c);
  if (!f)
    return reply_error(*c.ex, f.err());
  dlq_query q;
  q.filter = std::move(*f);
  auto page = read_page_query(c, q.limit, 10'000);
  if (!page)
    return reply_error(*c.ex, page.err());
  std::tie(q.limit, q.offset) = *page;
  auto after = query_int(c, "after");
  if (!after)
    return reply_error(*c.ex, after.err());
  if (*after) {
    if (**after < 0)
      return reply_error(
          *c.ex, make_error(errc::invalid_argument, "after must be a dlqId"));
    q.after = static_cast<std::uint64_t>(**after);
  }
  auto echo = q;
  c.gw.dlq_list(std::move(q),
                answer<node::dlq_page>(c.ex, [echo](const node::dlq_page& p) {
                  json::writer w;
                  w.begin_object();
                  write_dlq_page_fields(w, p, echo);
                  w.end_object();
                  return std::pair{200, w.take()};
                }));
}

std::pair<int, std::string> count_body(const char* what,
                                       const node::dlq_count& n) {
  json::writer w;
  w.begin_object();
  write_dlq_count_fields(w, what, n);
  w.end_object();
  return {200, w.take()};
}

void requeue(service&, call& c) {
  auto f = read_dlq_filter_body(c.req.body);
  if (!f)
    return reply_error(*c.ex, f.err());
  c.gw.dlq_requeue(std::move(*f),
                   answer<node::dlq_count>(c.ex, [](const node::dlq_count& n) {
                     return count_body("requeued", n);
                   }));
}

void delete_one(service&, call& c) {
  auto& s = c.params.at(0);
  std::uint64_t id = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc{} || end != s.data() + s.size())
    return reply_error(*c.ex,
                       make_error(errc::invalid_argument,
                                  "dlqId must be a non-negative integer"));
  dlq_filter f;
  f.ids.push_back(id);
  // Optional: the entry must be of this queue (and group); a token with a
  // queues or groups claim names them.
  f.queue = query_str(c, "queue");
  f.group = query_str(c, "consumerGroup");
  c.gw.dlq_delete(std::move(f),
                  answer<node::dlq_count>(c.ex, [](const node::dlq_count& n) {
                    return count_body("deleted", n);
                  }));
}

void delete_filtered(service&, call& c) {
  auto f = read_dlq_filter_query(c);
  if (!f)
    return reply_error(*c.ex, f.err());
  if (!f->queue) // a delete of every queue's dead letters is not an accident
    return reply_error(*c.ex,
                       make_error(errc::invalid_argument, "queue is required"));
  c.gw.dlq_delete(std::move(*f),
                  answer<node::dlq_count>(c.ex, [](const node::dlq_count& n) {
                    return count_body("deleted", n);
                  }));
}

} // namespace

void add_dlq_routes(std::vector<route>& t) {
  t.push_back({"GET", "/api/v1/dlq", auth::access::read_only, &list,
               std::nullopt, true});
  t.push_back(
      {"POST", "/api/v1/dlq/requeue", auth::access::read_write, &requeue});
  t.push_back(
      {"DELETE", "/api/v1/dlq/:dlqId", auth::access::admin, &delete_one});
  t.push_back({"DELETE", "/api/v1/dlq", auth::access::admin, &delete_filtered});
}

} // namespace spool::api
