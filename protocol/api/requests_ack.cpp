// Reading ack bodies (api/requests.hpp), for both formats
// (api/requests_detail.hpp).

#include "protocol/api/requests_detail.hpp"

namespace spool::api {

namespace {

std::string field_name(const std::string& where, std::string_view key) {
  return where.empty() ? std::string{key} : where + "." + std::string{key};
}

template <class F>
expected<ack_status> read_status(typename F::value& v, const std::string& field,
                                 bool in_txn) {
  auto s = F::as_string(v, field);
  if (!s)
    return s.err();
  if (*s == "completed" || *s == "success")
    return ack_status::completed;
  if (*s == "failed")
    return ack_status::failed;
  if (*s == "dlq")
    return ack_status::dlq;
  if (*s == "retry") {
    if (in_txn)
      return make_error(errc::invalid_argument, field,
                        " retry is not allowed in a transaction");
    return ack_status::retry;
  }
  return make_error(errc::invalid_argument, field,
                    " must be completed, success, failed, dlq or retry");
}

} // namespace

template <class F>
expected<node::ack_item> read_ack_object(typename F::object_t& obj,
                                         const std::string& where,
                                         bool in_txn) {
  node::ack_item item;
  // A field's errors are told without its name, which is put in front
  // only when one happens (a batch of acks names no field otherwise).
  const std::string name;
  auto read_field = [&](std::string_view key, auto& v) -> expected<void> {
    if (key == "transactionId") {
      auto s = F::as_string(v, name);
      if (!s)
        return s.err();
      item.transaction_id = std::string{*s};
    } else if (key == "partitionId") {
      auto s = F::as_string(v, name);
      if (!s)
        return s.err();
      item.partition_id = *s;
    } else if (key == "offset") {
      auto n = F::as_int(v, name);
      if (!n)
        return n.err();
      item.offset = *n;
    } else if (key == "upTo") {
      auto n = F::as_int(v, name);
      if (!n)
        return n.err();
      item.up_to = *n;
    } else if (key == "status") {
      auto st = read_status<F>(v, name, in_txn);
      if (!st)
        return st.err();
      item.status = *st;
    } else if (key == "consumerGroup") {
      auto s = opt_string<F>(v, name);
      if (!s)
        return s.err();
      if (*s && !(*s)->empty()) // empty: queue mode
        item.group = std::move(*s);
    } else if (key == "leaseId") {
      auto s = opt_string<F>(v, name);
      if (!s)
        return s.err();
      if (*s && !(*s)->empty()) // Queen: checked only when non-empty
        item.lease_id = std::move(*s);
    } else if (key == "leaseEpoch") {
      if (F::is_null(v))
        return {};
      auto n = F::as_uint(v, name);
      if (!n)
        return n.err();
      item.lease_epoch = *n;
    } else if (key == "error") {
      auto s = opt_string<F>(v, name);
      if (!s)
        return s.err();
      item.error = s->value_or("");
    } else if (key == "delayMs") {
      if (F::is_null(v))
        return {};
      auto n = F::as_int(v, name);
      if (!n)
        return n.err();
      if (*n < 0 || *n > max_ack_delay.count())
        return make_error(errc::invalid_argument, name, " must be 0..",
                          max_ack_delay.count());
      item.delay = milliseconds{*n};
    }
    return {};
  };
  SPOOL_TRY(F::fields(obj, where.empty() ? "body" : where,
                      [&](std::string_view key, auto& v) -> expected<void> {
                        auto r = read_field(key, v);
                        if (r)
                          return r;
                        auto e = std::move(r).err();
                        e.message.insert(0, field_name(where, key));
                        return e;
                      }));
  if (item.up_to) {
    auto up_to = field_name(where, "upTo");
    if (item.transaction_id || item.offset)
      return make_error(errc::invalid_argument, up_to,
                        " names frames by itself: no transactionId or offset "
                        "with it");
    if (item.status != ack_status::completed)
      return make_error(errc::invalid_argument, up_to,
                        " completes frames: status must be completed");
    if (!item.lease_id)
      return make_error(errc::invalid_argument, field_name(where, "leaseId"),
                        " is required with upTo");
  }
  // Queen's order: the transactionId first.
  if (!item.transaction_id && !item.offset && !item.up_to)
    return required(field_name(where, "transactionId"));
  if (item.partition_id.empty())
    return make_error(errc::invalid_argument, field_name(where, "partitionId"),
                      " is required to ensure message uniqueness");
  return item;
}

expected<node::ack_request> read_ack_body(std::string& body) {
  od::document doc;
  auto obj = json::open_object(body, doc);
  if (!obj)
    return obj.err();
  auto item = read_ack_object<json_format>(*obj, "", false);
  if (!item)
    return item.err();
  node::ack_request req;
  req.items.push_back(std::move(*item));
  return req;
}

template expected<node::ack_item>
read_ack_object<json_format>(od::object&, const std::string&, bool);
template expected<node::ack_item>
read_ack_object<mp::format>(mp::map_ref&, const std::string&, bool);

namespace {

template <class F>
expected<node::ack_request> ack_batch_fields(typename F::object_t& obj) {
  node::ack_request req;
  bool has_list = false;
  SPOOL_TRY(F::fields(
      obj, "body", [&](std::string_view key, auto& v) -> expected<void> {
        if (key == "consumerGroup") {
          auto s = opt_string<F>(v, "consumerGroup");
          if (!s)
            return s.err();
          if (*s && !(*s)->empty())
            req.group = std::move(*s);
          return {};
        }
        if (key != "acknowledgments")
          return {};
        auto arr = F::as_array(v, "acknowledgments");
        if (!arr)
          return make_error(errc::invalid_argument,
                            "acknowledgments array is required");
        has_list = true;
        // One buffer for every item's name (a list may hold thousands).
        std::string where = "acknowledgments[";
        const auto stem = where.size();
        return F::elements(*arr, "acknowledgments",
                           [&](std::size_t i, auto& e) -> expected<void> {
                             where.resize(stem);
                             where += std::to_string(i);
                             where += ']';
                             auto o = F::as_object(e, where);
                             if (!o)
                               return o.err();
                             auto item = read_ack_object<F>(*o, where, false);
                             if (!item)
                               return item.err();
                             req.items.push_back(std::move(*item));
                             return {};
                           });
      }));
  if (!has_list)
    return make_error(errc::invalid_argument,
                      "acknowledgments array is required");
  return req;
}

} // namespace

expected<node::ack_request> read_ack_batch_body(std::string& body) {
  return read_json_body(body, ack_batch_fields<json_format>);
}

expected<node::ack_request> read_ack_batch_body(const mp::object& req) {
  return read_mp_request(req, ack_batch_fields<mp::format>);
}

} // namespace spool::api
