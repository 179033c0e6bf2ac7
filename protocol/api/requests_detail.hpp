#pragma once

// The readers the request files share (internal to protocol/api/).

#include <optional>
#include <string>

#include "protocol/api/requests.hpp"
#include "protocol/json/read.hpp"

namespace spool::api {

namespace od = simdjson::ondemand;

/// `<field> is required`.
api_error required(const std::string& field);

/// An optional string field: null is absent.
expected<std::optional<std::string>> opt_string(od::value& v,
                                                const std::string& field);

/// A push item's fields (`items[3]`, an inline transaction push).
expected<node::push_item> read_item_object(od::object& obj,
                                           const std::string& where);

/// An ack's fields; `in_txn`: `retry` is refused (semantics.md §10).
expected<node::ack_item> read_ack_object(od::object& obj,
                                         const std::string& where, bool in_txn);

/// A timestamp field: RFC 3339, else `Invalid timestamp: <value>`.
expected<micros> read_timestamp(od::value& v, const std::string& field);

} // namespace spool::api
