#include "vocab/slot.hpp"
#include "vocab/slot_ranges.hpp"

#include <algorithm>

#include <xxhash.h>

#include <cstdio>

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
  auto v = lower_hex_of(uuid.substr(0, 4));
  return v ? std::optional{static_cast<slot_t>(*v)} : std::nullopt;
}

std::optional<std::uint64_t> lower_hex_of(std::string_view text,
                                          std::size_t dash) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == dash && text[i] == '-')
      continue;
    int d = lower_hex_value(text[i]);
    if (d < 0)
      return std::nullopt;
    v = (v << 4) | static_cast<unsigned>(d);
  }
  return v;
}

std::string lease_id_of(std::uint64_t queue_id, std::string_view token) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08llx-%04llx-",
                static_cast<unsigned long long>((queue_id >> 16) & 0xffff'ffff),
                static_cast<unsigned long long>(queue_id & 0xffff));
  std::string out{buf, 14};
  out.append(token);
  return out;
}

std::optional<std::uint64_t> queue_of_id(std::string_view id) noexcept {
  if (id.size() < 14 || id[8] != '-' || id[13] != '-')
    return std::nullopt;
  return lower_hex_of(id.substr(0, 13), 8);
}

std::string show_slot_ranges(std::vector<slot_t> slots) {
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  if (slots.empty())
    return "none";
  std::string out;
  for (std::size_t i = 0; i < slots.size();) {
    auto j = i;
    while (j + 1 < slots.size() && slots[j + 1] == slots[j] + 1)
      ++j;
    if (!out.empty())
      out += ',';
    out += std::to_string(slots[i]);
    if (j > i)
      out += '-' + std::to_string(slots[j]);
    i = j + 1;
  }
  return out;
}

} // namespace spool
