// Operations: liveness, readiness, and the routes of Queen that have no
// meaning in Spool, answered 501 with the reason instead of a fake body.

#include "protocol/api/router.hpp"
#include "protocol/json/write.hpp"

namespace spool::api {

namespace {

void health(service& svc, call& c) {
  json::writer w;
  w.begin_object();
  w.kv("status", "healthy");
  w.kv("server", "spool");
  w.kv("state", to_string(svc.state.load()));
  w.end_object();
  reply_json(*c.ex, 200, w.take());
}

void ready(service& svc, call& c) {
  auto st = svc.state.load();
  json::writer w;
  w.begin_object();
  w.kv("ready", st == readiness::ready);
  w.kv("state", to_string(st));
  w.end_object();
  http::header_list extra;
  if (st != readiness::ready)
    extra.emplace_back("Retry-After", "1");
  reply_json(*c.ex, st == readiness::ready ? 200 : 503, w.take(),
             std::move(extra));
}

void not_supported(call& c, std::string_view why) {
  reply_json(*c.ex, 501,
             json::error_body(std::string{"Not supported by Spool: "}
                              + std::string{why}));
}

void dashboard(service&, call& c) {
  not_supported(c, "Queen's dashboard series (throughput, analytics) are "
                   "history kept in PostgreSQL, and Spool keeps none: scrape "
                   "/metrics/prometheus for rates; each queue's figures now "
                   "are at /api/v1/status/queues and /api/v1/consumer-groups");
}

void queue_messages(service&, call& c) {
  not_supported(c, "a message's status is per consumer group in a log, not "
                   "one state across partitions: list a partition with GET "
                   "/api/v1/messages?queue=&partition= and see where each "
                   "group stands on one message with GET "
                   "/api/v1/messages/:partitionId/:transactionId");
}

void buffers(service&, call& c) {
  not_supported(c, "Queen's buffer counters are its file buffer's, which "
                   "Spool does not have (a push is durable or refused)");
}

void maintenance(service&, call& c) {
  not_supported(c, "Queen's maintenance modes drive its file buffer, which "
                   "Spool does not have (a push is durable or refused)");
}

void migration(service&, call& c) {
  not_supported(c, "migration copies Queen's PostgreSQL schema");
}

void stats_refresh(service&, call& c) {
  not_supported(c, "Spool's statistics are exact at every request; there is "
                   "nothing to refresh");
}

void internal_routes(service&, call& c) {
  not_supported(c, "Queen's inter-instance routes belong to its cluster "
                   "protocol");
}

void streams(service&, call& c) {
  not_supported(c, "the streaming SDK backend is not part of Spool");
}

void metrics_json(service&, call& c) {
  not_supported(c, "Queen's /metrics JSON is mostly a stub; use "
                   "/metrics/prometheus");
}

void delete_message(service&, call& c) {
  not_supported(c, "a partition is an append-only log: messages are removed "
                   "by retention and purge, whole segments at a time");
}

} // namespace

void add_ops_routes(std::vector<route>& t) {
  t.push_back({"GET", "/health", auth::access::read_only, &health});
  t.push_back({"GET", "/health/ready", auth::access::read_only, &ready});
  t.push_back({"GET", "/metrics", auth::access::read_only, &metrics_json});
  t.push_back({"GET", "/api/v1/status/queues/:queue/messages",
               auth::access::read_only, &queue_messages});
  for (auto* m : {"GET", "POST"}) {
    t.push_back(
        {m, "/api/v1/status/buffers", auth::access::read_only, &buffers});
    t.push_back({m, "/api/v1/status", auth::access::read_only, &dashboard});
    t.push_back({m, "/api/v1/status/*", auth::access::read_only, &dashboard});
    t.push_back(
        {m, "/api/v1/analytics/*", auth::access::read_only, &dashboard});
    t.push_back({m, "/api/v1/system/*", auth::access::admin, &maintenance});
    t.push_back({m, "/api/v1/migration/*", auth::access::admin, &migration});
    t.push_back({m, "/internal/api/*", auth::access::admin, &internal_routes});
    t.push_back({m, "/streams/v1/*", auth::access::read_write, &streams});
  }
  t.push_back(
      {"POST", "/api/v1/stats/refresh", auth::access::admin, &stats_refresh});
  t.push_back({"DELETE", "/api/v1/messages/:partitionId/:transactionId",
               auth::access::read_write, &delete_message});
}

} // namespace spool::api
