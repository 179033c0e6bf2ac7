#include "core/broker/txn_core.hpp"
#include "config/options.hpp"
#include "core/cursor/cursor_core.hpp"

#include "core/limits/names.hpp"
#include "core/push/push_items.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "storage/segment.hpp"
#include "storage/serial.hpp"

namespace spool::core {

namespace {

template <class... Ts>
std::string concat(const Ts&... xs) {
  std::ostringstream out;
  (out << ... << xs);
  return out.str();
}

} // namespace

txn_result txn_rollback(std::string id, std::size_t op, std::string_view why) {
  txn_result r;
  r.transaction_id = std::move(id);
  r.success = false;
  r.failed_op = op;
  r.error = concat("operations[", op, "]: ", why);
  return r;
}

std::optional<txn_result> check_txn(const txn_request& req,
                                    const storage::frame_limits& limits,
                                    const config::push_limits& push) {
  auto id = req.id.value_or("");
  if (req.id && (req.id->empty() || req.id->size() > max_name_bytes)) {
    txn_result r;
    r.transaction_id = id;
    r.error = "transactionId must be 1..255 bytes";
    return r;
  }
  if (req.id) {
    if (auto ok = check_text("transactionId", *req.id); !ok) {
      txn_result r;
      r.transaction_id = id;
      r.error = ok.err().message;
      return r;
    }
  }
  if (req.ops.empty()) {
    txn_result r;
    r.transaction_id = id;
    r.error = "operations must not be empty";
    return r;
  }
  for (std::size_t i = 0; i < req.ops.size(); ++i) {
    if (auto* push = std::get_if<txn_push_op>(&req.ops[i])) {
      if (push->items.empty())
        return txn_rollback(id, i, "items must not be empty");
      for (std::size_t j = 0; j < push->items.size(); ++j) {
        auto& item = push->items[j];
        if (auto ok = check_push_item(j, &item.queue, item.partition,
                                      item.frame, limits);
            !ok)
          return txn_rollback(id, i, ok.err().message);
      }
      continue;
    }
    auto& ack = std::get<txn_ack_op>(req.ops[i]);
    if (ack.ack.status == ack_status::retry)
      return txn_rollback(id, i, "retry is not allowed in a transaction");
    if (!ack.ack.lease_id && !ack.ack.lease_epoch
        && req.required_leases.empty())
      return txn_rollback(id, i, "an ack in a transaction must name its lease");
    if (auto ok = check_name(name_kind::group, ack.group); !ok)
      return txn_rollback(id, i, ok.err().message);
    if (auto ok = check_ack(ack.ack); !ok)
      return txn_rollback(id, i, ok.err().message);
    if (auto ok = check_name(name_kind::queue, ack.queue); !ok)
      return txn_rollback(id, i, ok.err().message);
  }
  std::vector<const storage::frame*> frames;
  for (auto& op : req.ops)
    if (auto* p = std::get_if<txn_push_op>(&op))
      for (auto& item : p->items)
        frames.push_back(&item.frame);
  if (auto ok = check_push_size(
          push, frames.size(),
          [&](std::size_t i) { return frames[i]->payload.size(); });
      !ok) {
    txn_result r;
    r.transaction_id = id;
    r.error = ok.err().message;
    return r;
  }
  return std::nullopt;
}

txn_plan plan_txn(const txn_request& req) {
  txn_plan plan;
  using key = std::tuple<std::string, std::string, std::string>;
  std::map<key, std::size_t> cursors;
  std::map<std::string, std::size_t> queues;
  std::vector<txn_ack_group> groups;
  std::shared_ptr<const std::vector<std::string>> named;
  if (!req.required_leases.empty()) {
    auto sorted = req.required_leases;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    named = std::make_shared<const std::vector<std::string>>(std::move(sorted));
  }
  for (std::size_t i = 0; i < req.ops.size(); ++i) {
    if (auto* push = std::get_if<txn_push_op>(&req.ops[i])) {
      for (std::size_t j = 0; j < push->items.size(); ++j) {
        auto& q = push->items[j].queue;
        auto [it, fresh] = queues.try_emplace(q, plan.pushes.size());
        if (fresh)
          plan.pushes.push_back(txn_push_part{q, {}});
        plan.pushes[it->second].from.emplace_back(i, j);
      }
      continue;
    }
    auto& ack = std::get<txn_ack_op>(req.ops[i]);
    auto [it, fresh] = cursors.try_emplace(
        key{ack.queue, ack.partition_uuid, ack.group}, groups.size());
    if (fresh)
      groups.push_back(
          txn_ack_group{ack.queue, ack.partition_uuid, ack.group, {}, {}});
    groups[it->second].ops.push_back(i);
    auto& r = groups[it->second].reqs.emplace_back(ack.ack);
    if (!r.lease_id && !r.lease_epoch)
      r.lease_in = named;
  }
  // The map is ordered by (queue, partition uuid, group): stage so.
  for (auto& [_, idx] : cursors)
    plan.acks.push_back(std::move(groups[idx]));
  return plan;
}

txn_result txn_success(std::string id, std::size_t op_count) {
  txn_result r;
  r.transaction_id = std::move(id);
  r.success = true;
  r.results.resize(op_count);
  return r;
}

std::optional<std::string> txn_home_queue(const txn_request& req) {
  for (auto& op : req.ops) {
    if (auto* push = std::get_if<txn_push_op>(&op)) {
      if (!push->items.empty())
        return push->items.front().queue;
    } else {
      return std::get<txn_ack_op>(op).queue;
    }
  }
  return std::nullopt;
}

std::string encode_txn_result(const txn_result& r) {
  return storage::to_bytes(r);
}

std::optional<txn_result> decode_txn_result(std::string_view bytes) {
  txn_result r;
  if (!storage::from_bytes(bytes, r))
    return std::nullopt;
  return r;
}

} // namespace spool::core
