#pragma once

/// Cutting a byte stream into msgpack door frames (api.md: a 4-byte
/// big-endian length, then that many bytes). Pure: the connection and the
/// fuzz target call it.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace spool::mp {

struct frame_cut {
  enum kind_t : std::uint8_t {
    need_more, ///< the length or the body is not whole yet
    whole,     ///< `buf` starts with a frame: its body is `length` bytes
    too_large, ///< the length says more than the limit: `length`
  } kind = need_more;
  std::size_t length = 0;
};

/// What `buf` starts with, under the limit `max_body`.
inline frame_cut cut_frame(std::string_view buf, std::size_t max_body) {
  if (buf.size() < 4)
    return {};
  auto b = reinterpret_cast<const unsigned char*>(buf.data());
  std::size_t len = (std::size_t{b[0]} << 24) | (std::size_t{b[1]} << 16)
                    | (std::size_t{b[2]} << 8) | std::size_t{b[3]};
  if (len > max_body)
    return {frame_cut::too_large, len};
  if (buf.size() - 4 < len)
    return {frame_cut::need_more, len};
  return {frame_cut::whole, len};
}

} // namespace spool::mp
