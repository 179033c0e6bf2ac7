// One message by partition and transactionId (Queen's message detail): the
// message as a browse shows it, its queue's configuration, and where every
// group with a cursor on its partition stands relative to it.

#include <algorithm>
#include <chrono>
#include <memory>

#include "protocol/api/encode.hpp"
#include "protocol/api/router.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

namespace {

/// One group's position relative to the message at `offset`.
struct group_state {
  const node::cursor_view* view;
  bool consumed; ///< the cursor is past it (acked, dead-lettered, sought past)
  bool processing; ///< inside the group's live lease
};

std::string detail_body(const node::message& m, const node::queue_info& q,
                        const std::vector<node::cursor_view>& cursors) {
  auto now = system_wall_now();
  std::vector<group_state> groups;
  for (auto& v : cursors) {
    if (v.partition_id != m.partition_id)
      continue;
    bool consumed = m.offset <= v.committed;
    bool leased = v.lease && v.lease->expires_at > now
                  && v.lease->first <= m.offset && m.offset <= v.lease->last;
    groups.push_back({&v, consumed, !consumed && leased});
  }
  bool queue_mode = false;
  std::size_t bus = 0, consumed_by = 0;
  const group_state* queue_state = nullptr;
  for (auto& g : groups) {
    if (g.view->group == queue_mode_group) {
      queue_mode = true;
      queue_state = &g;
      continue;
    }
    ++bus;
    consumed_by += g.consumed;
  }
  // Queen's rule: in queue mode the queue-mode cursor decides; with groups
  // only, completed once every group is past it, else pending (each group's
  // entry says whether it holds the message).
  std::string status = "pending";
  if (queue_state)
    status = queue_state->consumed     ? "completed"
             : queue_state->processing ? "processing"
                                       : "pending";
  else if (bus > 0 && consumed_by == bus)
    status = "completed";
  json::writer w;
  w.begin_object();
  write_message_fields(w, m);
  w.kv("queuePath", m.queue + "/" + m.partition);
  w.kv("namespace", q.name_space);
  w.kv("task", q.task);
  w.kv("status", status);
  w.key("payload");
  if (m.binary)
    w.null(); // `data` carries it, base64
  else if (m.payload.empty())
    w.null();
  else
    w.raw(m.payload);
  w.kv("isEncrypted", m.encrypted);
  w.kv_null("errorMessage"); // a dead letter's: GET /api/v1/dlq
  w.kv_null("retryCount");
  if (queue_state && queue_state->processing)
    w.kv("leaseExpiresAt",
         timefmt::format_micros(queue_state->view->lease->expires_at));
  else
    w.kv_null("leaseExpiresAt");
  w.key("queueConfig");
  write_options(w, q.options);
  w.key("mode").begin_object();
  w.kv("hasQueueMode", queue_mode);
  w.kv("busGroupsCount", static_cast<std::uint64_t>(bus));
  w.kv("consumedByGroups", static_cast<std::uint64_t>(consumed_by));
  w.kv("type", queue_mode && bus > 0 ? "hybrid"
               : queue_mode          ? "queue"
               : bus > 0             ? "bus"
                                     : "none");
  w.end_object();
  w.key("consumerGroups").begin_array();
  for (auto& g : groups) {
    w.begin_object();
    w.kv("name", g.view->group);
    w.kv("consumed", g.consumed);
    w.kv("processing", g.processing);
    w.kv("committedOffset", g.view->committed);
    if (g.processing)
      w.kv("leaseExpiresAt", timefmt::format_micros(g.view->lease->expires_at));
    else
      w.kv_null("leaseExpiresAt");
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take();
}

/// GET /api/v1/messages/:partitionId/:transactionId: the message, then its
/// queue, then the queue's cursors (three reads; the answer is as of the
/// last one).
void message_detail(service&, call& c) {
  auto gw = c.gw;
  auto ex = c.ex;
  c.gw.find(
      {c.params.at(0), c.params.at(1)},
      [gw, ex](expected<node::message> m) mutable {
        if (!m)
          return reply_error(*ex, m.err());
        auto msg = std::make_shared<node::message>(std::move(*m));
        gw.queues(
            msg->queue,
            [gw, ex, msg](expected<std::vector<node::queue_info>> qs) mutable {
              if (!qs)
                return reply_error(*ex, qs.err());
              if (qs->empty()) // deleted between the two reads
                return reply_error(
                    *ex, make_error(errc::not_found, "Message not found"));
              auto q
                  = std::make_shared<node::queue_info>(std::move(qs->front()));
              gw.groups(
                  {std::nullopt, msg->queue, msg->partition},
                  answer<std::vector<node::cursor_view>>(
                      ex, [msg, q](const std::vector<node::cursor_view>& cs) {
                        return std::pair{200, detail_body(*msg, *q, cs)};
                      }));
            });
      });
}

} // namespace

void add_message_routes(std::vector<route>& t) {
  t.push_back({"GET", "/api/v1/messages/:partitionId/:transactionId",
               auth::access::read_only, &message_detail});
}

} // namespace spool::api
