#include "protocol/api/encode.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>

#include "vocab/message_id.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

std::string message_id(const std::string& partition_id, std::int64_t offset) {
  return message_uuid(partition_id, offset);
}

namespace {

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  auto n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                           reinterpret_cast<const unsigned char*>(bytes.data()),
                           static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

template <class W>
void str_or_null(W& w, std::string_view k, const std::string& v) {
  if (v.empty())
    w.kv_null(k);
  else
    w.kv(k, v);
}

} // namespace

void write_payload(json::writer& w, std::string_view key,
                   const node::message& m, std::string_view encoding_key,
                   std::string_view error_key) {
  w.key(key);
  if (m.binary) {
    w.str(base64(m.payload));
    w.kv(encoding_key, "base64");
  } else if (m.payload.empty()) {
    w.null();
  } else {
    w.raw(m.payload);
  }
  if (!m.unreadable.empty())
    w.kv(error_key, m.unreadable);
}

void write_payload(mp::writer& w, std::string_view key, const node::message& m,
                   std::string_view encoding_key, std::string_view error_key) {
  w.key(key).bin(m.binary || !m.payload.empty() ? std::string_view{m.payload}
                                                : std::string_view{"null"});
  w.kv(encoding_key, m.binary ? "binary" : "json");
  if (!m.unreadable.empty())
    w.kv(error_key, m.unreadable);
}

/// What a run of messages (one pop's answer) shares, kept per thread: the
/// id's hash of the partition and the createdAt second's text.
struct run_memo {
  std::string partition_id;
  std::uint64_t id_high = message_uuid_high("");
  timefmt::micros_formatter created_at;
};

thread_local run_memo memo;

template <class W>
void write_message_fields(W& w, const node::message& m, bool requeue_id) {
  if (m.partition_id != memo.partition_id) {
    memo.partition_id = m.partition_id;
    memo.id_high = message_uuid_high(m.partition_id);
  }
  char id[36];
  format_message_uuid(id, memo.id_high, m.offset);
  w.kv("id", std::string_view{id, sizeof id});
  w.kv("offset", m.offset);
  w.kv("transactionId", m.transaction_id);
  str_or_null(w, "traceId", m.trace_id);
  w.key("headers").begin_object();
  for (auto& [k, v] : m.headers)
    w.kv(k, v);
  w.end_object();
  write_payload(w, "data", m, "dataEncoding");
  str_or_null(w, "producerSub", m.producer_sub);
  w.kv("createdAt", memo.created_at(m.created_at));
  w.kv("queue", m.queue);
  w.kv("partitionId", m.partition_id);
  w.kv("partition", m.partition);
  w.kv("deliveryCount", static_cast<std::uint64_t>(m.delivery_count));
  if (m.requeued) {
    w.kv("requeued", true);
    if (requeue_id)
      w.kv("dlqId", *m.requeued);
  }
}

void write_message_compact(mp::writer& w, const node::message& m) {
  w.kv("offset", m.offset);
  w.kv("transactionId", m.transaction_id);
  write_payload(w, "data", m, "dataEncoding");
  w.kv("createdAt", m.created_at);
  w.kv("deliveryCount", static_cast<std::uint64_t>(m.delivery_count));
  if (!m.trace_id.empty())
    w.kv("traceId", m.trace_id);
  if (!m.producer_sub.empty())
    w.kv("producerSub", m.producer_sub);
  if (!m.headers.empty()) {
    w.key("headers").begin_object();
    for (auto& [k, v] : m.headers)
      w.kv(k, v);
    w.end_object();
  }
  if (m.requeued) {
    w.kv("requeued", true);
    w.kv("dlqId", *m.requeued);
  }
}

template <class W>
void write_queue_names(W& w, const node::queue_info& q) {
  w.kv("id", std::to_string(q.id));
  w.kv("name", q.name);
  w.kv("namespace", q.name_space);
  w.kv("task", q.task);
  w.kv("createdAt", timefmt::format_micros(q.created_at));
}

std::size_t pop_answer_hint(const node::pop_reply& r, bool json,
                            std::size_t fields) {
  std::size_t n = 256 + r.queue.size() + r.group.size();
  for (auto& m : r.messages) {
    n += fields + m.queue.size() + m.partition.size() + m.partition_id.size()
         + m.transaction_id.size() + m.trace_id.size() + m.producer_sub.size()
         + m.lease_id.size() + r.group.size();
    n += json && m.binary ? 4 * ((m.payload.size() + 2) / 3) : m.payload.size();
    for (auto& h : m.headers)
      n += h.first.size() + h.second.size() + 8;
  }
  for (auto& s : r.skipped)
    n += s.partition.size() + 64;
  return n;
}

std::int64_t retained(const node::partition_info& p) {
  return std::max<std::int64_t>(0, p.last_offset + 1 - p.watermark);
}

template <class W>
void write_options(W& w, const queue_options& o) {
  w.begin_object();
  w.kv("leaseTime", o.lease_time_s);
  w.kv("retryLimit", o.retry_limit);
  w.kv("retryDelay", o.retry_delay_ms);
  w.key("retryBackoffMs").begin_array();
  for (auto ms : o.retry_backoff_ms)
    w.i64(ms);
  w.end_array();
  w.kv("maxDeliveries", o.max_deliveries);
  w.kv("maxSize", o.max_size);
  w.kv("delayedProcessing", o.delayed_processing_s);
  w.kv("windowBuffer", o.window_buffer_s);
  if (o.window_buffer_max_s)
    w.kv("windowBufferMax", *o.window_buffer_max_s);
  else
    w.kv_null("windowBufferMax");
  w.kv("retentionEnabled", o.retention_enabled);
  w.kv("retentionSeconds", o.retention_s);
  w.kv("completedRetentionSeconds", o.completed_retention_s);
  w.kv("maxWaitTimeSeconds", o.max_wait_time_s);
  w.kv("deadLetterQueue", o.dead_letter_queue.value_or(false));
  w.kv("dlqAfterMaxRetries", o.dlq_after_max_retries.value_or(false));
  w.kv("dlqRetentionSeconds", o.dlq_retention_s);
  w.kv("dedupWindowSeconds", o.dedup_window_s);
  w.kv("groupIdleSeconds", o.group_idle_s);
  w.kv("priority", o.priority);
  w.kv("ttl", o.ttl_s);
  w.kv("encryptionEnabled", o.encryption_enabled);
  w.end_object();
}

#define SPOOL_SHAPES(W)                                                        \
  template void write_message_fields(W&, const node::message&, bool);          \
  template void write_queue_names(W&, const node::queue_info&);                \
  template void write_options(W&, const queue_options&);
SPOOL_SHAPES(json::writer)
SPOOL_SHAPES(mp::writer)
#undef SPOOL_SHAPES

} // namespace spool::api
