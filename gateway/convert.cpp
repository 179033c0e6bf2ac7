#include "gateway/convert.hpp"

#include <algorithm>

#include "cipher/envelope.hpp"
#include "core/limits/names.hpp"
#include "core/queue/subscription.hpp"
#include "vocab/message_id.hpp"

namespace spool::gateway_detail {

namespace {

/// A generated transactionId is left empty here: the partition stores the
/// message's id as it (vocab/message_id.hpp), known once it has an offset.
storage::frame to_frame(node::push_item& item) {
  storage::frame f;
  if (item.transaction_id) {
    f.transaction_id = std::move(*item.transaction_id);
    f.origin = storage::txid_origin::client;
  } else {
    f.origin = storage::txid_origin::generated;
  }
  f.trace_id = std::move(item.trace_id);
  f.headers = std::move(item.headers);
  f.producer_sub = std::move(item.producer_sub);
  f.encoding = item.binary ? storage::payload_encoding::binary
                           : storage::payload_encoding::json;
  f.payload = std::move(item.payload);
  return f;
}

/// A pushed item's transactionId: the client's, or (none given) the id the
/// partition stored for it.
std::string generated_or(const std::string& given,
                         const std::string& partition_uuid,
                         storage::offset at) {
  return given.empty() ? message_uuid(partition_uuid, at.value) : given;
}

node::push_result from_target(const actors::push_target& t,
                              const storage::frame_result& r,
                              const std::pair<std::string, std::string>& id) {
  node::push_result out;
  out.queue = t.queue;
  out.partition = t.partition;
  out.partition_id = t.partition_uuid;
  out.transaction_id = generated_or(id.first, t.partition_uuid, r.off);
  out.trace_id = id.second;
  out.status = r.status == storage::frame_result::duplicate
                   ? node::push_status::duplicate
                   : node::push_status::queued;
  out.offset = r.off.value;
  return out;
}

std::string group_or_queue_mode(const std::optional<std::string>& g) {
  return g ? *g : std::string{core::queue_mode_group};
}

} // namespace

std::vector<actors::broker_push_item>
to_broker(std::vector<node::push_item>& items, item_ids& ids) {
  std::vector<actors::broker_push_item> out;
  out.reserve(items.size());
  ids.reserve(items.size());
  for (auto& item : items) {
    auto f = to_frame(item);
    ids.emplace_back(f.transaction_id, f.trace_id);
    out.push_back(
        {std::move(item.queue), {std::move(item.partition), std::move(f)}});
  }
  return out;
}

expected<node::push_reply> from_broker(actors::queue_push_reply& r,
                                       const item_ids& ids) {
  if (r.failure)
    return *r.failure;
  node::push_reply out;
  out.created_at = r.created_at;
  out.items.reserve(r.results.size());
  for (std::size_t i = 0; i < r.results.size(); ++i)
    out.items.push_back(
        from_target(r.target_of(i), r.results[i].result, ids.at(i)));
  return out;
}

actors::queue_pop_request to_broker(node::pop_request& req) {
  actors::queue_pop_request out;
  out.partition = std::move(req.partition);
  out.group = group_or_queue_mode(req.group);
  out.batch = req.batch;
  out.partitions = req.partitions;
  out.max_bytes = req.max_bytes.value_or(SIZE_MAX);
  out.auto_ack = req.auto_ack;
  out.wait = req.wait;
  out.timeout = req.timeout;
  out.lease_id = std::move(req.token);
  out.subscription.mode = std::move(req.subscription_mode);
  out.subscription.from = std::move(req.subscription_from);
  return out;
}

expected<node::message>
from_stored(storage::stored_frame& f, const cipher::keyring* keys,
            const std::string& queue, const std::string& partition,
            const std::string& partition_id, unreadable_is how) {
  node::message m;
  m.encrypted = storage::is_encrypted(f.data.encoding);
  if (m.encrypted) {
    auto clear = keys != nullptr
                     ? cipher::decrypt(*keys, f.data.payload)
                     : expected<std::string>{
                         cipher::key_present(nullptr, f.data.payload).err()};
    if (clear) {
      f.data.payload = std::move(*clear);
    } else if (how == unreadable_is::an_error) {
      return make_error(keys != nullptr ? clear.err().code : errc::internal,
                        "message at offset ", f.off.value, " of queue ", queue,
                        " partition ", partition, ": ", clear.err().message);
    } else {
      m.unreadable = std::move(clear.err().message);
      f.data.payload.clear();
      f.data.encoding = storage::payload_encoding::json;
    }
  }
  m.queue = queue;
  m.partition = partition;
  m.partition_id = partition_id;
  m.offset = f.off.value;
  m.transaction_id = std::move(f.data.transaction_id);
  m.trace_id = std::move(f.data.trace_id);
  m.headers = std::move(f.data.headers);
  m.producer_sub = std::move(f.data.producer_sub);
  m.payload = std::move(f.data.payload);
  m.binary = storage::is_binary(f.data.encoding);
  m.created_at = f.created_at;
  return m;
}

expected<node::pop_reply> from_broker(const std::string& queue,
                                      const std::string& group,
                                      actors::queue_pop_reply& r,
                                      const clocks& now,
                                      const cipher::keyring* keys) {
  node::pop_reply out;
  out.queue = queue;
  out.group = group;
  out.reason = r.reason;
  out.partitions_claimed = r.claimed.size();
  std::size_t n = 0;
  for (auto& d : r.claimed)
    n += d.reply.messages.size();
  out.messages.reserve(n);
  for (auto& d : r.claimed) {
    auto& lease = d.reply.lease;
    for (auto& dm : d.reply.messages) {
      auto decoded
          = from_stored(dm.frame, keys, queue, d.partition, d.partition_uuid);
      if (!decoded)
        return decoded.err();
      auto& m = *decoded;
      m.delivery_count = dm.delivery_count;
      m.requeued = dm.requeued;
      if (lease) {
        m.lease_id = lease->id;
        m.lease_epoch = lease->epoch;
        m.lease_expires_at = now.wall_of(lease->expires);
      }
      out.messages.push_back(std::move(m));
    }
    if (d.reply.skipped)
      out.skipped.push_back({d.partition, d.reply.skipped->first.value,
                             d.reply.skipped->last.value});
  }
  return out;
}

expected<std::vector<actors::located_ack>> to_broker(node::ack_request& req) {
  std::vector<actors::located_ack> out;
  out.reserve(req.items.size());
  for (std::size_t i = 0; i < req.items.size(); ++i) {
    auto& item = req.items[i];
    if (!item.transaction_id && !item.offset && !item.up_to)
      return make_error(errc::invalid_argument, "acknowledgments[", i,
                        "].transactionId is required");
    if (item.partition_id.empty())
      return make_error(errc::invalid_argument, "acknowledgments[", i,
                        "].partitionId is required");
    actors::located_ack a;
    a.partition_uuid = std::move(item.partition_id);
    a.group = group_or_queue_mode(req.group ? req.group : item.group);
    a.ack.lease_id = std::move(item.lease_id);
    a.ack.lease_epoch = item.lease_epoch;
    a.ack.off = offset{item.offset.value_or(0)};
    a.ack.transaction_id = std::move(item.transaction_id);
    if (item.up_to)
      a.ack.up_to = offset{*item.up_to};
    a.ack.status = item.status;
    a.ack.error = std::move(item.error);
    a.ack.delay = item.delay;
    out.push_back(std::move(a));
  }
  return out;
}

expected<node::ack_reply>
from_broker(std::vector<actors::located_ack_reply>& rs) {
  node::ack_reply out;
  out.items.reserve(rs.size());
  // A request-level failure of any item (a malformed list, a failed write,
  // an unreachable queue) fails the whole answer: an item error is one of
  // api.md's three texts. Acks are idempotent, so the client retries the
  // list (items that were applied answer success again).
  for (auto& r : rs)
    if (r.reply.failure)
      return *r.reply.failure;
  for (auto& r : rs) {
    node::ack_result a;
    a.queue = std::move(r.queue);
    a.partition = std::move(r.partition);
    a.error = to_string(r.reply.error);
    a.success = r.reply.error == ack_error::none;
    a.lease_released = r.reply.lease_released;
    a.dead_lettered = r.reply.dead_lettered;
    out.items.push_back(std::move(a));
  }
  return out;
}

expected<node::extend_reply> from_broker(actors::lease_extend_reply& r,
                                         const clocks& now) {
  if (r.failure)
    return *r.failure;
  node::extend_reply out;
  if (r.error != extend_error::none) {
    out.error = to_string(r.error);
    return out;
  }
  // Success only when every partition of the lease was extended; the
  // partitions that were are listed either way.
  std::optional<api_error> failure;
  bool all = !r.partitions.empty();
  for (auto& p : r.partitions) {
    if (p.reply.error == extend_error::out_of_range) // a bad request
      return make_error(errc::invalid_argument, to_string(p.reply.error));
    if (p.reply.failure) {
      failure = failure.value_or(*p.reply.failure);
      all = false;
      continue;
    }
    if (p.reply.error != extend_error::none || !p.reply.expires) {
      if (out.error.empty())
        out.error = to_string(p.reply.error);
      all = false;
      continue;
    }
    auto at = now.wall_of(*p.reply.expires);
    out.expires_at = out.partitions.empty() ? at : std::min(out.expires_at, at);
    out.partitions.push_back(p.partition);
  }
  if (out.partitions.empty() && failure)
    return *failure;
  out.success = all;
  if (all)
    out.error.clear();
  else if (out.error.empty())
    out.error = failure ? failure->message : to_string(extend_error::not_found);
  return out;
}

node::queue_info from_record(const storage::queue_record& rec) {
  node::queue_info q;
  q.name = rec.name;
  q.id = rec.id.value;
  q.name_space = rec.name_space;
  q.task = rec.task;
  q.options = rec.options;
  q.created_at = rec.created_at;
  return q;
}

node::cursor_view from_broker(actors::cursor_info& c) {
  node::cursor_view v;
  v.queue = std::move(c.queue);
  v.partition = std::move(c.partition);
  v.partition_id = std::move(c.partition_uuid);
  v.group = std::move(c.group);
  v.committed = c.committed.value;
  v.last_offset = c.last_offset.value;
  v.lag = c.lag;
  v.oldest_unconsumed_at = c.oldest_unconsumed_at;
  if (c.lease)
    v.lease = node::lease_view{c.lease->id, c.lease->epoch, c.lease_expires_at,
                               c.lease->range.first.value,
                               c.lease->range.last.value};
  v.redeliveries = c.redeliveries;
  v.done_above = c.done_above;
  v.in_flight = c.in_flight;
  v.last_activity = c.last_activity;
  return v;
}

expected<node::dlq_message> from_broker(core::dlq_item& item,
                                        const cipher::keyring* keys) {
  node::dlq_message m;
  m.dlq_id = item.entry.id;
  m.queue = item.queue;
  m.partition = item.partition;
  m.group = std::move(item.group);
  m.error = std::move(item.entry.error);
  m.retry_count = item.entry.deliveries;
  m.failed_at = item.entry.failed_at;
  auto frame = from_stored(item.entry.message, keys, item.queue, item.partition,
                           item.partition_uuid, unreadable_is::listed);
  if (!frame)
    return frame.err();
  m.frame = std::move(*frame);
  return m;
}

expected<core::txn_request> to_broker(node::txn_request& req,
                                      std::vector<item_ids>& ids) {
  core::txn_request out;
  out.id = std::move(req.transaction_id);
  auto& leases = req.required_leases; // repeats count once
  std::sort(leases.begin(), leases.end());
  leases.erase(std::unique(leases.begin(), leases.end()), leases.end());
  if (req.required_leases.size() > core::max_required_leases)
    return make_error(errc::invalid_argument, "requiredLeases: at most ",
                      core::max_required_leases, " leases");
  for (std::size_t i = 0; i < req.required_leases.size(); ++i)
    if (auto n = req.required_leases[i].size();
        n == 0 || n > core::max_name_bytes)
      return make_error(errc::invalid_argument, "requiredLeases[", i,
                        "] must be 1..", core::max_name_bytes, " bytes");
  out.required_leases = std::move(req.required_leases);
  ids.resize(req.operations.size());
  for (std::size_t i = 0; i < req.operations.size(); ++i) {
    if (auto* push = std::get_if<node::txn_push>(&req.operations[i])) {
      core::txn_push_op op;
      for (auto& item : push->items) {
        auto f = to_frame(item);
        ids[i].emplace_back(f.transaction_id, f.trace_id);
        op.items.push_back(
            {std::move(item.queue), std::move(item.partition), std::move(f)});
      }
      out.ops.emplace_back(std::move(op));
      continue;
    }
    node::ack_request one;
    one.items.push_back(std::get<node::txn_ack>(req.operations[i]).ack);
    auto located = to_broker(one);
    if (!located)
      return make_error(located.err().code, "operations[", i, "].",
                        located.err().message);
    auto& a = located->front();
    core::txn_ack_op op;
    op.group = std::move(a.group);
    op.ack = std::move(a.ack);
    op.partition_uuid = std::move(a.partition_uuid);
    out.ops.emplace_back(std::move(op));
  }
  return out;
}

node::txn_reply from_broker(core::txn_result& r,
                            const std::vector<item_ids>& ids) {
  node::txn_reply out;
  out.transaction_id = std::move(r.transaction_id);
  out.success = r.success;
  out.failed_op = r.failed_op;
  out.error = std::move(r.error);
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    auto& op = r.results[i];
    node::txn_op_result o;
    o.lease_released = op.lease_released;
    o.dead_lettered = op.dead_lettered;
    for (std::size_t j = 0; j < op.items.size(); ++j) {
      auto& item = op.items[j];
      node::push_result p;
      p.queue = item.queue;
      p.partition = item.partition;
      p.partition_id = item.partition_uuid;
      if (i < ids.size() && j < ids[i].size()) {
        p.transaction_id
            = generated_or(ids[i][j].first, item.partition_uuid, item.off);
        p.trace_id = ids[i][j].second;
      }
      p.status = item.status == core::txn_push_status::duplicate
                     ? node::push_status::duplicate
                     : node::push_status::queued;
      p.offset = item.off.value;
      o.items.push_back(std::move(p));
    }
    out.results.push_back(std::move(o));
  }
  return out;
}

} // namespace spool::gateway_detail
