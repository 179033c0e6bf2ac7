#include "core/writer/open_parts.hpp"

#include <functional>

namespace spool::core {

std::size_t part_id_hash::operator()(const part_id& p) const noexcept {
  auto mix = [](std::size_t h, std::uint64_t x) {
    return h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  };
  std::size_t h = mix(0, p.holder);
  h = mix(h, p.key.queue);
  h = mix(h, p.key.partition);
  h = mix(h, std::hash<std::string>{}(p.key.group));
  return mix(h, static_cast<std::uint64_t>(p.key.first));
}

} // namespace spool::core
