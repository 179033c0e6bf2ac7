#include "core/broker/txn_answer.hpp"

#include <utility>
#include <variant>

namespace spool::core {

txn_result txn_answer(
    std::string id, const txn_request& req, const txn_plan& plan,
    const std::function<std::optional<txn_op_result>(std::size_t, std::size_t)>&
        acked,
    const std::function<std::optional<txn_item_result>(std::size_t,
                                                       std::size_t)>& pushed) {
  auto r = txn_success(std::move(id), req.ops.size());
  for (std::size_t k = 0; k < plan.acks.size(); ++k)
    for (std::size_t j = 0; j < plan.acks[k].ops.size(); ++j)
      if (auto a = acked(k, j)) {
        auto& dst = r.results[plan.acks[k].ops[j]];
        dst.lease_released = a->lease_released;
        dst.dead_lettered = a->dead_lettered;
      }
  for (std::size_t i = 0; i < req.ops.size(); ++i)
    if (auto* push = std::get_if<txn_push_op>(&req.ops[i]))
      r.results[i].items.resize(push->items.size());
  for (std::size_t k = 0; k < plan.pushes.size(); ++k) {
    auto& from = plan.pushes[k].from;
    for (std::size_t j = 0; j < from.size(); ++j)
      if (auto item = pushed(k, j))
        r.results[from[j].first].items[from[j].second] = std::move(*item);
  }
  return r;
}

} // namespace spool::core
