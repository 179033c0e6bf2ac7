// Queues: configure, the resource listings (Queen's shapes plus offsets and
// options), deletion, purge and the read-only browse.

#include <map>

#include "protocol/api/encode.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/api/router.hpp"
#include "protocol/api/shapes.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

namespace {

void configure(service&, call& c) {
  auto body = read_configure_body(c.req.body);
  if (!body)
    return reply_error(*c.ex, body.err());
  c.gw.configure(std::move(body->req),
                 answer<node::configure_reply>(
                     c.ex, [unknown = std::move(body->unknown_options)](
                               const node::configure_reply& r) {
                       json::writer w;
                       w.begin_object();
                       write_configure_fields(w, r, unknown);
                       w.end_object();
                       return std::pair{200, w.take()};
                     }));
}

void list_queues(service&, call& c) {
  c.gw.queues(std::nullopt,
              answer<std::vector<node::queue_info>>(
                  c.ex, [](const std::vector<node::queue_info>& qs) {
                    json::writer w;
                    w.begin_object().key("queues").begin_array();
                    for (auto& q : qs) {
                      w.begin_object();
                      write_queue_summary_fields(w, q);
                      w.end_object();
                    }
                    w.end_array().end_object();
                    return std::pair{200, w.take()};
                  }));
}

void queue_detail(service&, call& c) {
  c.gw.queues(
      c.params.at(0),
      answer<std::vector<node::queue_info>>(
          c.ex, [](const std::vector<node::queue_info>& qs) {
            if (qs.empty()) // the node answers not_found instead
              return std::pair{404, json::error_body("Queue not found")};
            json::writer w;
            w.begin_object();
            write_queue_detail_fields(w, qs.front());
            w.end_object();
            return std::pair{200, w.take()};
          }));
}

void delete_queue(service&, call& c) {
  auto name = c.params.at(0);
  c.gw.delete_queue(name, answer<bool>(c.ex, [name](bool existed) {
                      json::writer w;
                      w.begin_object();
                      write_delete_queue_fields(w, name, existed);
                      w.end_object();
                      return std::pair{200, w.take()};
                    }));
}

void purge(service&, call& c) {
  node::purge_request req;
  req.queue = c.params.at(0);
  req.partition = query_str(c, "partition");
  auto below = query_int(c, "below");
  if (!below)
    return reply_error(*c.ex, below.err());
  req.below = *below;
  auto name = req.queue;
  c.gw.purge(std::move(req), answer<std::size_t>(c.ex, [name](std::size_t n) {
               json::writer w;
               w.begin_object();
               write_purge_fields(w, name, n);
               w.end_object();
               return std::pair{200, w.take()};
             }));
}

void browse(service&, call& c) {
  node::browse_request req;
  auto queue = query_str(c, "queue");
  if (!queue)
    return reply_error(*c.ex,
                       make_error(errc::invalid_argument, "queue is required"));
  req.queue = *queue;
  req.partition = query_str(c, "partition").value_or(node::default_partition);
  auto from = query_int(c, "fromOffset");
  if (!from)
    return reply_error(*c.ex, from.err());
  req.from = from->value_or(0);
  auto limit = query_int(c, "limit");
  if (!limit)
    return reply_error(*c.ex, limit.err());
  if (*limit) {
    if (**limit < 1 || **limit > 10'000)
      return reply_error(
          *c.ex, make_error(errc::invalid_argument, "limit must be 1..10000"));
    req.limit = static_cast<std::size_t>(**limit);
  }
  c.gw.browse(std::move(req),
              answer<node::browse_reply>(c.ex, [](const node::browse_reply& r) {
                json::writer w;
                w.begin_object();
                write_browse_fields(w, r);
                w.end_object();
                return std::pair{200, w.take()};
              }));
}

/// `/resources/namespaces` and `/resources/tasks`: the queues grouped.
void grouped(service&, call& c, bool by_task) {
  c.gw.queues(std::nullopt,
              answer<std::vector<node::queue_info>>(
                  c.ex, [by_task](const std::vector<node::queue_info>& qs) {
                    struct sums {
                      std::size_t queues = 0, partitions = 0;
                      std::int64_t total = 0;
                    };
                    std::map<std::string, sums> m;
                    for (auto& q : qs) {
                      auto& s = m[by_task ? q.task : q.name_space];
                      ++s.queues;
                      s.partitions += q.partitions.size();
                      for (auto& p : q.partitions)
                        s.total += retained(p);
                    }
                    json::writer w;
                    w.begin_object()
                        .key(by_task ? "tasks" : "namespaces")
                        .begin_array();
                    for (auto& [name, s] : m) {
                      w.begin_object();
                      w.kv(by_task ? "task" : "namespace", name);
                      w.kv("queues", s.queues);
                      w.kv("partitions", s.partitions);
                      w.key("messages").begin_object();
                      w.kv("total", s.total);
                      w.kv_null("pending");
                      w.end_object();
                      w.end_object();
                    }
                    w.end_array().end_object();
                    return std::pair{200, w.take()};
                  }));
}

void namespaces(service& svc, call& c) {
  grouped(svc, c, false);
}

void tasks(service& svc, call& c) {
  grouped(svc, c, true);
}

void overview(service&, call& c) {
  c.gw.queues(std::nullopt,
              answer<std::vector<node::queue_info>>(
                  c.ex, [](const std::vector<node::queue_info>& qs) {
                    std::size_t partitions = 0;
                    std::int64_t total = 0;
                    for (auto& q : qs) {
                      partitions += q.partitions.size();
                      for (auto& p : q.partitions)
                        total += retained(p);
                    }
                    json::writer w;
                    w.begin_object();
                    w.kv("queues", qs.size());
                    w.kv("partitions", partitions);
                    w.key("messages").begin_object();
                    w.kv("total", total);
                    w.kv_null("pending");
                    w.kv_null("processing");
                    w.end_object();
                    w.end_object();
                    return std::pair{200, w.take()};
                  }));
}

} // namespace

void add_queue_routes(std::vector<route>& t) {
  t.push_back({"POST", "/api/v1/configure", auth::access::admin, &configure});
  t.push_back({"GET", "/api/v1/resources/queues", auth::access::read_only,
               &list_queues, std::nullopt, true});
  t.push_back({"GET", "/api/v1/resources/queues/:queue",
               auth::access::read_only, &queue_detail});
  t.push_back({"DELETE", "/api/v1/resources/queues/:queue", auth::access::admin,
               &delete_queue});
  t.push_back({"POST", "/api/v1/resources/queues/:queue/purge",
               auth::access::admin, &purge});
  t.push_back({"GET", "/api/v1/resources/overview", auth::access::read_only,
               &overview, std::nullopt, true});
  t.push_back({"GET", "/api/v1/resources/namespaces", auth::access::read_only,
               &namespaces, std::nullopt, true});
  t.push_back({"GET", "/api/v1/resources/tasks", auth::access::read_only,
               &tasks, std::nullopt, true});
  t.push_back({"GET", "/api/v1/messages", auth::access::read_only, &browse});
}

} // namespace spool::api
