// Queen's status snapshots, as far as Spool can answer them truthfully:
// `/api/v1/status/queues` and `/api/v1/status/queues/:queue` give each
// queue's retained messages and where its queue-mode group (the pops that
// name no consumerGroup, `__QUEUE_MODE__`) stands on them. A message's
// status is per group in a log: these figures are the queue-mode group's,
// as Queen's own are. The dashboard series and the file buffer's counters
// answer 501 (ops.cpp).

#include <algorithm>
#include <map>
#include <memory>

#include "protocol/api/encode.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/api/router.hpp"
#include "vocab/delivery.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

namespace {

/// The queue-mode group on one partition's retained messages, in Queen's
/// sense: `pending` is every message the group is not done with, the
/// leased ones included.
struct mode_counts {
  std::int64_t total = 0;      ///< retained
  std::int64_t pending = 0;    ///< not done (acked or dead-lettered)
  std::int64_t processing = 0; ///< of those, in the live lease
  std::int64_t completed = 0;  ///< done

  mode_counts& operator+=(const mode_counts& o) {
    total += o.total;
    pending += o.pending;
    processing += o.processing;
    completed += o.completed;
    return *this;
  }
};

/// `c`: the queue-mode cursor on `p` (none: the group never popped there,
/// so every retained message is pending, as Queen counts a partition
/// without a consumer row). Done: at or below the committed offset, or
/// acked or dead-lettered above it out of order.
mode_counts count(const node::partition_info& p, const node::cursor_view* c) {
  mode_counts n;
  n.total = retained(p);
  if (!c) {
    n.pending = n.total;
    return n;
  }
  auto below
      = std::clamp<std::int64_t>(c->committed + 1 - p.watermark, 0, n.total);
  n.completed = std::min<std::int64_t>(
      n.total, below + static_cast<std::int64_t>(c->done_above));
  n.pending = n.total - n.completed;
  // The cursor counts its lease's unsettled retained frames; the queue,
  // read before the cursor, may know fewer: hence the bound.
  n.processing = std::min<std::int64_t>(static_cast<std::int64_t>(c->in_flight),
                                        n.pending);
  return n;
}

/// The DLQ listing's refusal of a group it does not know (dlq_reader.cpp).
bool unknown_group(const api_error& e) {
  return e.code == errc::not_found
         && e.message.rfind("Consumer group not found: ", 0) == 0;
}

/// The queue-mode cursors by partition uuid.
using cursor_index = std::map<std::string, const node::cursor_view*>;

cursor_index index_of(const std::vector<node::cursor_view>& cs) {
  cursor_index out;
  for (auto& c : cs)
    out[c.partition_id] = &c;
  return out;
}

const node::cursor_view* find(const cursor_index& ix,
                              const node::partition_info& p) {
  auto it = ix.find(p.id);
  return it == ix.end() ? nullptr : it->second;
}

/// The counts' fields (the caller opens and closes the object): with
/// `detail` also completed, failed and deadLetter (`dead`, none: null).
void write_count_fields(json::writer& w, const mode_counts& n, bool detail,
                        std::optional<std::size_t> dead) {
  w.kv("total", n.total);
  w.kv("pending", n.pending);
  w.kv("processing", n.processing);
  if (detail) {
    w.kv("completed", n.completed);
    w.kv("failed", 0); // Queen's is 0 too: a failure retries or dead-letters
    if (dead)
      w.kv("deadLetter", static_cast<std::uint64_t>(*dead));
    else
      w.kv_null("deadLetter");
  }
}

void write_counts(json::writer& w, const mode_counts& n, bool detail,
                  std::optional<std::size_t> dead) {
  w.begin_object();
  write_count_fields(w, n, detail, dead);
  w.end_object();
}

/// The queue-mode group's cursors (every queue's, or `queue`'s), then `k`.
template <class K>
void queue_mode_cursors(scoped_gateway gw, exchange_ptr ex,
                        std::optional<std::string> queue, K k) {
  node::groups_request req;
  req.group = std::string{queue_mode_group};
  req.queue = std::move(queue);
  gw.groups(std::move(req),
            [ex, k = std::move(k)](
                expected<std::vector<node::cursor_view>> cs) mutable {
              if (!cs)
                return reply_error(*ex, cs.err());
              k(std::move(*cs));
            });
}

/// GET /api/v1/status/queues: each queue (namespace, task filters; limit,
/// offset) with its retained total and the queue-mode group's pending and
/// processing.
void status_queues(service&, call& c) {
  auto page = read_page_query(c, 100, 1000);
  if (!page)
    return reply_error(*c.ex, page.err());
  auto ns = query_str(c, "namespace");
  auto task = query_str(c, "task");
  auto gw = c.gw;
  auto ex = c.ex;
  c.gw.queues(std::nullopt, [gw, ex, ns, task, limit = page->first,
                             offset = page->second](
                                expected<std::vector<node::queue_info>> qs) {
    if (!qs)
      return reply_error(*ex, qs.err());
    auto list = std::make_shared<std::vector<node::queue_info>>();
    for (auto& q : *qs)
      if ((!ns || q.name_space == *ns) && (!task || q.task == *task))
        list->push_back(std::move(q));
    // Queen's order: newest first (then by name, so pages are stable).
    std::sort(list->begin(), list->end(), [](auto& a, auto& b) {
      return a.created_at != b.created_at ? a.created_at > b.created_at
                                          : a.name < b.name;
    });
    queue_mode_cursors(
        gw, ex, std::nullopt,
        [ex, list, limit, offset](std::vector<node::cursor_view> cs) {
          auto ix = index_of(cs);
          json::writer w;
          w.begin_object().key("queues").begin_array();
          for (auto i = offset; i < list->size() && i < offset + limit; ++i) {
            auto& q = (*list)[i];
            mode_counts sum;
            for (auto& p : q.partitions)
              sum += count(p, find(ix, p));
            w.begin_object();
            write_queue_names(w, q);
            w.kv("partitions", q.partitions.size());
            w.key("messages");
            write_counts(w, sum, false, std::nullopt);
            w.end_object();
          }
          w.end_array();
          w.key("pagination").begin_object();
          w.kv("limit", limit);
          w.kv("offset", offset);
          w.kv("total", list->size());
          w.end_object();
          w.end_object();
          reply_json(*ex, 200, w.take());
        });
  });
}

std::string queue_body(const node::queue_info& q,
                       const std::vector<node::cursor_view>& cs,
                       std::size_t dead) {
  auto ix = index_of(cs);
  json::writer w;
  w.begin_object();
  w.key("queue").begin_object();
  write_queue_names(w, q);
  w.kv("priority", q.options.priority);
  w.key("config").begin_object();
  w.kv("leaseTime", q.options.lease_time_s);
  w.kv("retryLimit", q.options.retry_limit);
  w.kv("retryDelay", q.options.retry_delay_ms);
  w.kv("ttl", q.options.ttl_s);
  w.kv("maxQueueSize", q.options.max_size);
  w.kv("deadLetterQueue", q.options.dead_letter_queue.value_or(false));
  w.end_object();
  w.key("options");
  write_options(w, q.options);
  w.end_object();
  mode_counts sum;
  w.key("partitions").begin_array();
  for (auto& p : q.partitions) {
    auto* c = find(ix, p);
    auto n = count(p, c);
    sum += n;
    w.begin_object();
    w.kv("id", p.id);
    w.kv("name", p.name);
    w.kv("createdAt", timefmt::format_micros(p.created_at));
    w.key("messages");
    write_counts(w, n, true, std::nullopt);
    w.kv("lastOffset", p.last_offset);
    w.kv("watermark", p.watermark);
    w.key("cursor").begin_object();
    w.kv("committedOffset", c ? c->committed : -1);
    // Every offset the group completed, retained or since deleted.
    w.kv("totalConsumed", c ? std::max<std::int64_t>(0, c->committed + 1) : 0);
    w.kv_null("batchesConsumed"); // Queen's counter; Spool keeps none
    w.end_object();
    if (c && c->last_activity > 0)
      w.kv("lastActivity", timefmt::format_micros(c->last_activity));
    else
      w.kv_null("lastActivity");
    w.end_object();
  }
  w.end_array();
  w.key("totals").begin_object();
  w.kv("partitions", q.partitions.size());
  w.key("messages");
  write_counts(w, sum, true, dead);
  write_count_fields(w, sum, true, dead); // Queen repeats them flat
  w.end_object();
  w.end_object();
  return w.take();
}

/// GET /api/v1/status/queues/:queue: the queue, each partition's counts
/// and the queue-mode cursor there; the queue-mode group's dead letters in
/// the totals (three reads, one after the other: a push or an ack between
/// them can shift a count by what it did).
void status_queue(service&, call& c) {
  auto gw = c.gw;
  auto ex = c.ex;
  auto name = c.params.at(0);
  c.gw.queues(name, [gw, ex, name](expected<std::vector<node::queue_info>> qs) {
    if (!qs)
      return reply_error(*ex, qs.err());
    if (qs->empty())
      return reply_error(*ex, make_error(errc::not_found, "Queue not found"));
    auto q = std::make_shared<node::queue_info>(std::move(qs->front()));
    queue_mode_cursors(
        gw, ex, name, [gw, ex, q](std::vector<node::cursor_view> cs) mutable {
          dlq_query dq;
          dq.filter.queue = q->name;
          dq.filter.group = std::string{queue_mode_group};
          dq.limit = 1;
          auto cursors
              = std::make_shared<std::vector<node::cursor_view>>(std::move(cs));
          // A group the queue does not know yet has no dead letters (any
          // other failure, a queue deleted meanwhile, is the answer).
          gw.dlq_list(
              std::move(dq), [ex, q, cursors](expected<node::dlq_page> page) {
                if (!page && !unknown_group(page.err()))
                  return reply_error(*ex, page.err());
                reply_json(*ex, 200,
                           queue_body(*q, *cursors, page ? page->total : 0));
              });
        });
  });
}

} // namespace

void add_status_routes(std::vector<route>& t) {
  t.push_back({"GET", "/api/v1/status/queues", auth::access::read_only,
               &status_queues, std::nullopt, true});
  t.push_back({"GET", "/api/v1/status/queues/:queue", auth::access::read_only,
               &status_queue});
}

} // namespace spool::api
