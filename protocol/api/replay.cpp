// The product document's routes (replay-and-subscription-modes.md): the
// per-queue and per-partition seeks and the subscription update.

#include "protocol/api/metrics.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/api/router.hpp"
#include "protocol/api/shapes.hpp"
#include "protocol/json/write.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

namespace {

void seek(service& svc, call& c, bool per_partition) {
  auto target = read_seek_body(c.req.body, per_partition);
  if (!target)
    return reply_error(*c.ex, target.err());
  auto dry = query_bool(c, "dryRun");
  if (!dry)
    return reply_error(*c.ex, dry.err());
  node::seek_request req;
  req.group = c.params.at(0);
  req.queue = c.params.at(1);
  if (per_partition)
    req.partition = c.params.at(2);
  req.target = *target;
  req.dry_run = dry->value_or(false);
  auto echo = req;
  c.gw.seek(std::move(req), answer<node::seek_reply>(
                                c.ex, [echo = std::move(echo), m = svc.stats](
                                          const node::seek_reply& r) {
                                  count_seek(m, echo.dry_run);
                                  json::writer w;
                                  w.begin_object();
                                  write_seek_fields(w, echo, r);
                                  w.end_object();
                                  return std::pair{200, w.take()};
                                }));
}

void seek_queue(service& svc, call& c) {
  seek(svc, c, false);
}

void seek_partition(service& svc, call& c) {
  seek(svc, c, true);
}

void subscription(service&, call& c) {
  auto ts = read_subscription_body(c.req.body);
  if (!ts)
    return reply_error(*c.ex, ts.err());
  node::subscription_request req{c.params.at(0), *ts};
  c.gw.update_subscription(req,
                           answer<node::subscription_reply>(
                               c.ex, [req](const node::subscription_reply& r) {
                                 json::writer w;
                                 w.begin_object();
                                 write_subscription_fields(w, req, r);
                                 w.end_object();
                                 return std::pair{200, w.take()};
                               }));
}

constexpr std::string_view seek_keys[] = {"dryRun"};

} // namespace

void add_replay_routes(std::vector<route>& t) {
  t.push_back({"POST", "/api/v1/consumer-groups/:group/subscription",
               auth::access::read_write, &subscription});
  t.push_back({"POST", "/api/v1/consumer-groups/:group/queues/:queue/seek",
               auth::access::read_write, &seek_queue, seek_keys});
  t.push_back({"POST",
               "/api/v1/consumer-groups/:group/queues/:queue/partitions/"
               ":partition/seek",
               auth::access::read_write, &seek_partition, seek_keys});
}

} // namespace spool::api
