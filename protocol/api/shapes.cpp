// The answers both doors write (api/shapes.hpp), moved out of the routes so
// that HTTP and msgpack say the same thing.

#include "protocol/api/shapes.hpp"

#include <algorithm>

#include "protocol/api/encode.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

namespace {

template <class W>
void error_or_null(W& w, const std::string& error) {
  if (error.empty())
    w.kv_null("error");
  else
    w.kv("error", error);
}

const char* status_name(node::push_status s) {
  return s == node::push_status::queued ? "queued" : "duplicate";
}

} // namespace

template <class W>
void time_or_null(W& w, std::string_view k, micros t) {
  if (t > 0)
    w.kv(k, timefmt::format_micros(t));
  else
    w.kv_null(k);
}

template <class W>
void write_push_items(W& w, const node::push_reply& r) {
  w.begin_array();
  std::size_t i = 0;
  for (auto& it : r.items) {
    w.begin_object();
    w.kv("index", i++);
    w.kv("transaction_id", it.transaction_id);
    w.kv("status", status_name(it.status));
    w.kv("message_id", message_id(it.partition_id, it.offset));
    w.kv("partition_id", it.partition_id);
    if (it.trace_id.empty())
      w.kv_null("trace_id");
    else
      w.kv("trace_id", it.trace_id);
    w.kv("queueName", it.queue);
    w.kv("partition", it.partition);
    w.kv("offset", it.offset);
    w.end_object();
  }
  w.end_array();
}

/// A pop's `skipped` ranges (retention deleted them under the group).
template <class W>
void write_skipped(W& w, const node::pop_reply& r) {
  if (r.skipped.empty())
    return;
  w.key("skipped").begin_array();
  for (auto& s : r.skipped) {
    w.begin_object();
    w.kv("partition", s.partition);
    w.kv("from", s.first);
    w.kv("to", s.last);
    w.end_object();
  }
  w.end_array();
}

template <class W>
void write_pop_fields(W& w, const node::pop_reply& r) {
  auto& first = r.messages.front();
  w.kv("success", true);
  w.kv("queue", r.queue);
  w.kv("partition", first.partition);
  w.kv("partitionId", first.partition_id);
  w.kv("leaseId", first.lease_id);
  w.kv("leaseEpoch", first.lease_epoch);
  w.kv("consumerGroup", r.group);
  w.kv("partitionsClaimed", r.partitions_claimed);
  w.key("messages").begin_array();
  for (auto& m : r.messages) {
    w.begin_object();
    write_message_fields(w, m);
    w.kv("leaseId", m.lease_id);
    w.kv("leaseEpoch", m.lease_epoch);
    w.kv("consumerGroup", r.group);
    w.end_object();
  }
  w.end_array();
  write_skipped(w, r);
}

void write_pop_compact(mp::writer& w, const node::pop_reply& r) {
  w.kv("success", true);
  w.kv("queue", r.queue);
  w.kv("consumerGroup", r.group);
  w.kv("partitionsClaimed", r.partitions_claimed);
  w.key("partitions").begin_array();
  auto& ms = r.messages;
  for (std::size_t i = 0; i < ms.size();) {
    auto& first = ms[i];
    w.begin_object();
    w.kv("partition", first.partition);
    w.kv("partitionId", first.partition_id);
    w.kv("leaseId", first.lease_id);
    w.kv("leaseEpoch", first.lease_epoch);
    w.key("messages").begin_array();
    for (; i < ms.size() && ms[i].partition_id == first.partition_id
           && ms[i].lease_id == first.lease_id;
         ++i) {
      w.begin_object();
      write_message_compact(w, ms[i]);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  write_skipped(w, r);
}

std::vector<std::string> ack_txids(const node::ack_request& req) {
  std::vector<std::string> txids;
  for (auto& it : req.items)
    txids.push_back(it.transaction_id.value_or(""));
  return txids;
}

template <class W>
void write_ack_items(W& w, const node::ack_reply& r,
                     const std::vector<std::string>& txids) {
  w.begin_array();
  for (std::size_t i = 0; i < r.items.size(); ++i) {
    auto& it = r.items[i];
    w.begin_object();
    w.kv("index", i);
    w.kv("transactionId", i < txids.size() ? txids[i] : std::string{});
    w.kv("success", it.success);
    error_or_null(w, it.error);
    w.kv("queueName", it.queue);
    w.kv("partitionName", it.partition);
    w.kv("leaseReleased", it.lease_released);
    w.kv("dlq", it.dead_lettered);
    w.end_object();
  }
  w.end_array();
}

template <class W>
void write_extend_items(W& w, const std::string& id,
                        const node::extend_reply& r) {
  w.begin_array().begin_object();
  w.kv("index", 0);
  w.kv("leaseId", id);
  w.kv("success", r.success);
  error_or_null(w, r.error);
  if (r.success)
    w.kv("expiresAt", timefmt::format_millis(r.expires_at));
  else
    w.kv_null("expiresAt");
  w.key("partitions").begin_array();
  for (auto& p : r.partitions)
    w.str(p);
  w.end_array();
  w.end_object().end_array();
}

std::vector<op_echo> txn_echo(const node::txn_request& req) {
  std::vector<op_echo> ops;
  for (auto& op : req.operations) {
    if (auto* a = std::get_if<node::txn_ack>(&op))
      ops.push_back({false, a->ack.transaction_id.value_or("")});
    else
      ops.push_back({true, ""});
  }
  return ops;
}

template <class W>
void write_txn_fields(W& w, const node::txn_reply& r,
                      const std::vector<op_echo>& ops) {
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
        w.kv("status", status_name(it.status));
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
}

template <class W>
void write_seek_fields(W& w, const node::seek_request& req,
                       const node::seek_reply& r) {
  auto& t = req.target;
  w.kv("success", true);
  w.kv("consumerGroup", req.group);
  w.kv("queueName", req.queue);
  if (req.partition) {
    w.kv("partitionName", *req.partition);
    w.kv("updated", !req.dry_run);
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
  w.kv("dryRun", req.dry_run);
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

template <class W>
void write_subscription_fields(W& w, const node::subscription_request& req,
                               const node::subscription_reply& r) {
  w.kv("success", true);
  w.kv("consumerGroup", req.group);
  w.kv("newTimestamp", timefmt::format_micros(req.timestamp));
  w.kv("rowsUpdated", r.rows_updated);
}

template <class W>
void write_configure_fields(W& w, const node::configure_reply& r,
                            const std::vector<std::string>& unknown) {
  w.kv("configured", true);
  w.kv("created", r.created);
  w.kv("queueId", std::to_string(r.queue.id));
  w.kv("partitionId", r.default_partition_id);
  w.kv("queue", r.queue.name);
  w.kv("namespace", r.queue.name_space);
  w.kv("task", r.queue.task);
  w.key("options");
  write_options(w, r.queue.options);
  if (!unknown.empty()) {
    w.key("warnings").begin_array();
    for (auto& u : unknown)
      w.str("unknown option ignored: " + u);
    w.end_array();
  }
}

template <class W>
void write_queue_summary_fields(W& w, const node::queue_info& q) {
  std::int64_t total = 0;
  for (auto& p : q.partitions)
    total += retained(p);
  write_queue_names(w, q);
  w.kv("partitions", q.partitions.size());
  // Spool has no per-message state: pending and processing are per
  // consumer group (/consumer-groups, /status/queues).
  w.key("messages").begin_object();
  w.kv("total", total);
  w.kv_null("pending");
  w.kv_null("processing");
  w.end_object();
}

template <class W>
void write_queue_detail_fields(W& w, const node::queue_info& q) {
  std::int64_t total = 0;
  write_queue_names(w, q);
  w.key("partitions").begin_array();
  for (auto& p : q.partitions) {
    w.begin_object();
    w.kv("id", p.id);
    w.kv("name", p.name);
    w.kv("createdAt", timefmt::format_micros(p.created_at));
    w.kv("lastOffset", p.last_offset);
    w.kv("watermark", p.watermark);
    w.kv("messages", retained(p));
    w.end_object();
    total += retained(p);
  }
  w.end_array();
  w.key("totals").begin_object();
  w.kv("partitions", q.partitions.size());
  w.kv("messages", total);
  w.end_object();
  w.key("options");
  write_options(w, q.options);
}

template <class W>
void write_delete_queue_fields(W& w, const std::string& name, bool existed) {
  w.kv("deleted", true);
  w.kv("queue", name);
  w.kv("existed", existed);
}

template <class W>
void write_purge_fields(W& w, const std::string& name, std::size_t purged) {
  w.kv("success", true);
  w.kv("queue", name);
  w.kv("partitionsPurged", purged);
}

template <class W>
void write_browse_fields(W& w, const node::browse_reply& r) {
  w.key("messages").begin_array();
  for (auto& m : r.messages) {
    w.begin_object();
    write_message_fields(w, m);
    w.end_object();
  }
  w.end_array();
  w.kv("next", r.next);
  if (r.skipped) {
    w.key("skipped").begin_object();
    w.kv("from", r.skipped->first);
    w.kv("to", r.skipped->last);
    w.end_object();
  }
}

template <class W>
void write_cursor_fields(W& w, const node::cursor_view& v, micros now) {
  w.kv("partition", v.partition);
  w.kv("partitionId", v.partition_id);
  if (v.lease)
    w.kv("workerId", v.lease->id);
  else
    w.kv_null("workerId");
  time_or_null(w, "lastConsumedAt", v.last_activity);
  w.kv("totalConsumed", v.committed + 1);
  w.kv("committed", v.committed);
  w.kv("lastOffset", v.last_offset);
  w.kv("offsetLag", v.lag);
  w.kv("timeLagSeconds", time_lag_s(v, now));
  w.kv("leaseActive", v.lease.has_value());
  if (v.lease) {
    w.key("lease").begin_object();
    w.kv("id", v.lease->id);
    w.kv("epoch", v.lease->epoch);
    w.kv("expiresAt", timefmt::format_millis(v.lease->expires_at));
    w.kv("first", v.lease->first);
    w.kv("last", v.lease->last);
    w.end_object();
  } else {
    w.kv_null("lease");
  }
  w.kv("redeliveries", v.redeliveries);
  if (v.last_activity > 0)
    w.kv("idleSeconds",
         std::max<std::int64_t>(0, (now - v.last_activity) / 1'000'000));
  else
    w.kv_null("idleSeconds");
}

std::int64_t time_lag_s(const node::cursor_view& v, micros now) {
  if (v.lag <= 0 || v.oldest_unconsumed_at <= 0)
    return 0;
  return std::max<std::int64_t>(0, (now - v.oldest_unconsumed_at) / 1'000'000);
}

template <class W>
void write_delete_group_fields(W& w, const node::delete_group_request& req,
                               const node::delete_group_reply& r) {
  w.kv("success", true);
  w.kv("consumerGroup", req.group);
  if (req.queue)
    w.kv("queueName", *req.queue);
  w.kv("deletedPartitions", r.deleted_partitions);
  w.kv("metadataDeleted", r.metadata_deleted);
}

template <class W>
void write_promote_fields(W& w, const node::promote_reply& r) {
  w.key("slots").begin_array();
  for (auto& s : r.slots) {
    w.begin_object();
    w.kv("slot", std::uint64_t{s.slot});
    if (s.failure) { // as a msgpack error frame's `error`
      w.key("error").begin_object();
      w.kv("code", to_string(s.failure->code));
      w.kv("message", s.failure->message);
      w.end_object();
    } else {
      w.kv("leader", s.leader);
      w.kv("epoch", s.epoch);
    }
    w.end_object();
  }
  w.end_array();
}

template <class W>
void write_dlq_page_fields(W& w, const node::dlq_page& p, const dlq_query& q) {
  w.key("messages").begin_array();
  for (auto& m : p.messages) {
    w.begin_object();
    w.kv("dlqId", m.dlq_id);
    write_message_fields(w, m.frame, false);
    w.kv("consumerGroup", m.group);
    w.kv("errorMessage", m.error);
    w.kv("retryCount", static_cast<std::uint64_t>(m.retry_count));
    w.kv("failedAt", timefmt::format_micros(m.failed_at));
    w.end_object();
  }
  w.end_array();
  w.kv("total", p.total);
  w.key("pagination").begin_object();
  w.kv("limit", q.limit);
  w.kv("offset", q.offset);
  if (q.after)
    w.kv("after", *q.after);
  if (!p.messages.empty())
    w.kv("next", p.messages.back().dlq_id);
  w.end_object();
}

template <class W>
void write_dlq_count_fields(W& w, const char* what, const node::dlq_count& n) {
  w.kv("success", true);
  w.kv(what, n.count);
  w.kv("remaining", n.remaining);
}

#define SPOOL_SHAPES(W)                                                        \
  template void time_or_null(W&, std::string_view, micros);                    \
  template void write_push_items(W&, const node::push_reply&);                 \
  template void write_pop_fields(W&, const node::pop_reply&);                  \
  template void write_ack_items(W&, const node::ack_reply&,                    \
                                const std::vector<std::string>&);              \
  template void write_extend_items(W&, const std::string&,                     \
                                   const node::extend_reply&);                 \
  template void write_txn_fields(W&, const node::txn_reply&,                   \
                                 const std::vector<op_echo>&);                 \
  template void write_seek_fields(W&, const node::seek_request&,               \
                                  const node::seek_reply&);                    \
  template void write_subscription_fields(                                     \
      W&, const node::subscription_request&, const node::subscription_reply&); \
  template void write_configure_fields(W&, const node::configure_reply&,       \
                                       const std::vector<std::string>&);       \
  template void write_queue_summary_fields(W&, const node::queue_info&);       \
  template void write_queue_detail_fields(W&, const node::queue_info&);        \
  template void write_delete_queue_fields(W&, const std::string&, bool);       \
  template void write_purge_fields(W&, const std::string&, std::size_t);       \
  template void write_browse_fields(W&, const node::browse_reply&);            \
  template void write_cursor_fields(W&, const node::cursor_view&, micros);     \
  template void write_delete_group_fields(                                     \
      W&, const node::delete_group_request&, const node::delete_group_reply&); \
  template void write_promote_fields(W&, const node::promote_reply&);          \
  template void write_dlq_page_fields(W&, const node::dlq_page&,               \
                                      const dlq_query&);                       \
  template void write_dlq_count_fields(W&, const char*, const node::dlq_count&);
SPOOL_SHAPES(json::writer)
SPOOL_SHAPES(mp::writer)
#undef SPOOL_SHAPES

} // namespace spool::api
