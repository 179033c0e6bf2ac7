#pragma once

/// Reading request bodies with simdjson: the whole body is validated first
/// (so that "Invalid JSON" is decided once, with simdjson's reason), then
/// read On Demand field by field. Payloads are taken as their raw JSON text.
/// Type errors name the field as api.md words them
/// (`items[3].queue must be a string`).

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "vocab/expected.hpp"

namespace spool::json {

namespace od = simdjson::ondemand;

/// Opens `body` (its capacity padded, http::request::body): empty → 400
/// `Empty request body`, unparsable → 400 `Invalid JSON: <reason>`. The
/// document reads with this thread's parser: one open body per thread.
expected<od::document> open_body(std::string& body);

/// The body's top-level object, or `Request body must be a JSON object`.
expected<od::object> root_object(od::document& doc);

/// `open_body` then `root_object`, the document kept in the caller's `doc`
/// (the object reads from it: `doc` must stay where it is).
expected<od::object> open_object(std::string& body, od::document& doc);

/// A field's value of the wanted type, or `<field> must be <a type>`.
expected<std::string_view> as_string(od::value& v, std::string_view field);
expected<std::int64_t> as_int(od::value& v, std::string_view field);
expected<std::uint64_t> as_uint(od::value& v, std::string_view field);
expected<bool> as_bool(od::value& v, std::string_view field);
expected<od::object> as_object(od::value& v, std::string_view field);
expected<od::array> as_array(od::value& v, std::string_view field);
/// The value's JSON text as it arrived (a payload).
expected<std::string_view> as_raw(od::value& v, std::string_view field);
bool is_null(od::value& v);

/// A simdjson failure while reading an already validated body (never
/// expected: an internal error naming the field).
api_error read_error(simdjson::error_code e, std::string_view field);

/// Visits the fields of an object: `f(key, value)` returns expected<void>.
template <class F>
expected<void> for_each_field(od::object& obj, std::string_view where, F f) {
  for (auto field : obj) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key))
      return read_error(e, where);
    od::value v;
    if (auto e = field.value().get(v))
      return read_error(e, where);
    SPOOL_TRY(f(key, v));
  }
  return {};
}

/// Visits the elements of an array: `f(index, value)`.
template <class F>
expected<void> for_each_element(od::array& arr, std::string_view where, F f) {
  std::size_t i = 0;
  for (auto element : arr) {
    od::value v;
    if (auto e = element.get(v))
      return read_error(e, where);
    SPOOL_TRY(f(i, v));
    ++i;
  }
  return {};
}

} // namespace spool::json
