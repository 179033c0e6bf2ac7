#include "vocab/message_id.hpp"

#include <xxhash.h>

#include "vocab/slot.hpp"

namespace spool {

namespace {

constexpr std::uint64_t offset_mask = 0x3FFF'FFFF'FFFF'FFFFull;

} // namespace

std::uint64_t message_uuid_high(std::string_view partition_uuid) {
  auto hi = XXH3_64bits(partition_uuid.data(), partition_uuid.size());
  return (hi & ~std::uint64_t{0xF000}) | 0x8000; // version 8
}

void format_message_uuid(char (&out)[36], std::uint64_t hi,
                         std::int64_t offset) {
  auto lo = (static_cast<std::uint64_t>(offset) & offset_mask)
            | 0x8000'0000'0000'0000ull; // variant 10
  // Formatted by hand: it is written for every item of every push answer
  // and every message of a pop, and snprintf showed in profiles.
  static constexpr char digits[] = "0123456789abcdef";
  std::size_t pos = 0;
  auto put = [&](std::uint64_t v, int nibbles) {
    for (int i = nibbles - 1; i >= 0; --i)
      out[pos++] = digits[(v >> (4 * i)) & 0xF];
  };
  put(hi >> 32, 8);
  out[pos++] = '-';
  put(hi >> 16, 4);
  out[pos++] = '-';
  put(hi, 4);
  out[pos++] = '-';
  put(lo >> 48, 4);
  out[pos++] = '-';
  put(lo, 12);
}

std::string message_uuid(std::string_view partition_uuid, std::int64_t offset) {
  char out[36];
  format_message_uuid(out, message_uuid_high(partition_uuid), offset);
  return std::string{out, sizeof out};
}

std::optional<std::int64_t> message_uuid_offset(std::string_view partition_uuid,
                                                std::string_view id) {
  if (id.size() != 36)
    return std::nullopt;
  auto lo = lower_hex_of(id.substr(19), 4);
  if (!lo)
    return std::nullopt;
  auto offset = static_cast<std::int64_t>(*lo & offset_mask);
  // The whole text must be what the id of that offset is: the hash half,
  // the dashes, the variant, and no other spelling (upper case) of it.
  if (message_uuid(partition_uuid, offset) != id)
    return std::nullopt;
  return offset;
}

} // namespace spool
