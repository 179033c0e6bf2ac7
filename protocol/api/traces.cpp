// Message traces (Queen's traces, docs/traces.md): notes consumers attach
// to a message, read back by message, by name across queues, and as the
// list of names in use.

#include <algorithm>

#include "protocol/api/encode.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/api/router.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

namespace {

/// The fields every trace shows (Queen's snake_case names).
void write_trace(json::writer& w, const node::trace& t) {
  w.kv("id", t.id);
  w.kv("transaction_id", t.transaction_id);
  w.kv("partition_id", t.partition_id);
  w.kv("event_type", t.event_type);
  w.key("data").raw(t.data);
  w.kv("consumer_group", t.consumer_group);
  if (t.worker_id.empty())
    w.kv_null("worker_id");
  else
    w.kv("worker_id", t.worker_id);
  w.kv("created_at", timefmt::format_micros(t.created_at));
  w.key("trace_names").begin_array();
  for (auto& n : t.names)
    w.str(n);
  w.end_array();
}

/// `{<key>: [items, each by write_item], total, pagination}` (200).
template <class Item, class Write>
std::pair<int, std::string>
page_body(const char* key, const std::vector<Item>& items, std::uint64_t total,
          std::size_t limit, std::size_t offset, Write write_item) {
  json::writer w;
  w.begin_object().key(key).begin_array();
  for (auto& x : items) {
    w.begin_object();
    write_item(w, x);
    w.end_object();
  }
  w.end_array();
  w.kv("total", total);
  w.key("pagination").begin_object();
  w.kv("limit", limit);
  w.kv("offset", offset);
  w.end_object();
  w.end_object();
  return {200, w.take()};
}

/// POST /api/v1/traces → 201 {success, traceId}.
void add(service&, call& c) {
  auto t = read_trace_body(c.req.body);
  if (!t)
    return reply_error(*c.ex, t.err());
  c.gw.add_trace(std::move(*t),
                 answer<std::string>(c.ex, [](const std::string& id) {
                   json::writer w;
                   w.begin_object();
                   w.kv("success", true);
                   w.kv("traceId", id);
                   w.end_object();
                   return std::pair{201, w.take()};
                 }));
}

/// GET /api/v1/traces/:partitionId/:transactionId → {traces}, oldest first.
void of_message(service&, call& c) {
  c.gw.traces({c.params.at(0), c.params.at(1)},
              answer<std::vector<node::trace>>(
                  c.ex, [](const std::vector<node::trace>& ts) {
                    json::writer w;
                    w.begin_object().key("traces").begin_array();
                    for (auto& t : ts) {
                      w.begin_object();
                      write_trace(w, t);
                      w.end_object();
                    }
                    w.end_array().end_object();
                    return std::pair{200, w.take()};
                  }));
}

/// GET /api/v1/traces/by-name/:traceName → {traces, total, pagination}.
void by_name(service&, call& c) {
  auto& name = c.params.at(0);
  if (name.empty() || name.size() > 255)
    return reply_error(*c.ex, make_error(errc::invalid_argument,
                                         "traceName must be 1..255 bytes"));
  auto page = read_page_query(c, 100, 1000);
  if (!page)
    return reply_error(*c.ex, page.err());
  auto [limit, offset] = *page;
  c.gw.traces_named({c.params.at(0), limit, offset},
                    answer<node::trace_page>(
                        c.ex, [limit, offset](const node::trace_page& p) {
                          return page_body(
                              "traces", p.traces, p.total, limit, offset,
                              [](json::writer& w, const node::named_trace& n) {
                                write_trace(w, n.t);
                                w.kv("queue_name", n.queue);
                                w.kv("partition_name", n.partition);
                                if (n.msg)
                                  write_payload(w, "message_payload", *n.msg,
                                                "message_payload_encoding",
                                                "message_payload_error");
                                else
                                  w.kv_null("message_payload");
                              });
                        }));
}

/// GET /api/v1/traces/names → {trace_names, total, pagination}.
void names(service&, call& c) {
  auto page = read_page_query(c, 50, 1000);
  if (!page)
    return reply_error(*c.ex, page.err());
  auto [limit, offset] = *page;
  c.gw.trace_names(
      {limit, offset},
      answer<node::trace_names_page>(
          c.ex, [limit, offset](const node::trace_names_page& p) {
            return page_body(
                "trace_names", p.names, p.total, limit, offset,
                [](json::writer& w, const node::trace_name_stats& n) {
                  w.kv("trace_name", n.name);
                  w.kv("trace_count", n.traces);
                  w.kv("message_count", n.messages);
                  w.kv("last_seen", timefmt::format_micros(n.last_seen));
                });
          }));
}

} // namespace

void add_trace_routes(std::vector<route>& t) {
  t.push_back({"POST", "/api/v1/traces", auth::access::read_write, &add});
  // Before the by-message route: both have two segments after /traces.
  t.push_back({"GET", "/api/v1/traces/names", auth::access::read_only, &names});
  t.push_back({"GET", "/api/v1/traces/by-name/:traceName",
               auth::access::read_only, &by_name});
  t.push_back({"GET", "/api/v1/traces/:partitionId/:transactionId",
               auth::access::read_only, &of_message});
}

} // namespace spool::api
