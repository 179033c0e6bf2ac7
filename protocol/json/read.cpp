#include "protocol/json/read.hpp"

#include "protocol/http/message.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

namespace spool::json {

namespace {

/// A thread's parsers; one whose buffers grew past `keep` for a large body
/// is replaced after use, so each io thread holds a bounded amount.
constexpr std::size_t keep = 1u << 20;

simdjson::dom::parser& dom_parser() {
  thread_local simdjson::dom::parser p;
  return p;
}

od::parser& od_parser() {
  thread_local od::parser p;
  return p;
}

template <class Parser>
void trim(Parser& p) {
  if (p.capacity() > keep)
    p = Parser{};
}

/// A SAX handler that accepts every value and refuses nesting deeper than
/// simdjson's default (1024).
struct depth_check
    : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, depth_check> {
  int depth = 0;
  bool too_deep = false;
  bool StartObject() {
    return enter();
  }
  bool StartArray() {
    return enter();
  }
  bool EndObject(rapidjson::SizeType) {
    --depth;
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    --depth;
    return true;
  }
  bool enter() {
    too_deep = ++depth > 1024;
    return !too_deep;
  }
};

/// "" when `body` is valid JSON (numbers of any size), else why not.
std::string validate_big_numbers(const std::string& body) {
  rapidjson::Reader reader;
  rapidjson::MemoryStream ms{body.data(), body.size()};
  depth_check h;
  constexpr unsigned flags = rapidjson::kParseNumbersAsStringsFlag
                             | rapidjson::kParseValidateEncodingFlag
                             | rapidjson::kParseIterativeFlag;
  auto r = reader.Parse<flags>(ms, h);
  if (!r.IsError())
    return {};
  if (h.too_deep)
    return "The JSON document was too deep (too many nested objects and "
           "arrays)";
  return std::string{rapidjson::GetParseError_En(r.Code())} + " (at byte "
         + std::to_string(r.Offset()) + ")";
}

api_error type_error(std::string_view field, const char* what) {
  return make_error(errc::invalid_argument, field, " must be ", what);
}

} // namespace

expected<od::document> open_body(std::string& body) {
  if (body.empty())
    return make_error(errc::bad_request, "Empty request body");
  if (body.capacity() < body.size() + simdjson::SIMDJSON_PADDING)
    body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  simdjson::padded_string_view view{body.data(), body.size(), body.capacity()};
  {
    auto& dom = dom_parser();
    auto err = dom.parse(body.data(), body.size(), false).error();
    trim(dom); // its buffers are not used after the check
    // simdjson refuses numbers beyond 64 bits, which are valid JSON (a
    // payload may carry one): such a body is validated again by RapidJSON,
    // which takes numbers as text.
    if (err == simdjson::NUMBER_ERROR) {
      if (auto why = validate_big_numbers(body); !why.empty())
        return make_error(errc::bad_request, "Invalid JSON: ", why);
    } else if (err) {
      return make_error(errc::bad_request,
                        "Invalid JSON: ", simdjson::error_message(err));
    }
  }
  auto& p = od_parser();
  trim(p);
  od::document doc;
  if (auto err = p.iterate(view).get(doc))
    return make_error(errc::bad_request,
                      "Invalid JSON: ", simdjson::error_message(err));
  return doc;
}

expected<od::object> open_object(std::string& body, od::document& doc) {
  auto opened = open_body(body);
  if (!opened)
    return opened.err();
  doc = std::move(*opened);
  return root_object(doc);
}

expected<od::object> root_object(od::document& doc) {
  od::object obj;
  if (doc.get_object().get(obj))
    return make_error(errc::invalid_argument,
                      "Request body must be a JSON object");
  return obj;
}

expected<std::string_view> as_string(od::value& v, std::string_view field) {
  std::string_view s;
  if (v.get_string().get(s))
    return type_error(field, "a string");
  return s;
}

expected<std::int64_t> as_int(od::value& v, std::string_view field) {
  std::int64_t n = 0;
  if (v.get_int64().get(n))
    return type_error(field, "an integer");
  return n;
}

expected<std::uint64_t> as_uint(od::value& v, std::string_view field) {
  std::uint64_t n = 0;
  if (v.get_uint64().get(n))
    return type_error(field, "a non-negative integer");
  return n;
}

expected<bool> as_bool(od::value& v, std::string_view field) {
  bool b = false;
  if (v.get_bool().get(b))
    return type_error(field, "a boolean");
  return b;
}

expected<od::object> as_object(od::value& v, std::string_view field) {
  od::object o;
  if (v.get_object().get(o))
    return type_error(field, "an object");
  return o;
}

expected<od::array> as_array(od::value& v, std::string_view field) {
  od::array a;
  if (v.get_array().get(a))
    return type_error(field, "an array");
  return a;
}

expected<std::string_view> as_raw(od::value& v, std::string_view field) {
  std::string_view s;
  od::json_type type;
  if (auto e = v.type().get(type))
    return read_error(e, field);
  simdjson::error_code e = simdjson::SUCCESS;
  if (type == od::json_type::object) {
    od::object o;
    e = v.get_object().get(o);
    if (!e)
      e = o.raw_json().get(s);
  } else if (type == od::json_type::array) {
    od::array a;
    e = v.get_array().get(a);
    if (!e)
      e = a.raw_json().get(s);
  } else {
    s = v.raw_json_token();
  }
  if (e)
    return read_error(e, field);
  // A scalar's token keeps the whitespace after it: not part of it.
  while (!s.empty()
         && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r'
             || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool is_null(od::value& v) {
  bool null = false;
  return !v.is_null().get(null) && null;
}

api_error read_error(simdjson::error_code e, std::string_view field) {
  return make_error(errc::bad_request, "Invalid JSON: ", field, ": ",
                    simdjson::error_message(e));
}

} // namespace spool::json
