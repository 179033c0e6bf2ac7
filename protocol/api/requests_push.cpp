// Reading push and transaction bodies (api/requests.hpp), for both formats
// (api/requests_detail.hpp).

#include "protocol/api/requests.hpp"
#include "protocol/api/requests_detail.hpp"

namespace spool::api {

api_error required(const std::string& field) {
  return make_error(errc::invalid_argument, field, " is required");
}

template <class F>
expected<std::optional<std::string>> opt_string(typename F::value& v,
                                                const std::string& field) {
  if (F::is_null(v))
    return std::optional<std::string>{};
  auto s = F::as_string(v, field);
  if (!s)
    return s.err();
  return std::optional<std::string>{std::string{*s}};
}

template <class F>
expected<node::push_item> read_item_object(typename F::object_t& obj,
                                           const std::string& where) {
  node::push_item item;
  item.payload = "null"; // absent: JSON null, as Queen stores it
  bool has_queue = false;
  SPOOL_TRY(F::fields(
      obj, where, [&](std::string_view key, auto& f) -> expected<void> {
        auto name = [&] { return where + "." + std::string{key}; };
        // The field's path is built only for an error ("<path> must be a
        // string"): a push reads thousands of items.
        auto text = [&]() -> expected<std::string_view> {
          auto s = F::as_string(f, {});
          if (!s)
            return make_error(s.err().code, name(), s.err().message);
          return s;
        };
        if (key == "queue") {
          auto s = text();
          if (!s)
            return s.err();
          item.queue = *s;
          has_queue = true;
        } else if (key == "partition") {
          auto s = text();
          if (!s)
            return s.err();
          item.partition = *s;
        } else if (key == "payload") {
          return F::payload(f, name(), item);
        } else if (key == "transactionId") {
          auto s = text();
          if (!s)
            return s.err();
          item.transaction_id = std::string{*s};
        } else if (key == "traceId") {
          if (F::is_null(f))
            return {};
          auto s = text();
          if (!s)
            return s.err();
          item.trace_id = *s;
        } else if (key == "headers") {
          if (F::is_null(f))
            return {};
          auto h = F::as_object(f, name());
          if (!h)
            return h.err();
          return F::fields(
              *h, name(), [&](std::string_view hk, auto& hv) -> expected<void> {
                auto s = F::as_string(hv, name() + "." + std::string{hk});
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
template <class F>
expected<node::push_item> read_item(typename F::value& v,
                                    const std::string& where) {
  auto obj = F::as_object(v, where);
  if (!obj)
    return obj.err();
  return read_item_object<F>(*obj, where);
}

template <class F>
expected<std::vector<node::push_item>> read_items(typename F::value& v,
                                                  const std::string& where) {
  auto arr = F::as_array(v, where);
  if (!arr)
    return arr.err();
  std::vector<node::push_item> items;
  SPOOL_TRY(
      F::elements(*arr, where, [&](std::size_t i, auto& e) -> expected<void> {
        auto item = read_item<F>(e, where + "[" + std::to_string(i) + "]");
        if (!item)
          return item.err();
        items.push_back(std::move(*item));
        return {};
      }));
  return items;
}

template <class F>
expected<std::vector<node::push_item>> push_fields(typename F::object_t& obj) {
  std::optional<std::vector<node::push_item>> items;
  SPOOL_TRY(F::fields(obj, "body",
                      [&](std::string_view key, auto& v) -> expected<void> {
                        if (key != "items")
                          return {};
                        auto r = read_items<F>(v, "items");
                        if (!r)
                          return r.err();
                        items = std::move(*r);
                        return {};
                      }));
  if (!items)
    return make_error(errc::invalid_argument, "items array is required");
  return std::move(*items);
}

/// One operation of a transaction: `{type:"push", items:[…]}`, the inline
/// `{type:"push", queue, …}`, or `{type:"ack", …}`.
template <class F>
expected<void> read_op(typename F::value& e, const std::string& where,
                       node::txn_request& req) {
  auto op = F::as_object(e, where);
  if (!op)
    return op.err();
  // The type decides how the rest reads: find it, then read from the top.
  auto t = F::find_string(*op, "type", where + ".type");
  if (!t)
    return t.err();
  if (!*t)
    return required(where + ".type");
  std::string type{**t};
  SPOOL_TRY(F::reset(*op));
  if (type == "ack") {
    auto ack = read_ack_object<F>(*op, where, true);
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
  SPOOL_TRY(
      F::fields(*op, where, [&](std::string_view k, auto& f) -> expected<void> {
        if (k == "items") {
          auto r = read_items<F>(f, where + ".items");
          if (!r)
            return r.err();
          items = std::move(*r);
        } else if (k == "queue") {
          inline_item = true;
        }
        return {};
      }));
  if (!items && inline_item) {
    SPOOL_TRY(F::reset(*op));
    auto item = read_item_object<F>(*op, where);
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
template <class F>
expected<void> read_required_leases(typename F::value& v,
                                    std::vector<std::string>& out) {
  if (F::is_null(v))
    return {};
  auto arr = F::as_array(v, "requiredLeases");
  if (!arr)
    return arr.err();
  return F::elements(
      *arr, "requiredLeases", [&](std::size_t i, auto& e) -> expected<void> {
        auto s = F::as_string(e, "requiredLeases[" + std::to_string(i) + "]");
        if (!s)
          return s.err();
        out.emplace_back(*s);
        return {};
      });
}

template <class F>
expected<node::txn_request> txn_fields(typename F::object_t& obj) {
  node::txn_request req;
  bool has_ops = false;
  SPOOL_TRY(F::fields(
      obj, "body", [&](std::string_view key, auto& v) -> expected<void> {
        if (key == "transactionId") {
          if (F::is_null(v))
            return {};
          auto s = F::as_string(v, "transactionId");
          if (!s)
            return s.err();
          req.transaction_id = std::string{*s};
          return {};
        }
        if (key == "requiredLeases") // Queen's JS client names leases here
          return read_required_leases<F>(v, req.required_leases);
        if (key != "operations")
          return {};
        auto arr = F::as_array(v, "operations");
        if (!arr)
          return make_error(errc::invalid_argument,
                            "operations array required");
        has_ops = true;
        return F::elements(
            *arr, "operations", [&](std::size_t i, auto& e) -> expected<void> {
              return read_op<F>(e, "operations[" + std::to_string(i) + "]",
                                req);
            });
      }));
  if (!has_ops)
    return make_error(errc::invalid_argument, "operations array required");
  if (req.operations.empty())
    return make_error(errc::invalid_argument,
                      "operations array cannot be empty");
  return req;
}

} // namespace

template expected<std::optional<std::string>>
opt_string<json_format>(od::value&, const std::string&);
template expected<std::optional<std::string>>
opt_string<mp::format>(const mp::object&, const std::string&);
template expected<node::push_item>
read_item_object<json_format>(od::object&, const std::string&);
template expected<node::push_item>
read_item_object<mp::format>(mp::map_ref&, const std::string&);

expected<std::vector<node::push_item>> read_push_body(std::string& body) {
  return read_json_body(body, push_fields<json_format>);
}

expected<std::vector<node::push_item>> read_push_body(const mp::object& req) {
  return read_mp_request(req, push_fields<mp::format>);
}

expected<node::txn_request> read_txn_body(std::string& body) {
  return read_json_body(body, txn_fields<json_format>);
}

expected<node::txn_request> read_txn_body(const mp::object& req) {
  return read_mp_request(req, txn_fields<mp::format>);
}

} // namespace spool::api
