// The product document's routes (replay-and-subscription-modes.md): the
// per-queue and per-partition seeks and the subscription update.

#include "protocol/api/metrics.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/api/router.hpp"
#include "protocol/json/write.hpp"
#include "protocol/time/rfc3339.hpp"

namespace spool::api {

namespace {

void write_positions(json::writer& w, const node::seek_reply& r) {
  w.key("positions").begin_array();
  for (auto& p : r.positions) {
    w.begin_object();
    w.kv("partition", p.partition);
    if (p.before)
      w.kv("before", *p.before);
    else
      w.kv_null("before");
    w.kv("committed", p.after);
    w.end_object();
  }
  w.end_array();
}

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
  auto t = *target;
  svc.gw.seek(
      std::move(req),
      answer<node::seek_reply>(
          c.ex, [params = c.params, t, per_partition,
                 dry_run = dry->value_or(false)](const node::seek_reply& r) {
            json::writer w;
            w.begin_object();
            w.kv("success", true);
            w.kv("consumerGroup", params.at(0));
            w.kv("queueName", params.at(1));
            if (per_partition) {
              w.kv("partitionName", params.at(2));
              w.kv("updated", !dry_run);
              if (!r.positions.empty())
                w.kv("committed", r.positions.front().after);
            } else {
              w.kv("seekToEnd", t.to_end);
              if (t.timestamp && !t.to_end)
                w.kv("targetTimestamp", timefmt::format_millis(*t.timestamp));
              else
                w.kv_null("targetTimestamp");
              w.kv("partitionsUpdated", r.partitions_updated);
            }
            w.kv("dryRun", dry_run);
            write_positions(w, r);
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

void subscription(service& svc, call& c) {
  auto ts = read_subscription_body(c.req.body);
  if (!ts)
    return reply_error(*c.ex, ts.err());
  node::subscription_request req{c.params.at(0), *ts};
  svc.gw.update_subscription(
      std::move(req), answer<node::subscription_reply>(
                          c.ex, [group = c.params.at(0),
                                 ts = *ts](const node::subscription_reply& r) {
                            json::writer w;
                            w.begin_object();
                            w.kv("success", true);
                            w.kv("consumerGroup", group);
                            w.kv("newTimestamp", timefmt::format_micros(ts));
                            w.kv("rowsUpdated", r.rows_updated);
                            w.end_object();
                            return std::pair{200, w.take()};
                          }));
}

} // namespace

void add_replay_routes(std::vector<route>& t) {
  t.push_back(
      {"POST", "/api/v1/consumer-groups/:group/subscription", &subscription});
  t.push_back({"POST", "/api/v1/consumer-groups/:group/queues/:queue/seek",
               &seek_queue});
  t.push_back({"POST",
               "/api/v1/consumer-groups/:group/queues/:queue/partitions/"
               ":partition/seek",
               &seek_partition});
}

} // namespace spool::api
