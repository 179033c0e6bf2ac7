// Encoding requests (client/codec.hpp).

#include <algorithm>

#include <nlohmann/json.hpp>

#include "client/codec.hpp"
#include "wire/rfc3339.hpp"

namespace spool::client {

namespace {

const char* status_name(ack_status s) {
  switch (s) {
  case ack_status::completed:
    return "completed";
  case ack_status::failed:
    return "failed";
  case ack_status::dlq:
    return "dlq";
  case ack_status::retry:
    return "retry";
  }
  return "completed";
}

template <class T>
void opt(mp::writer& w, std::string_view k, const std::optional<T>& v) {
  if (v)
    w.kv(k, *v);
}

void write_ack_fields(mp::writer& w, const node::ack_item& a) {
  opt(w, "transactionId", a.transaction_id);
  opt(w, "offset", a.offset);
  opt(w, "upTo", a.up_to);
  w.kv("partitionId", a.partition_id);
  w.kv("status", status_name(a.status));
  opt(w, "consumerGroup", a.group);
  opt(w, "leaseId", a.lease_id);
  opt(w, "leaseEpoch", a.lease_epoch);
  if (!a.error.empty())
    w.kv("error", a.error);
  if (a.delay)
    w.kv("delayMs", a.delay->count());
}

void write_one_item(mp::writer& w, const node::push_item& it,
                    const std::string& payload) {
  w.begin_object();
  w.kv("queue", it.queue);
  w.kv("partition", it.partition);
  w.key("payload").raw(payload);
  opt(w, "transactionId", it.transaction_id);
  if (!it.trace_id.empty())
    w.kv("traceId", it.trace_id);
  if (!it.headers.empty()) {
    w.key("headers").begin_object();
    for (auto& [k, v] : it.headers)
      w.kv(k, v);
    w.end_object();
  }
  w.end_object();
}

} // namespace

std::string format_time(micros t) {
  return timefmt::format_micros(t);
}

expected<encoded_items> encode_items(std::vector<node::push_item> items) {
  encoded_items e;
  e.payloads.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& it = items[i];
    if (it.binary) {
      mp::writer w;
      w.bin(it.payload);
      e.payloads.push_back(w.take_frame().substr(4));
      continue;
    }
    // (ordered: the keys keep the order they were written in)
    auto j = nlohmann::ordered_json::parse(it.payload, nullptr, false);
    if (j.is_discarded())
      return make_error(errc::invalid_argument, "items[", i,
                        "].payload is not JSON text");
    auto bytes = nlohmann::ordered_json::to_msgpack(j);
    e.payloads.emplace_back(bytes.begin(), bytes.end());
  }
  e.items = std::move(items);
  return e;
}

void write_items(mp::writer& w, const encoded_items& e) {
  w.key("items").begin_array();
  for (std::size_t i = 0; i < e.items.size(); ++i)
    write_one_item(w, e.items[i], e.payloads[i]);
  w.end_array();
}

void write_pop(mp::writer& w, const node::pop_request& r, bool compact) {
  if (!r.queue.empty())
    w.kv("queue", r.queue);
  opt(w, "partition", r.partition);
  opt(w, "namespace", r.name_space);
  opt(w, "task", r.task);
  opt(w, "consumerGroup", r.group);
  w.kv("batch", r.batch);
  w.kv("partitions", r.partitions);
  opt(w, "maxBytes", r.max_bytes);
  w.kv("autoAck", r.auto_ack);
  w.kv("wait", r.wait);
  w.kv("timeout", r.timeout.count());
  if (!r.subscription_mode.empty())
    w.kv("subscriptionMode", r.subscription_mode);
  if (!r.subscription_from.empty())
    w.kv("subscriptionFrom", r.subscription_from);
  if (compact) // read_pop reads either shape
    w.kv("compact", true);
}

namespace {

node::ack_request ack_request_of(const node::pop_reply& popped) {
  node::ack_request req;
  if (!popped.group.empty() && popped.group != queue_mode_group)
    req.group = popped.group;
  return req;
}

} // namespace

node::ack_request ack_of(const node::pop_reply& popped) {
  auto req = ack_request_of(popped);
  for (auto& m : popped.messages) {
    if (m.lease_id.empty())
      continue; // autoAck: nothing to settle
    auto same = [&](const node::ack_item& a) {
      return a.partition_id == m.partition_id && a.lease_id == m.lease_id;
    };
    // Messages come grouped by partition: the last item first.
    auto it = !req.items.empty() && same(req.items.back())
                  ? req.items.end() - 1
                  : std::find_if(req.items.begin(), req.items.end(), same);
    if (it == req.items.end()) {
      auto& a = req.items.emplace_back();
      a.partition_id = m.partition_id;
      a.lease_id = m.lease_id;
      a.up_to = m.offset;
    } else {
      it->up_to = std::max(*it->up_to, m.offset);
    }
  }
  return req;
}

node::ack_request ack_each(const node::pop_reply& popped) {
  auto req = ack_request_of(popped);
  for (auto& m : popped.messages) {
    if (m.lease_id.empty())
      continue; // autoAck: nothing to settle
    auto& a = req.items.emplace_back();
    a.partition_id = m.partition_id;
    a.transaction_id = m.transaction_id;
    a.lease_id = m.lease_id;
  }
  return req;
}

void write_ack(mp::writer& w, const node::ack_request& r) {
  opt(w, "consumerGroup", r.group);
  w.key("acknowledgments").begin_array();
  for (auto& a : r.items) {
    w.begin_object();
    write_ack_fields(w, a);
    w.end_object();
  }
  w.end_array();
}

void write_extend(mp::writer& w, const node::extend_request& r) {
  w.kv("leaseId", r.lease_id);
  w.kv("seconds", (r.by.count() + 999) / 1000); // (whole seconds, up)
}

void write_seek(mp::writer& w, const node::seek_request& r) {
  w.kv("consumerGroup", r.group);
  w.kv("queue", r.queue);
  opt(w, "partition", r.partition);
  w.kv("dryRun", r.dry_run);
  auto& t = r.target;
  if (t.to_end)
    w.kv("toEnd", true);
  if (t.to_start)
    w.kv("toStart", true);
  if (t.timestamp)
    w.kv("timestamp", format_time(*t.timestamp));
  opt(w, "offset", t.offset);
  opt(w, "shiftBy", t.shift_by);
}

void write_subscription(mp::writer& w, const node::subscription_request& r) {
  w.kv("consumerGroup", r.group);
  w.kv("subscriptionTimestamp", format_time(r.timestamp));
}

void write_configure(mp::writer& w, const node::configure_request& r) {
  w.kv("queue", r.queue);
  opt(w, "namespace", r.name_space);
  opt(w, "task", r.task);
  w.key("options").begin_object();
  for (auto& o : int_option_names)
    opt(w, o.name, r.options.*o.field);
  for (auto& o : bool_option_names)
    opt(w, o.name, r.options.*o.field);
  if (r.options.retry_backoff_ms) {
    w.key("retryBackoffMs").begin_array();
    for (auto ms : *r.options.retry_backoff_ms)
      w.i64(ms);
    w.end_array();
  }
  w.end_object();
}

void write_purge(mp::writer& w, const node::purge_request& r) {
  w.kv("queue", r.queue);
  opt(w, "partition", r.partition);
  opt(w, "below", r.below);
}

void write_promote(mp::writer& w, const node::promote_request& r) {
  opt(w, "slot", r.slot);
  if (r.all)
    w.kv("all", true);
  opt(w, "to", r.to);
}

void write_groups(mp::writer& w, const node::groups_request& r) {
  opt(w, "consumerGroup", r.group);
  opt(w, "queue", r.queue);
  opt(w, "partition", r.partition);
}

void write_delete_group(mp::writer& w, const node::delete_group_request& r) {
  w.kv("consumerGroup", r.group);
  opt(w, "queue", r.queue);
  w.kv("deleteMetadata", r.delete_metadata);
}

void write_dlq_filter(mp::writer& w, const dlq_filter& f) {
  opt(w, "queue", f.queue);
  opt(w, "consumerGroup", f.group);
  opt(w, "partition", f.partition);
  if (f.from)
    w.kv("from", format_time(*f.from));
  if (f.to)
    w.kv("to", format_time(*f.to));
  if (!f.ids.empty()) {
    w.key("ids").begin_array();
    for (auto id : f.ids)
      w.u64(id);
    w.end_array();
  }
}

void write_dlq_query(mp::writer& w, const dlq_query& q) {
  write_dlq_filter(w, q.filter);
  w.kv("limit", q.limit);
  w.kv("offset", q.offset);
  opt(w, "after", q.after);
}

void write_browse(mp::writer& w, const node::browse_request& r) {
  w.kv("queue", r.queue);
  w.kv("partition", r.partition);
  w.kv("fromOffset", r.from);
  w.kv("limit", r.limit);
  opt(w, "maxBytes", r.max_bytes);
}

expected<void> write_transaction(mp::writer& w, const node::txn_request& r) {
  opt(w, "transactionId", r.transaction_id);
  if (!r.required_leases.empty()) {
    w.key("requiredLeases").begin_array();
    for (auto& l : r.required_leases)
      w.str(l);
    w.end_array();
  }
  w.key("operations").begin_array();
  for (auto& op : r.operations) {
    w.begin_object();
    if (auto* p = std::get_if<node::txn_push>(&op)) {
      auto e = encode_items(p->items);
      if (!e)
        return e.err();
      w.kv("type", "push");
      write_items(w, *e);
    } else {
      w.kv("type", "ack");
      write_ack_fields(w, std::get<node::txn_ack>(op).ack);
    }
    w.end_object();
  }
  w.end_array();
  return {};
}

} // namespace spool::client
