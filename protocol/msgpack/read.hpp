#pragma once

/// Reading msgpack requests (api.md, last section): a frame's body decoded
/// with msgpack-c into objects in a zone, strings and bins referring to the
/// frame's bytes (nothing is copied until a request field takes its value),
/// under limits that bound what a hostile frame can make the decoder
/// allocate. `format` gives the request readers (protocol/api/requests*)
/// the same typed field access as `json::` does, with the same error texts
/// (`items[3].queue must be a string`).

#include <msgpack.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "node/api.hpp"
#include "vocab/expected.hpp"
#include "wire/find.hpp"

namespace spool::mp {

using object = msgpack::object;

/// One decoded request frame: its map, its id and op. The objects live in
/// `zone` and refer to the frame's bytes: both must outlive the reading.
struct request_frame {
  std::unique_ptr<msgpack::zone> zone;
  const object* root = nullptr;
  std::uint64_t id = 0;
  std::string_view op;
};

/// Decodes one frame's body (the bytes after its length). A frame that is
/// not one msgpack map → `bad_request` (`Invalid msgpack: <why>`); a map
/// without an unsigned `id` or a string `op` → `invalid_argument`. The id,
/// when it could be read, is in `id_out` for the error answer.
expected<request_frame> decode_request(std::string_view body,
                                       std::uint64_t& id_out);

/// Whether an answer frame (its 4-byte length, then `{id, ok, …}`) says
/// `ok: true`; read up to that field only, whatever the answer's size.
bool answer_ok(std::string_view frame);

/// An object (a map) or an array as the readers take them.
struct map_ref {
  const object* o = nullptr;
};
struct array_ref {
  const object* o = nullptr;
};

/// The typed field access of the request readers (see json_format in
/// protocol/api/requests_detail.hpp): the same calls and texts.
struct format {
  using value = const object;
  using object_t = map_ref;
  using array_t = array_ref;

  static expected<std::string_view> as_string(value& v, std::string_view f);
  static expected<std::int64_t> as_int(value& v, std::string_view f);
  static expected<std::uint64_t> as_uint(value& v, std::string_view f);
  static expected<bool> as_bool(value& v, std::string_view f);
  static expected<map_ref> as_object(value& v, std::string_view f);
  static expected<array_ref> as_array(value& v, std::string_view f);
  static bool is_null(value& v);
  /// A push's payload: bin is kept as bytes (binary); any other value is
  /// kept as its JSON text (what HTTP consumers read), nil as `null`.
  static expected<void> payload(value& v, const std::string& field,
                                node::push_item& item);
  /// A string field of `m` by key (absent: none), for a reader that must
  /// know one field before the others.
  static expected<std::optional<std::string_view>>
  find_string(map_ref& m, std::string_view key, const std::string& field);
  static expected<void> reset(map_ref&) {
    return {};
  }

  template <class F>
  static expected<void> fields(map_ref& m, std::string_view where, F f) {
    auto& map = m.o->via.map;
    for (std::uint32_t i = 0; i < map.size; ++i) {
      auto& kv = map.ptr[i];
      if (kv.key.type != msgpack::type::STR)
        return key_error(where);
      SPOOL_TRY(
          f(std::string_view{kv.key.via.str.ptr, kv.key.via.str.size}, kv.val));
    }
    return {};
  }
  template <class F>
  static expected<void> elements(array_ref& a, std::string_view, F f) {
    auto& arr = a.o->via.array;
    for (std::uint32_t i = 0; i < arr.size; ++i)
      SPOOL_TRY(f(std::size_t{i}, arr.ptr[i]));
    return {};
  }

private:
  static api_error key_error(std::string_view where);
};

} // namespace spool::mp
