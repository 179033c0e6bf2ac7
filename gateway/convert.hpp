#pragma once

// The node API's requests as the broker's messages, and the broker's
// answers as the node API's (internal to gateway/). Wall-clock times are
// computed from the monotonic ones with the clocks read at the answer.

#include <functional>
#include <string>
#include <vector>

#include "actors/messages.hpp"
#include "node/api.hpp"

namespace spool::gateway_detail {

/// The clocks at the moment an answer is converted.
struct clocks {
  mono_time mono;
  micros wall;
  micros wall_of(mono_time t) const {
    return spool::wall_of(t, mono, wall);
  }
};

/// The ids and trace ids of a push's items, in order.
using item_ids = std::vector<std::pair<std::string, std::string>>;

/// A push's items for the broker; `make_id` names items the client gave no
/// transactionId. Their ids and trace ids, in order, go to `ids`.
std::vector<actors::broker_push_item>
to_broker(std::vector<node::push_item>& items,
          const std::function<std::string()>& make_id, item_ids& ids);

expected<node::push_reply> from_broker(actors::queue_push_reply& r,
                                       const item_ids& ids);

actors::queue_pop_request to_broker(node::pop_request& req);

node::pop_reply from_broker(const std::string& queue, const std::string& group,
                            actors::queue_pop_reply& r, const clocks& now);

/// The ack items as the broker takes them, or the request's error.
expected<std::vector<actors::located_ack>> to_broker(node::ack_request& req);

expected<node::ack_reply>
from_broker(std::vector<actors::located_ack_reply>& rs);

expected<node::extend_reply> from_broker(actors::lease_extend_reply& r,
                                         const clocks& now);

node::message from_stored(storage::stored_frame& f, const std::string& queue,
                          const std::string& partition,
                          const std::string& partition_id);

node::queue_info from_record(const storage::queue_record& rec);

node::cursor_view from_broker(actors::cursor_info& c);

node::dlq_message from_broker(core::dlq_item& item);

/// A transaction for the broker; each push op's item ids go to `ids` (one
/// entry per op, empty for an ack).
expected<core::txn_request>
to_broker(node::txn_request& req, const std::function<std::string()>& make_id,
          std::vector<item_ids>& ids);

node::txn_reply from_broker(core::txn_result& r,
                            const std::vector<item_ids>& ids);

} // namespace spool::gateway_detail
