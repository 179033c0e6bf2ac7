// Consumer groups: the lag listings (Queen's shapes plus exact offsets and
// the live lease) and the deletions.

#include <algorithm>
#include <chrono>
#include <map>

#include "protocol/api/router.hpp"
#include "protocol/api/shapes.hpp"
#include "protocol/json/write.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

namespace {

void list_groups(service&, call& c) {
  c.gw.groups({},
              answer<std::vector<node::cursor_view>>(
                  c.ex, [](const std::vector<node::cursor_view>& cs) {
                    auto now = system_wall_now();
                    std::map<std::pair<std::string, std::string>,
                             std::vector<const node::cursor_view*>>
                        by;
                    for (auto& v : cs)
                      by[{v.group, v.queue}].push_back(&v);
                    json::writer w;
                    w.begin_array();
                    for (auto& [key, vs] : by) {
                      std::int64_t total = 0, max_lag_s = 0;
                      std::size_t with_lag = 0;
                      bool consumed = false;
                      for (auto* v : vs) {
                        total += v->lag;
                        with_lag += v->lag > 0;
                        max_lag_s = std::max(max_lag_s, time_lag_s(*v, now));
                        consumed |= v->committed >= 0;
                      }
                      w.begin_object();
                      w.kv("name", key.first);
                      w.key("topics").begin_array().str(key.second).end_array();
                      w.kv("queueName", key.second);
                      w.kv("members", vs.size());
                      w.kv("partitionsWithLag", with_lag);
                      w.kv("totalLag", total);
                      w.kv("maxTimeLag", max_lag_s);
                      w.kv("state", max_lag_s > 300 ? "Lagging"
                                    : consumed      ? "Stable"
                                                    : "Dead");
                      w.end_object();
                    }
                    w.end_array();
                    return std::pair{200, w.take()};
                  }));
}

void lagging(service&, call& c) {
  auto min = query_int(c, "minLagSeconds");
  if (!min)
    return reply_error(*c.ex, min.err());
  auto threshold = min->value_or(3600);
  c.gw.groups(
      {}, answer<std::vector<node::cursor_view>>(
              c.ex, [threshold](const std::vector<node::cursor_view>& cs) {
                auto now = system_wall_now();
                std::vector<const node::cursor_view*> hits;
                for (auto& v : cs)
                  if (v.lag > 0 && time_lag_s(v, now) >= threshold)
                    hits.push_back(&v);
                std::sort(hits.begin(), hits.end(), [now](auto* a, auto* b) {
                  return time_lag_s(*a, now) > time_lag_s(*b, now);
                });
                json::writer w;
                w.begin_array();
                for (auto* v : hits) {
                  auto lag_s = time_lag_s(*v, now);
                  w.begin_object();
                  w.kv("consumer_group", v->group);
                  w.kv("queue_name", v->queue);
                  w.kv("partition_name", v->partition);
                  w.kv("partition_id", v->partition_id);
                  if (v->lease)
                    w.kv("worker_id", v->lease->id);
                  else
                    w.kv_null("worker_id");
                  w.kv("offset_lag", v->lag);
                  w.kv("time_lag_seconds", lag_s);
                  w.key("lag_hours").i64(lag_s / 3600);
                  time_or_null(w, "oldest_unconsumed_at",
                               v->oldest_unconsumed_at);
                  time_or_null(w, "last_consumed_at", v->last_activity);
                  w.end_object();
                }
                w.end_array();
                return std::pair{200, w.take()};
              }));
}

void group_detail(service&, call& c) {
  node::groups_request req;
  req.group = c.params.at(0);
  c.gw.groups(
      req,
      answer<std::vector<node::cursor_view>>(
          c.ex, [](const std::vector<node::cursor_view>& cs) {
            auto now = system_wall_now();
            std::map<std::string, std::vector<const node::cursor_view*>> by;
            for (auto& v : cs)
              by[v.queue].push_back(&v);
            json::writer w;
            w.begin_object();
            for (auto& [queue, vs] : by) {
              w.key(queue).begin_object().key("partitions").begin_array();
              for (auto* v : vs) {
                w.begin_object();
                write_cursor_fields(w, *v, now);
                w.end_object();
              }
              w.end_array().end_object();
            }
            w.end_object();
            return std::pair{200, w.take()};
          }));
}

void delete_group(service&, call& c, bool one_queue) {
  node::delete_group_request req;
  req.group = c.params.at(0);
  if (one_queue)
    req.queue = c.params.at(1);
  auto meta = query_bool(c, "deleteMetadata");
  if (!meta)
    return reply_error(*c.ex, meta.err());
  req.delete_metadata = meta->value_or(true);
  auto echo = req;
  c.gw.delete_group(
      std::move(req),
      answer<node::delete_group_reply>(
          c.ex, [echo = std::move(echo)](const node::delete_group_reply& r) {
            json::writer w;
            w.begin_object();
            write_delete_group_fields(w, echo, r);
            w.end_object();
            return std::pair{200, w.take()};
          }));
}

void delete_group_all(service& svc, call& c) {
  delete_group(svc, c, false);
}

void delete_group_queue(service& svc, call& c) {
  delete_group(svc, c, true);
}

} // namespace

void add_group_routes(std::vector<route>& t) {
  t.push_back({"GET", "/api/v1/consumer-groups", auth::access::read_only,
               &list_groups, std::nullopt, true});
  t.push_back({"GET", "/api/v1/consumer-groups/lagging",
               auth::access::read_only, &lagging, std::nullopt, true});
  t.push_back({"GET", "/api/v1/consumer-groups/:group", auth::access::read_only,
               &group_detail, std::nullopt, true});
  t.push_back({"DELETE", "/api/v1/consumer-groups/:group", auth::access::admin,
               &delete_group_all});
  t.push_back({"DELETE", "/api/v1/consumer-groups/:group/queues/:queue",
               auth::access::admin, &delete_group_queue});
}

} // namespace spool::api
