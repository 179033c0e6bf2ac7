#pragma once

/// Slots: the unit a cluster replicates, moves and fails over. A store has a
/// fixed number of slots, chosen when it is created; each queue belongs to
/// the slot its name hashes to, or the slot its `{tag}` hashes to (Redis
/// Cluster's hash tags), so queues named `orders{eu}` and `refunds{eu}`
/// share one. A slot's ids carry it: queue and partition ids hold the slot
/// in bits 32–47 (so every key that starts with a queue id sorts a slot's
/// rows together); a partition uuid and a lease id carry their queue's
/// whole id in their first twelve hex digits (`queue_of_id`), so the slot
/// in the first four, and an ack, extend or release is routed by its id
/// alone.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spool {

using slot_t = std::uint16_t;

/// The number of slots a new store gets unless told otherwise.
inline constexpr std::uint32_t default_slot_count = 256;
/// Slots are numbered by 16 bits.
inline constexpr std::uint32_t max_slot_count = 65536;

/// The part of `name` that is hashed: the text between the first `{` and
/// the first `}` after it, when that text is not empty; otherwise the whole
/// name (Redis Cluster's rule).
std::string_view hash_tag(std::string_view name) noexcept;

/// The slot of queue `name` in a store of `count` slots (1..65536): XXH64
/// (seed 0) of its hash tag, modulo `count`. Stable across versions and
/// machines: a store's placement depends on it.
slot_t slot_of(std::string_view name, std::uint32_t count) noexcept;

/// The id `n` (1..2^32-1) of slot `s`: the slot in bits 32–47, so ids stay
/// below 2^48 (exact in a JSON number) and a slot's ids sort together.
constexpr std::uint64_t slot_id(slot_t s, std::uint32_t n) noexcept {
  return (std::uint64_t{s} << 32) | n;
}
/// The slot an id made by `slot_id` carries.
constexpr slot_t slot_of_id(std::uint64_t id) noexcept {
  return static_cast<slot_t>((id >> 32) & 0xffff);
}
/// The per-slot sequence number an id made by `slot_id` carries.
constexpr std::uint32_t slot_local_id(std::uint64_t id) noexcept {
  return static_cast<std::uint32_t>(id & 0xffff'ffff);
}

/// The slot a partition uuid or a lease id carries in its first four hex
/// digits; none when they are not four lowercase hex digits.
std::optional<slot_t> slot_of_uuid(std::string_view uuid) noexcept;

/// A lease id: the id of the queue that granted it, as `%08x-%04x-` of its
/// 48 bits (so its first four hex digits are the slot, as in a partition
/// uuid), then the pop's token (the gateway's tokens make the whole id
/// UUID-shaped). An extend or a release is routed by the id alone.
std::string lease_id_of(std::uint64_t queue_id, std::string_view token);

/// The queue id that a lease id or a partition uuid carries (both start
/// `%08x-%04x-` of it); none when `id` does not start so.
std::optional<std::uint64_t> queue_of_id(std::string_view id) noexcept;

/// The value of a lowercase hex digit, -1 for any other character (the ids
/// Spool makes are written in lowercase only).
constexpr int lower_hex_value(char c) noexcept {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                : -1;
}

/// The value of `text` read as lowercase hex digits, passing over a '-' at
/// position `dash` (npos: none); none when any other character is found.
/// At most 16 digits.
std::optional<std::uint64_t> lower_hex_of(std::string_view text,
                                          std::size_t dash
                                          = std::string_view::npos) noexcept;

} // namespace spool
