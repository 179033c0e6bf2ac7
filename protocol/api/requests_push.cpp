// Reading push and transaction bodies (api/requests.hpp).

#include "protocol/api/requests.hpp"
#include "protocol/api/requests_detail.hpp"

namespace spool::api {

api_error required(const std::string& field) {
  return make_error(errc::invalid_argument, field, " is required");
}

expected<std::optional<std::string>> opt_string(od::value& v,
                                                const std::string& field) {
  if (json::is_null(v))
    return std::optional<std::string>{};
  auto s = json::as_string(v, field);
  if (!s)
    return s.err();
  return std::optional<std::string>{std::string{*s}};
}

expected<node::push_item> read_item_object(od::object& obj,
                                           const std::string& where) {
  node::push_item item;
  item.payload = "null"; // absent: JSON null, as Queen stores it
  bool has_queue = false;
  SPOOL_TRY(json::for_each_field(
      obj, where, [&](std::string_view key, od::value& f) -> expected<void> {
        auto name = [&] { return where + "." + std::string{key}; };
        if (key == "queue") {
          auto s = json::as_string(f, name());
          if (!s)
            return s.err();
          item.queue = *s;
          has_queue = true;
        } else if (key == "partition") {
          auto s = json::as_string(f, name());
          if (!s)
            return s.err();
          item.partition = *s;
        } else if (key == "payload") {
          auto raw = json::as_raw(f, name());
          if (!raw)
            return raw.err();
          item.payload = *raw;
        } else if (key == "transactionId") {
          auto s = json::as_string(f, name());
          if (!s)
            return s.err();
          item.transaction_id = std::string{*s};
        } else if (key == "traceId") {
          if (json::is_null(f))
            return {};
          auto s = json::as_string(f, name());
          if (!s)
            return s.err();
          item.trace_id = *s;
        } else if (key == "headers") {
          if (json::is_null(f))
            return {};
          auto h = json::as_object(f, name());
          if (!h)
            return h.err();
          return json::for_each_field(
              *h, name(),
              [&](std::string_view hk, od::value& hv) -> expected<void> {
                auto s = json::as_string(hv, name() + "." + std::string{hk});
                if (!s)
                  return s.err();
                item.headers.emplace_back(std::string{hk}, std::string{*s});
                return {};
              });
        }
        // namespace, task, producerSub and unknown fields are ignored (Queen
        // ignores a client-supplied producerSub)
        return {};
      }));
  if (!has_queue)
    return required(where + ".queue");
  return item;
}

namespace {

/// One push item at `where` (`items[3]`, `operations[1].items[0]`).
expected<node::push_item> read_item(od::value& v, const std::string& where) {
  auto obj = json::as_object(v, where);
  if (!obj)
    return obj.err();
  return read_item_object(*obj, where);
}

expected<std::vector<node::push_item>> read_items(od::value& v,
                                                  const std::string& where) {
  auto arr = json::as_array(v, where);
  if (!arr)
    return arr.err();
  std::vector<node::push_item> items;
  SPOOL_TRY(json::for_each_element(
      *arr, where, [&](std::size_t i, od::value& e) -> expected<void> {
        auto item = read_item(e, where + "[" + std::to_string(i) + "]");
        if (!item)
          return item.err();
        items.push_back(std::move(*item));
        return {};
      }));
  return items;
}

} // namespace

expected<std::vector<node::push_item>> read_push_body(std::string& body) {
  od::document doc;
  auto obj = json::open_object(body, doc);
  if (!obj)
    return obj.err();
  std::optional<std::vector<node::push_item>> items;
  SPOOL_TRY(json::for_each_field(
      *obj, "body", [&](std::string_view key, od::value& v) -> expected<void> {
        if (key != "items")
          return {};
        auto r = read_items(v, "items");
        if (!r)
          return r.err();
        items = std::move(*r);
        return {};
      }));
  if (!items)
    return make_error(errc::invalid_argument, "items array is required");
  return std::move(*items);
}

namespace {

/// One operation of a transaction: `{type:"push", items:[…]}`, the inline
/// `{type:"push", queue, …}`, or `{type:"ack", …}`.
expected<void> read_op(od::value& e, const std::string& where,
                       node::txn_request& req) {
  auto op = json::as_object(e, where);
  if (!op)
    return op.err();
  // The type decides how the rest reads: find it, then read from the top.
  od::value tv;
  if (op->find_field_unordered("type").get(tv))
    return required(where + ".type");
  auto t = json::as_string(tv, where + ".type");
  if (!t)
    return t.err();
  std::string type{*t};
  if (auto err = op->reset().error())
    return json::read_error(err, where);
  if (type == "ack") {
    auto ack = read_ack_object(*op, where, true);
    if (!ack)
      return ack.err();
    req.operations.emplace_back(node::txn_ack{std::move(*ack)});
    return {};
  }
  if (type != "push")
    return make_error(errc::invalid_argument, where,
                      ".type must be push or ack");
  std::optional<std::vector<node::push_item>> items;
  bool inline_item = false;
  SPOOL_TRY(json::for_each_field(
      *op, where, [&](std::string_view k, od::value& f) -> expected<void> {
        if (k == "items") {
          auto r = read_items(f, where + ".items");
          if (!r)
            return r.err();
          items = std::move(*r);
        } else if (k == "queue") {
          inline_item = true;
        }
        return {};
      }));
  if (!items && inline_item) {
    if (auto err = op->reset().error())
      return json::read_error(err, where);
    auto item = read_item_object(*op, where);
    if (!item)
      return item.err();
    items.emplace().push_back(std::move(*item));
  }
  if (!items)
    return required(where + ".items");
  req.operations.emplace_back(node::txn_push{std::move(*items)});
  return {};
}

/// `requiredLeases`: lease ids (null: absent).
expected<void> read_required_leases(od::value& v,
                                    std::vector<std::string>& out) {
  if (json::is_null(v))
    return {};
  auto arr = json::as_array(v, "requiredLeases");
  if (!arr)
    return arr.err();
  SPOOL_TRY(json::for_each_element(
      *arr, "requiredLeases",
      [&](std::size_t i, od::value& e) -> expected<void> {
        auto s
            = json::as_string(e, "requiredLeases[" + std::to_string(i) + "]");
        if (!s)
          return s.err();
        out.emplace_back(*s);
        return {};
      }));
  return {};
}

} // namespace

expected<node::txn_request> read_txn_body(std::string& body) {
  od::document doc;
  auto obj = json::open_object(body, doc);
  if (!obj)
    return obj.err();
  node::txn_request req;
  bool has_ops = false;
  SPOOL_TRY(json::for_each_field(
      *obj, "body", [&](std::string_view key, od::value& v) -> expected<void> {
        if (key == "transactionId") {
          if (json::is_null(v))
            return {};
          auto s = json::as_string(v, "transactionId");
          if (!s)
            return s.err();
          req.transaction_id = std::string{*s};
          return {};
        }
        if (key == "requiredLeases") // Queen's JS client names leases here
          return read_required_leases(v, req.required_leases);
        if (key != "operations")
          return {};
        auto arr = json::as_array(v, "operations");
        if (!arr)
          return make_error(errc::invalid_argument,
                            "operations array required");
        has_ops = true;
        return json::for_each_element(
            *arr, "operations",
            [&](std::size_t i, od::value& e) -> expected<void> {
              return read_op(e, "operations[" + std::to_string(i) + "]", req);
            });
      }));
  if (!has_ops)
    return make_error(errc::invalid_argument, "operations array required");
  if (req.operations.empty())
    return make_error(errc::invalid_argument,
                      "operations array cannot be empty");
  return req;
}

} // namespace spool::api
