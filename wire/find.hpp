#pragma once

/// A msgpack map's field by name: how both ends read a map (the server's
/// request readers, protocol/msgpack/read.hpp; the client's answer readers,
/// client/).

#include <msgpack.hpp>

#include <cstdint>
#include <string_view>

namespace spool::mp {

/// The value of `map`'s first field named `key`; null when `map` is not a
/// map or has no such field.
inline const msgpack::object* find(const msgpack::object& map,
                                   std::string_view key) {
  if (map.type != msgpack::type::MAP)
    return nullptr;
  for (std::uint32_t i = 0; i < map.via.map.size; ++i) {
    auto& kv = map.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR
        && std::string_view{kv.key.via.str.ptr, kv.key.via.str.size} == key)
      return &kv.val;
  }
  return nullptr;
}

} // namespace spool::mp
