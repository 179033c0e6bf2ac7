#pragma once

/// A committed transaction's answer (semantics.md §10), from what ran: the
/// effects of its staged acks and where its sealed pushes' items went, put
/// where the request's operations named them. Pure: no CAF include.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "core/broker/txn_core.hpp"

namespace spool::core {

/// `acked(k, j)`: the effects of ack j of `plan.acks[k]` as staged;
/// `pushed(k, j)`: where item j of `plan.pushes[k]` went. None: not
/// answered, its result is left empty.
txn_result txn_answer(
    std::string id, const txn_request& req, const txn_plan& plan,
    const std::function<std::optional<txn_op_result>(std::size_t, std::size_t)>&
        acked,
    const std::function<std::optional<txn_item_result>(std::size_t,
                                                       std::size_t)>& pushed);

} // namespace spool::core
