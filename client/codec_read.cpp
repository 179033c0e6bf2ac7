// Decoding answers (client/codec.hpp). Absent or mistyped fields read as
// their type's empty value: the server's answers are the contract
// (docs/protocol.md), and a newer server may add fields.

#include "client/codec.hpp"
#include "client/connection.hpp"
#include "wire/find.hpp"
#include "wire/rfc3339.hpp"

namespace spool::client {

namespace {

/// A str or bin value's bytes ("" for any other type).
std::string_view text_of(const object& v) {
  if (v.type == msgpack::type::STR)
    return {v.via.str.ptr, v.via.str.size};
  if (v.type == msgpack::type::BIN)
    return {v.via.bin.ptr, v.via.bin.size};
  return {};
}

/// An integer value (0 for any other type).
std::int64_t int_of(const object& v) {
  if (v.type == msgpack::type::POSITIVE_INTEGER)
    return static_cast<std::int64_t>(v.via.u64);
  if (v.type == msgpack::type::NEGATIVE_INTEGER)
    return v.via.i64;
  return 0;
}

/// A map's fields by name.
class view {
public:
  explicit view(const object* o) : o_(o) {
  }
  const object* get(std::string_view k) const {
    return o_ ? mp::find(*o_, k) : nullptr;
  }
  bool has(std::string_view k) const {
    auto v = get(k);
    return v && v->type != msgpack::type::NIL;
  }
  std::string str(std::string_view k) const {
    auto v = get(k);
    return v ? std::string{text_of(*v)} : std::string{};
  }
  std::int64_t i64(std::string_view k, std::int64_t dflt = 0) const {
    auto v = get(k);
    if (v
        && (v->type == msgpack::type::POSITIVE_INTEGER
            || v->type == msgpack::type::NEGATIVE_INTEGER))
      return int_of(*v);
    return dflt;
  }
  std::uint64_t u64(std::string_view k) const {
    auto v = get(k);
    return v && v->type == msgpack::type::POSITIVE_INTEGER ? v->via.u64 : 0;
  }
  bool boolean(std::string_view k) const {
    auto v = get(k);
    return v && v->type == msgpack::type::BOOLEAN && v->via.boolean;
  }
  view map(std::string_view k) const {
    auto v = get(k);
    return view{v && v->type == msgpack::type::MAP ? v : nullptr};
  }
  /// The maps of an array field.
  std::vector<view> list(std::string_view k) const {
    std::vector<view> out;
    auto v = get(k);
    if (v && v->type == msgpack::type::ARRAY)
      for (std::uint32_t i = 0; i < v->via.array.size; ++i)
        out.emplace_back(&v->via.array.ptr[i]);
    return out;
  }
  std::vector<std::string> strings(std::string_view k) const {
    std::vector<std::string> out;
    auto v = get(k);
    if (v && v->type == msgpack::type::ARRAY)
      for (std::uint32_t i = 0; i < v->via.array.size; ++i)
        if (v->via.array.ptr[i].type == msgpack::type::STR)
          out.emplace_back(v->via.array.ptr[i].via.str.ptr,
                           v->via.array.ptr[i].via.str.size);
    return out;
  }
  const object* raw() const {
    return o_;
  }

private:
  const object* o_;
};

/// One pass over a message's fields (a pop answers a thousand of them: a
/// lookup per field would scan the map once per field).
node::message read_message(const view& m) {
  node::message out;
  auto* o = m.raw();
  if (!o || o->type != msgpack::type::MAP)
    return out;
  bool requeued = false;
  std::uint64_t dlq_id = 0;
  for (std::uint32_t i = 0; i < o->via.map.size; ++i) {
    auto& kv = o->via.map.ptr[i];
    auto k = text_of(kv.key);
    auto& v = kv.val;
    if (k == "data")
      out.payload = text_of(v);
    else if (k == "offset")
      out.offset = int_of(v);
    else if (k == "transactionId")
      out.transaction_id = text_of(v);
    else if (k == "partitionId")
      out.partition_id = text_of(v);
    else if (k == "createdAt") // µs in a compact pop, else RFC 3339
      out.created_at
          = v.type == msgpack::type::STR ? parse_time(text_of(v)) : int_of(v);
    else if (k == "leaseId")
      out.lease_id = text_of(v);
    else if (k == "leaseEpoch")
      out.lease_epoch = static_cast<std::uint64_t>(int_of(v));
    else if (k == "deliveryCount")
      out.delivery_count = static_cast<std::uint32_t>(int_of(v));
    else if (k == "dataEncoding")
      out.binary = text_of(v) == "binary";
    else if (k == "dataError") // a listed payload that cannot be decrypted
      out.unreadable = text_of(v);
    else if (k == "queue")
      out.queue = text_of(v);
    else if (k == "partition")
      out.partition = text_of(v);
    else if (k == "traceId")
      out.trace_id = text_of(v);
    else if (k == "producerSub")
      out.producer_sub = text_of(v);
    else if (k == "requeued")
      requeued = v.type == msgpack::type::BOOLEAN && v.via.boolean;
    else if (k == "dlqId")
      dlq_id = static_cast<std::uint64_t>(int_of(v));
    else if (k == "headers" && v.type == msgpack::type::MAP)
      for (std::uint32_t j = 0; j < v.via.map.size; ++j) {
        auto& h = v.via.map.ptr[j];
        if (h.key.type == msgpack::type::STR
            && h.val.type == msgpack::type::STR)
          out.headers.emplace_back(text_of(h.key), text_of(h.val));
      }
  }
  if (requeued)
    out.requeued = dlq_id;
  return out;
}

node::partition_info read_partition(const view& p) {
  node::partition_info out;
  out.name = p.str("name");
  out.id = p.str("id");
  out.last_offset = p.i64("lastOffset", -1);
  out.watermark = p.i64("watermark");
  out.created_at = parse_time(p.str("createdAt"));
  return out;
}

options_patch read_options(const view& o) {
  options_patch p;
  for (auto& n : int_option_names)
    if (o.has(n.name))
      p.*n.field = o.i64(n.name);
  for (auto& n : bool_option_names)
    if (o.has(n.name))
      p.*n.field = o.boolean(n.name);
  if (auto v = o.get("retryBackoffMs"); v && v->type == msgpack::type::ARRAY) {
    auto& list = p.retry_backoff_ms.emplace();
    for (std::uint32_t i = 0; i < v->via.array.size; ++i)
      list.push_back(
          v->via.array.ptr[i].type == msgpack::type::NEGATIVE_INTEGER
              ? v->via.array.ptr[i].via.i64
              : static_cast<std::int64_t>(v->via.array.ptr[i].via.u64));
  }
  return p;
}

queue_detail read_queue(const view& q) {
  queue_detail d;
  d.name = q.str("name");
  d.id = std::strtoull(q.str("id").c_str(), nullptr, 10);
  d.name_space = q.str("namespace");
  d.task = q.str("task");
  d.created_at = parse_time(q.str("createdAt"));
  for (auto& p : q.list("partitions"))
    d.partitions.push_back(read_partition(p));
  d.options = read_options(q.map("options"));
  return d;
}

} // namespace

micros parse_time(std::string_view text) {
  return timefmt::parse_rfc3339(text).value_or(0);
}

namespace {

/// The key names of a pushed item's result: Queen's push answer spells
/// them in snake case, a transaction's rows in camel case.
struct push_keys {
  std::string_view transaction_id, partition_id;
};

node::push_result read_push_result(const view& it, push_keys k) {
  node::push_result r;
  r.queue = it.str("queueName");
  r.partition = it.str("partition");
  r.partition_id = it.str(k.partition_id);
  r.transaction_id = it.str(k.transaction_id);
  r.trace_id = it.str("trace_id");
  r.status = it.str("status") == "duplicate" ? node::push_status::duplicate
                                             : node::push_status::queued;
  r.offset = it.i64("offset");
  return r;
}

} // namespace

std::vector<node::push_result> read_push(const object& root) {
  std::vector<node::push_result> out;
  for (auto& it : view{&root}.list("items"))
    out.push_back(read_push_result(it, {"transaction_id", "partition_id"}));
  return out;
}

namespace {

/// A compact pop's messages (docs/protocol.md): each partition's shared
/// fields once, under `partitions`.
void read_compact(const view& v, node::pop_reply& r) {
  for (auto& p : v.list("partitions")) {
    auto partition = p.str("partition");
    auto partition_id = p.str("partitionId");
    auto lease_id = p.str("leaseId");
    auto epoch = p.u64("leaseEpoch");
    auto* ms = p.get("messages");
    if (!ms || ms->type != msgpack::type::ARRAY)
      continue;
    r.messages.reserve(r.messages.size() + ms->via.array.size);
    for (std::uint32_t i = 0; i < ms->via.array.size; ++i) {
      auto& m
          = r.messages.emplace_back(read_message(view{&ms->via.array.ptr[i]}));
      m.queue = r.queue;
      m.partition = partition;
      m.partition_id = partition_id;
      m.lease_id = lease_id;
      m.lease_epoch = epoch;
    }
  }
}

} // namespace

node::pop_reply read_pop(const object& root) {
  view v{&root};
  node::pop_reply r;
  r.queue = v.str("queue");
  r.group = v.str("consumerGroup");
  r.partitions_claimed = v.u64("partitionsClaimed");
  for (auto& m : v.list("messages"))
    r.messages.push_back(read_message(m));
  read_compact(v, r);

  auto reason = v.str("empty");
  for (auto e :
       {empty_reason::empty, empty_reason::lease_held, empty_reason::delayed,
        empty_reason::window_buffer, empty_reason::no_partition})
    if (reason == to_string(e))
      r.reason = e;
  for (auto& s : v.list("skipped"))
    r.skipped.push_back({s.str("partition"), s.i64("from"), s.i64("to")});
  return r;
}

node::ack_reply read_ack(const object& root) {
  node::ack_reply r;
  for (auto& it : view{&root}.list("items"))
    r.items.push_back({it.boolean("success"), it.str("error"),
                       it.str("queueName"), it.str("partitionName"),
                       it.boolean("leaseReleased"), it.boolean("dlq")});
  return r;
}

node::extend_reply read_extend(const object& root) {
  node::extend_reply r;
  auto items = view{&root}.list("items");
  if (items.empty())
    return r;
  auto& it = items.front();
  r.success = it.boolean("success");
  r.error = it.str("error");
  r.expires_at = parse_time(it.str("expiresAt"));
  r.partitions = it.strings("partitions");
  return r;
}

node::seek_reply read_seek(const object& root) {
  view v{&root};
  node::seek_reply r;
  r.partitions_updated = v.u64("partitionsUpdated");
  for (auto& p : v.list("positions")) {
    node::seek_position pos;
    pos.partition = p.str("partition");
    if (p.has("before"))
      pos.before = p.i64("before");
    pos.after = p.i64("committed", -1);
    r.positions.push_back(std::move(pos));
  }
  if (v.has("updated")) // a one-partition seek says `updated` instead
    r.partitions_updated = v.boolean("updated") ? r.positions.size() : 0;
  return r;
}

std::size_t read_subscription(const object& root) {
  return view{&root}.u64("rowsUpdated");
}

queue_detail read_configure(const object& root) {
  view v{&root};
  queue_detail d;
  d.name = v.str("queue");
  d.id = std::strtoull(v.str("queueId").c_str(), nullptr, 10);
  d.name_space = v.str("namespace");
  d.task = v.str("task");
  d.options = read_options(v.map("options"));
  d.created = v.boolean("created");
  d.warnings = v.strings("warnings");
  return d;
}

std::vector<queue_detail> read_queues(const object& root) {
  std::vector<queue_detail> out;
  for (auto& q : view{&root}.list("queues"))
    out.push_back(read_queue(q));
  return out;
}

bool read_delete_queue(const object& root) {
  return view{&root}.boolean("existed");
}

std::size_t read_purge(const object& root) {
  return view{&root}.u64("partitionsPurged");
}

node::promote_reply read_promote(const object& root) {
  node::promote_reply out;
  for (auto& s : view{&root}.list("slots")) {
    node::promoted_slot p;
    p.slot = static_cast<std::uint32_t>(s.u64("slot"));
    p.leader = s.str("leader");
    p.epoch = s.u64("epoch");
    if (s.has("error"))
      p.failure = error_of(*s.raw());
    out.slots.push_back(std::move(p));
  }
  return out;
}

std::vector<node::cursor_view> read_groups(const object& root) {
  std::vector<node::cursor_view> out;
  auto now = system_wall_now();
  for (auto& g : view{&root}.list("groups")) {
    node::cursor_view c;
    c.group = g.str("consumerGroup");
    c.queue = g.str("queue");
    c.partition = g.str("partition");
    c.partition_id = g.str("partitionId");
    c.committed = g.i64("committed", -1);
    c.last_offset = g.i64("lastOffset", -1);
    c.lag = g.i64("offsetLag");
    if (auto lag_s = g.i64("timeLagSeconds"); lag_s > 0)
      c.oldest_unconsumed_at = now - lag_s * 1'000'000;
    if (auto l = g.map("lease"); l.raw())
      c.lease = node::lease_view{l.str("id"), l.u64("epoch"),
                                 parse_time(l.str("expiresAt")), l.i64("first"),
                                 l.i64("last")};
    c.redeliveries = g.u64("redeliveries");
    c.done_above = g.u64("doneAbove");
    c.in_flight = g.u64("inFlight");
    c.last_activity = parse_time(g.str("lastConsumedAt"));
    out.push_back(std::move(c));
  }
  return out;
}

node::delete_group_reply read_delete_group(const object& root) {
  view v{&root};
  return {v.u64("deletedPartitions"), v.boolean("metadataDeleted")};
}

node::dlq_page read_dlq(const object& root) {
  view v{&root};
  node::dlq_page p;
  p.total = v.u64("total");
  for (auto& m : v.list("messages")) {
    node::dlq_message d;
    d.dlq_id = m.u64("dlqId");
    d.frame = read_message(m);
    d.queue = d.frame.queue;
    d.partition = d.frame.partition;
    d.group = m.str("consumerGroup");
    d.error = m.str("errorMessage");
    d.retry_count = static_cast<std::uint32_t>(m.u64("retryCount"));
    d.failed_at = parse_time(m.str("failedAt"));
    p.messages.push_back(std::move(d));
  }
  return p;
}

node::dlq_count read_dlq_count(const object& root) {
  view v{&root};
  return {v.has("requeued") ? v.u64("requeued") : v.u64("deleted"),
          v.u64("remaining")};
}

node::browse_reply read_browse(const object& root) {
  view v{&root};
  node::browse_reply r;
  for (auto& m : v.list("messages"))
    r.messages.push_back(read_message(m));
  r.next = v.i64("next");
  if (auto s = v.map("skipped"); s.raw())
    r.skipped = node::skipped_range{"", s.i64("from"), s.i64("to")};
  return r;
}

node::txn_reply read_transaction(const object& root) {
  view v{&root};
  node::txn_reply r;
  r.transaction_id = v.str("transactionId");
  r.success = v.boolean("success");
  r.error = v.str("error");
  for (auto& res : v.list("results")) {
    // Rows name their operation (a push of n items has n rows, of none
    // none): each goes to its operation's place.
    auto index
        = static_cast<std::size_t>(std::max<std::int64_t>(0, res.i64("index")));
    if (index >= 1'000'000)
      continue;
    if (r.results.size() <= index)
      r.results.resize(index + 1);
    auto& op = r.results[index];
    if (res.str("type") == "push") {
      op.items.push_back(
          read_push_result(res, {"transactionId", "partitionId"}));
    } else {
      op.lease_released = res.boolean("leaseReleased");
      op.dead_lettered = res.boolean("dlq");
    }
  }
  return r;
}

health_info read_health(const object& root) {
  view v{&root};
  return {v.str("status"), v.str("state")};
}

} // namespace spool::client
