#include "protocol/msgpack/read.hpp"

#include <simdjson.h>

#include <cmath>
#include <limits>

#include "protocol/json/write.hpp"

namespace spool::mp {

namespace {

/// Strings and bins stay in the frame's bytes (read once, when a field
/// takes its value).
bool refer(msgpack::type::object_type, std::size_t, void*) {
  return true;
}

api_error type_error(std::string_view field, const char* what) {
  return make_error(errc::invalid_argument, field, " must be ", what);
}

/// Deepest nesting of a request (a push item's payload included).
constexpr std::size_t max_depth = 64;

/// What a frame of `n` bytes may declare: every element takes a byte at
/// least, so a count past the frame's size is a lie; the caps bound the
/// zone a frame can make the decoder allocate before its bytes are read.
/// (Strings, bins and exts refer to the frame, so their size limits do not
/// apply; an ext is refused where a field is read.)
msgpack::unpack_limit limits(std::size_t n) {
  auto cap = [n](std::size_t c) { return std::min(n, c); };
  return msgpack::unpack_limit{cap(std::size_t{1} << 21),
                               cap(std::size_t{1} << 20) / 2 + 1,
                               n,
                               n,
                               n,
                               max_depth};
}

/// Where a payload value is, built only for an error (a path string per
/// element would cost its length per element: quadratic).
struct path {
  const path* parent;
  std::string_view key; ///< a map's key, or none
  std::size_t index;    ///< an array's index, with no key

  std::string text(const std::string& root) const {
    std::string up = parent ? parent->text(root) : root;
    if (!parent)
      return up;
    return key.data() ? up + "." + std::string{key}
                      : up + "[" + std::to_string(index) + "]";
  }
};

/// A payload value as JSON; `root` and `at` name it in errors.
expected<void> to_json(const object& v, json::writer& w,
                       const std::string& root, const path& at) {
  using msgpack::type::object_type;
  auto fail = [&](const char* what) {
    return make_error(errc::invalid_argument, at.text(root), what);
  };
  switch (v.type) {
  case object_type::NIL:
    w.null();
    return {};
  case object_type::BOOLEAN:
    w.boolean(v.via.boolean);
    return {};
  case object_type::POSITIVE_INTEGER:
    w.u64(v.via.u64);
    return {};
  case object_type::NEGATIVE_INTEGER:
    w.i64(v.via.i64);
    return {};
  case object_type::FLOAT32:
  case object_type::FLOAT64: {
    if (!std::isfinite(v.via.f64))
      return fail(" must be a finite number (JSON has no NaN)");
    w.dbl(v.via.f64);
    return {};
  }
  case object_type::STR: {
    std::string_view s{v.via.str.ptr, v.via.str.size};
    if (!simdjson::validate_utf8(s.data(), s.size()))
      return fail(" must be UTF-8");
    w.str(s);
    return {};
  }
  case object_type::ARRAY:
    w.begin_array();
    for (std::uint32_t i = 0; i < v.via.array.size; ++i)
      SPOOL_TRY(to_json(v.via.array.ptr[i], w, root, path{&at, {}, i}));
    w.end_array();
    return {};
  case object_type::MAP:
    w.begin_object();
    for (std::uint32_t i = 0; i < v.via.map.size; ++i) {
      auto& kv = v.via.map.ptr[i];
      if (kv.key.type != object_type::STR)
        return fail(" keys must be strings");
      std::string_view k{kv.key.via.str.ptr, kv.key.via.str.size};
      if (!simdjson::validate_utf8(k.data(), k.size()))
        return fail(" keys must be UTF-8");
      w.key(k);
      SPOOL_TRY(to_json(kv.val, w, root, path{&at, k, 0}));
    }
    w.end_object();
    return {};
  default: // bin inside a structure, ext
    return fail(" must be bin, or a value JSON can hold");
  }
}

/// Counts the elements a frame's containers declare, before anything is
/// allocated for them: a well-formed frame of `n` bytes declares at most
/// `n` (each element takes a byte at least), so more is refused before
/// msgpack-c allocates room for the declared counts.
struct declared_count : msgpack::null_visitor {
  std::size_t left;
  std::size_t depth = 0;
  bool refused = false;
  explicit declared_count(std::size_t n) : left(n) {
  }
  bool take(std::size_t n) {
    if (n > left || ++depth > max_depth)
      return !(refused = true);
    left -= n;
    return true;
  }
  bool start_array(std::uint32_t n) {
    return take(n);
  }
  bool start_map(std::uint32_t n) {
    return take(std::size_t{n} * 2);
  }
  bool end_array() {
    --depth;
    return true;
  }
  bool end_map() {
    --depth;
    return true;
  }
};

/// Reads an answer's top-level `ok` and stops there.
struct ok_reader : msgpack::null_visitor {
  std::size_t depth = 0;
  bool in_key = false;    ///< reading a top-level key
  bool key_is_ok = false; ///< the top-level key just read is `ok`
  bool in_ok = false;     ///< reading the top-level `ok`'s value
  bool ok = false;
  bool start_map(std::uint32_t) {
    ++depth;
    return true;
  }
  bool end_map() {
    --depth;
    return true;
  }
  bool start_array(std::uint32_t) {
    ++depth;
    return true;
  }
  bool end_array() {
    --depth;
    return true;
  }
  bool start_map_key() {
    in_key = depth == 1;
    key_is_ok = false;
    return true;
  }
  bool end_map_key() {
    in_key = false;
    return true;
  }
  bool visit_str(const char* p, std::uint32_t n) {
    if (in_key)
      key_is_ok = std::string_view{p, n} == "ok";
    return true;
  }
  bool start_map_value() {
    in_ok = depth == 1 && key_is_ok;
    key_is_ok = false;
    return true;
  }
  bool end_map_value() {
    in_ok = false;
    return true;
  }
  bool visit_boolean(bool v) {
    if (!in_ok || depth != 1)
      return true;
    ok = v;
    return false; // found: the rest is not read
  }
};

} // namespace

bool answer_ok(std::string_view frame) {
  if (frame.size() < 4)
    return false;
  ok_reader r;
  std::size_t off = 4;
  msgpack::parse(frame.data(), frame.size(), off, r);
  return r.ok;
}

expected<request_frame> decode_request(std::string_view body,
                                       std::uint64_t& id_out) {
  request_frame f;
  {
    declared_count count{body.size()};
    std::size_t off = 0;
    msgpack::parse(body.data(), body.size(), off, count);
    if (count.refused) // (other failures are told by unpack below)
      return make_error(errc::bad_request,
                        "Invalid msgpack: the frame declares more elements "
                        "than it holds, or nests deeper than ",
                        max_depth);
  }
  f.zone = std::make_unique<msgpack::zone>();
  std::size_t off = 0;
  object root;
  try {
    bool referenced = false;
    root = msgpack::unpack(*f.zone, body.data(), body.size(), off, referenced,
                           &refer, nullptr, limits(body.size()));
  } catch (const msgpack::insufficient_bytes&) {
    return make_error(errc::bad_request,
                      "Invalid msgpack: the frame ends inside a value");
  } catch (const msgpack::unpack_error& e) {
    return make_error(errc::bad_request, "Invalid msgpack: ", e.what());
  } catch (const std::bad_alloc&) {
    return make_error(errc::too_large, "The frame does not fit in memory");
  }
  if (off != body.size())
    return make_error(errc::bad_request,
                      "Invalid msgpack: the frame holds more than one value");
  if (root.type != msgpack::type::MAP)
    return make_error(errc::bad_request,
                      "Invalid msgpack: a request must be a map");
  f.root = f.zone->allocate<object>(root);
  auto id = find(*f.root, "id");
  if (!id || id->type != msgpack::type::POSITIVE_INTEGER)
    return make_error(errc::invalid_argument,
                      "id must be a non-negative integer");
  f.id = id_out = id->via.u64;
  auto op = find(*f.root, "op");
  if (!op || op->type != msgpack::type::STR)
    return make_error(errc::invalid_argument, "op must be a string");
  f.op = {op->via.str.ptr, op->via.str.size};
  return f;
}

expected<std::string_view> format::as_string(value& v, std::string_view f) {
  if (v.type != msgpack::type::STR)
    return type_error(f, "a string");
  return std::string_view{v.via.str.ptr, v.via.str.size};
}

expected<std::int64_t> format::as_int(value& v, std::string_view f) {
  if (v.type == msgpack::type::NEGATIVE_INTEGER)
    return v.via.i64;
  if (v.type == msgpack::type::POSITIVE_INTEGER
      && v.via.u64 <= std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    return static_cast<std::int64_t>(v.via.u64);
  return type_error(f, "an integer");
}

expected<std::uint64_t> format::as_uint(value& v, std::string_view f) {
  if (v.type != msgpack::type::POSITIVE_INTEGER)
    return type_error(f, "a non-negative integer");
  return v.via.u64;
}

expected<bool> format::as_bool(value& v, std::string_view f) {
  if (v.type != msgpack::type::BOOLEAN)
    return type_error(f, "a boolean");
  return v.via.boolean;
}

expected<map_ref> format::as_object(value& v, std::string_view f) {
  if (v.type != msgpack::type::MAP)
    return type_error(f, "an object");
  return map_ref{&v};
}

expected<array_ref> format::as_array(value& v, std::string_view f) {
  if (v.type != msgpack::type::ARRAY)
    return type_error(f, "an array");
  return array_ref{&v};
}

bool format::is_null(value& v) {
  return v.type == msgpack::type::NIL;
}

expected<void> format::payload(value& v, const std::string& field,
                               node::push_item& item) {
  if (v.type == msgpack::type::BIN) {
    item.payload.assign(v.via.bin.ptr, v.via.bin.size);
    item.binary = true;
    return {};
  }
  json::writer w;
  SPOOL_TRY(to_json(v, w, field, path{nullptr, {}, 0}));
  item.payload = w.take();
  item.binary = false;
  return {};
}

expected<std::optional<std::string_view>>
format::find_string(map_ref& m, std::string_view key,
                    const std::string& field) {
  auto v = find(*m.o, key);
  if (!v)
    return std::optional<std::string_view>{};
  auto s = as_string(*v, field);
  if (!s)
    return s.err();
  return std::optional<std::string_view>{*s};
}

api_error format::key_error(std::string_view where) {
  return make_error(errc::invalid_argument, where, " keys must be strings");
}

} // namespace spool::mp
