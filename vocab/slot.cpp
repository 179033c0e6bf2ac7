#include "vocab/slot.hpp"

#include <xxhash.h>

namespace spool {

std::string_view hash_tag(std::string_view name) noexcept {
  auto open = name.find('{');
  if (open == std::string_view::npos)
    return name;
  auto close = name.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1)
    return name;
  return name.substr(open + 1, close - open - 1);
}

slot_t slot_of(std::string_view name, std::uint32_t count) noexcept {
  if (count <= 1)
    return 0;
  auto tag = hash_tag(name);
  return static_cast<slot_t>(XXH64(tag.data(), tag.size(), 0) % count);
}

std::optional<slot_t> slot_of_uuid(std::string_view uuid) noexcept {
  if (uuid.size() < 4)
    return std::nullopt;
  unsigned v = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    int d = lower_hex_value(uuid[i]);
    if (d < 0)
      return std::nullopt;
    v = (v << 4) | static_cast<unsigned>(d);
  }
  return static_cast<slot_t>(v);
}

} // namespace spool
