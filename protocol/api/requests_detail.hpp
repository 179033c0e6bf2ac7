#pragma once

// The readers the request files share (internal to protocol/api/). Each
// body reader is a template over a format, the typed field access of one
// encoding: `json_format` (simdjson, the HTTP door) or `mp::format`
// (msgpack, protocol/msgpack/read.hpp); the rules and error texts are
// written once and instantiated for both in the file that defines them.

#include <optional>
#include <string>

#include "protocol/api/requests.hpp"
#include "protocol/json/read.hpp"
#include "protocol/msgpack/read.hpp"

namespace spool::api {

namespace od = simdjson::ondemand;

/// The typed field access of a JSON body (protocol/json/read.hpp).
struct json_format {
  using value = od::value;
  using object_t = od::object;
  using array_t = od::array;

  static expected<std::string_view> as_string(value& v, std::string_view f) {
    return json::as_string(v, f);
  }
  static expected<std::int64_t> as_int(value& v, std::string_view f) {
    return json::as_int(v, f);
  }
  static expected<std::uint64_t> as_uint(value& v, std::string_view f) {
    return json::as_uint(v, f);
  }
  static expected<bool> as_bool(value& v, std::string_view f) {
    return json::as_bool(v, f);
  }
  static expected<od::object> as_object(value& v, std::string_view f) {
    return json::as_object(v, f);
  }
  static expected<od::array> as_array(value& v, std::string_view f) {
    return json::as_array(v, f);
  }
  static bool is_null(value& v) {
    return json::is_null(v);
  }
  /// A payload is its JSON text as it arrived.
  static expected<void> payload(value& v, const std::string& field,
                                node::push_item& item) {
    auto raw = json::as_raw(v, field);
    if (!raw)
      return raw.err();
    item.payload = *raw;
    item.binary = false;
    return {};
  }
  /// A string field by key (absent: none); `reset` before reading `o` again.
  static expected<std::optional<std::string_view>>
  find_string(od::object& o, std::string_view key, const std::string& field) {
    od::value v;
    if (o.find_field_unordered(key).get(v))
      return std::optional<std::string_view>{};
    auto s = json::as_string(v, field);
    if (!s)
      return s.err();
    return std::optional<std::string_view>{*s};
  }
  static expected<void> reset(od::object& o) {
    if (auto err = o.reset().error())
      return json::read_error(err, "body");
    return {};
  }
  template <class F>
  static expected<void> fields(od::object& o, std::string_view where, F f) {
    return json::for_each_field(o, where, f);
  }
  template <class F>
  static expected<void> elements(od::array& a, std::string_view where, F f) {
    return json::for_each_element(a, where, f);
  }
};

/// A JSON body's top object read by `fields` (a body reader's
/// instantiation for json_format), or the body's error.
template <class Fields>
auto read_json_body(std::string& body, Fields fields)
    -> decltype(fields(std::declval<od::object&>())) {
  od::document doc;
  auto obj = json::open_object(body, doc);
  if (!obj)
    return obj.err();
  return fields(*obj);
}

/// `<field> is required`.
api_error required(const std::string& field);

/// An optional string field: null is absent.
template <class F>
expected<std::optional<std::string>> opt_string(typename F::value& v,
                                                const std::string& field);

/// A msgpack request map read by `fields` (its mp::format instantiation).
template <class Fields>
auto read_mp_request(const mp::object& req, Fields fields) {
  mp::map_ref m{&req};
  return fields(m);
}

/// A push item's fields (`items[3]`, an inline transaction push).
template <class F>
expected<node::push_item> read_item_object(typename F::object_t& obj,
                                           const std::string& where);

/// An ack's fields; `in_txn`: `retry` is refused (semantics.md §10).
template <class F>
expected<node::ack_item> read_ack_object(typename F::object_t& obj,
                                         const std::string& where, bool in_txn);

/// A timestamp field: RFC 3339, else `Invalid timestamp: <value>`.
template <class F>
expected<micros> read_timestamp(typename F::value& v, const std::string& field);

} // namespace spool::api
