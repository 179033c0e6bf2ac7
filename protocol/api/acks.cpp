// POST /api/v1/ack, /ack/batch, /lease/:leaseId/extend and /transaction
// (api.md): per-item outcomes stay 200 with `success` and `error`.

#include "protocol/api/encode.hpp"
#include "protocol/api/metrics.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/api/router.hpp"
#include "protocol/time/rfc3339.hpp"

namespace spool::api {

namespace {

/// The answer of an ack list: one item per ack, in order.
void ack_list(service& svc, call& c, node::ack_request req) {
  if (req.items.empty()) // Queen never answers this; Spool answers []
    return reply_json(*c.ex, 200, "[]");
  std::vector<std::string> txids;
  for (auto& it : req.items)
    txids.push_back(it.transaction_id.value_or(""));
  svc.gw.ack(
      std::move(req),
      answer<node::ack_reply>(c.ex, [txids = std::move(txids),
                                     m = svc.stats](const node::ack_reply& r) {
        if (m)
          for (auto& it : r.items)
            (it.success ? m->acked : m->ack_failed)
                .fetch_add(1, std::memory_order_relaxed);
        json::writer w;
        w.begin_array();
        for (std::size_t i = 0; i < r.items.size(); ++i) {
          auto& it = r.items[i];
          w.begin_object();
          w.kv("index", i);
          w.kv("transactionId", i < txids.size() ? txids[i] : std::string{});
          w.kv("success", it.success);
          if (it.error.empty())
            w.kv_null("error");
          else
            w.kv("error", it.error);
          w.kv("queueName", it.queue);
          w.kv("partitionName", it.partition);
          w.kv("leaseReleased", it.lease_released);
          w.kv("dlq", it.dead_lettered);
          w.end_object();
        }
        w.end_array();
        return std::pair{200, w.take()};
      }));
}

void ack(service& svc, call& c) {
  auto req = read_ack_body(c.req.body);
  if (!req)
    return reply_error(*c.ex, req.err());
  ack_list(svc, c, std::move(*req));
}

void ack_batch(service& svc, call& c) {
  auto req = read_ack_batch_body(c.req.body);
  if (!req)
    return reply_error(*c.ex, req.err());
  ack_list(svc, c, std::move(*req));
}

void extend(service& svc, call& c) {
  auto by = read_extend_body(c.req.body);
  if (!by)
    return reply_error(*c.ex, by.err());
  node::extend_request req{c.params.at(0), *by};
  svc.gw.extend(std::move(req),
                answer<node::extend_reply>(
                    c.ex, [id = c.params.at(0)](const node::extend_reply& r) {
                      json::writer w;
                      w.begin_array().begin_object();
                      w.kv("index", 0);
                      w.kv("leaseId", id);
                      w.kv("success", r.success);
                      if (r.error.empty())
                        w.kv_null("error");
                      else
                        w.kv("error", r.error);
                      if (r.success)
                        w.kv("expiresAt", timefmt::format_millis(r.expires_at));
                      else
                        w.kv_null("expiresAt");
                      w.key("partitions").begin_array();
                      for (auto& p : r.partitions)
                        w.str(p);
                      w.end_array();
                      w.end_object().end_array();
                      return std::pair{200, w.take()};
                    }));
}

/// What the answer echoes of each operation: its type and, for an ack, the
/// transactionId it named.
struct op_echo {
  bool push = false;
  std::string transaction_id;
};

void transaction(service& svc, call& c) {
  auto req = read_txn_body(c.req.body);
  if (!req)
    return reply_error(*c.ex, req.err());
  std::vector<op_echo> ops;
  for (auto& op : req->operations) {
    if (auto* a = std::get_if<node::txn_ack>(&op))
      ops.push_back({false, a->ack.transaction_id.value_or("")});
    else
      ops.push_back({true, ""});
  }
  svc.gw.transaction(
      std::move(*req),
      answer<node::txn_reply>(c.ex, [ops = std::move(ops)](
                                        const node::txn_reply& r) {
        json::writer w;
        w.begin_object();
        w.kv("transactionId", r.transaction_id);
        w.kv("success", r.success);
        if (!r.success)
          w.kv("error", r.error);
        w.key("results").begin_array();
        for (std::size_t i = 0; i < r.results.size() && i < ops.size(); ++i) {
          auto& res = r.results[i];
          if (ops[i].push) {
            for (auto& it : res.items) {
              w.begin_object();
              w.kv("index", i);
              w.kv("type", "push");
              w.kv("success", true);
              w.kv("transactionId", it.transaction_id);
              w.kv("status", it.status == node::push_status::queued
                                 ? "queued"
                                 : "duplicate");
              w.kv("messageId", message_id(it.partition_id, it.offset));
              w.kv("partitionId", it.partition_id);
              w.kv("queueName", it.queue);
              w.kv("partition", it.partition);
              w.kv("offset", it.offset);
              w.end_object();
            }
          } else {
            w.begin_object();
            w.kv("index", i);
            w.kv("type", "ack");
            w.kv("success", true);
            w.kv("transactionId", ops[i].transaction_id);
            w.kv_null("error");
            w.kv("leaseReleased", res.lease_released);
            w.kv("dlq", res.dead_lettered);
            w.end_object();
          }
        }
        w.end_array();
        w.end_object();
        return std::pair{200, w.take()};
      }));
}

} // namespace

void add_ack_routes(std::vector<route>& t) {
  t.push_back({"POST", "/api/v1/ack", &ack});
  t.push_back({"POST", "/api/v1/ack/batch", &ack_batch});
  t.push_back({"POST", "/api/v1/lease/:leaseId/extend", &extend});
  t.push_back({"POST", "/api/v1/transaction", &transaction});
}

} // namespace spool::api
