#pragma once

/// Key layout of the LMDB databases. Every key starts with the queue id so a
/// queue's data is contiguous, and a queue id carries its slot in bits
/// 32–47 (`vocab/slot.hpp`), so a slot's data is contiguous too; integers are
/// big-endian so LMDB's byte order is numeric order.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/types.hpp"
#include "vocab/slot.hpp"

namespace spool::storage::keys {

inline void put_u64(std::string& out, std::uint64_t x) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((x >> shift) & 0xff));
}

inline std::uint64_t get_u64(std::string_view in, std::size_t pos) {
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < 8; ++i)
    x = (x << 8) | static_cast<std::uint8_t>(in[pos + i]);
  return x;
}

/// Signed values keep their order with the sign bit flipped.
inline void put_i64(std::string& out, std::int64_t x) {
  put_u64(out, static_cast<std::uint64_t>(x) ^ (std::uint64_t{1} << 63));
}

inline std::int64_t get_i64(std::string_view in, std::size_t pos) {
  return static_cast<std::int64_t>(get_u64(in, pos) ^ (std::uint64_t{1} << 63));
}

/// queue
inline std::string queue(queue_id q) {
  std::string k;
  k.reserve(8);
  put_u64(k, q.value);
  return k;
}

/// queue · partition
inline std::string partition(queue_id q, partition_id p) {
  std::string k;
  k.reserve(32);
  put_u64(k, q.value);
  put_u64(k, p.value);
  return k;
}

/// queue · partition · base_offset (segments)
inline std::string segment(queue_id q, partition_id p, offset base) {
  auto k = partition(q, p);
  put_i64(k, base.value);
  return k;
}

/// The base offset of a `segments` key.
inline offset segment_base(std::string_view key) {
  return offset{get_i64(key, 16)};
}

/// queue · partition · created_at · base_offset (segment_time)
inline std::string segment_time(queue_id q, partition_id p, micros created_at,
                                offset base) {
  auto k = partition(q, p);
  put_i64(k, created_at);
  put_i64(k, base.value);
  return k;
}

/// queue · partition · name (cursors: group, dedup: transaction id)
inline std::string partition_named(queue_id q, partition_id p,
                                   std::string_view name) {
  auto k = partition(q, p);
  k.append(name);
  return k;
}

/// queue · group (subscriptions)
inline std::string queue_named(queue_id q, std::string_view name) {
  auto k = queue(q);
  k.append(name);
  return k;
}

/// The longest group name a DLQ key holds: its length is one byte.
inline constexpr std::size_t max_dlq_group = 255;

/// queue · group-length · group · dlq_id (dlq). The length byte keeps one
/// group's entries apart from a group whose name extends it; the tables
/// refuse longer names (`max_dlq_group`), so it never wraps.
inline std::string dlq_prefix(queue_id q, std::string_view group) {
  auto k = queue(q);
  k.push_back(static_cast<char>(group.size()));
  k.append(group);
  return k;
}

inline std::string dlq(queue_id q, std::string_view group, std::uint64_t id) {
  auto k = dlq_prefix(q, group);
  put_u64(k, id);
  return k;
}

/// queue · transaction id (txns: the answer of a client-given id, kept by
/// the transaction's home queue, `core::txn_home_queue`).
inline std::string txn(queue_id q, std::string_view id) {
  return queue_named(q, id);
}

/// queue · created_at · transaction id (txn_time: the expiry index of
/// `txns`).
inline std::string txn_time(queue_id q, micros created_at,
                            std::string_view id) {
  auto k = queue(q);
  k.reserve(16 + id.size());
  put_i64(k, created_at);
  k.append(id);
  return k;
}

/// queue · partition · offset (traces: the traces of one message)
inline std::string trace_message(queue_id q, partition_id p, offset off) {
  auto k = partition(q, p);
  put_i64(k, off.value);
  return k;
}

/// queue · partition · offset · created_at · trace id (traces)
inline std::string trace(queue_id q, partition_id p, offset off, micros at,
                         std::string_view id) {
  auto k = trace_message(q, p, off);
  put_i64(k, at);
  k.append(id);
  return k;
}

/// The longest trace name: its length is one byte of the key.
inline constexpr std::size_t max_trace_name = 255;

/// queue · name-length · name (trace_names: one name's entries in a queue)
inline std::string trace_name_prefix(queue_id q, std::string_view name) {
  auto k = queue(q);
  k.push_back(static_cast<char>(name.size()));
  k.append(name);
  return k;
}

/// queue · name-length · name · created_at · partition · offset · trace id
/// (trace_names: the name index of `traces`, newest last)
inline std::string trace_name(queue_id q, std::string_view name, micros at,
                              partition_id p, offset off, std::string_view id) {
  auto k = trace_name_prefix(q, name);
  put_i64(k, at);
  put_u64(k, p.value);
  put_i64(k, off.value);
  k.append(id);
  return k;
}

/// Every key of a slot's rows starts with a queue id (or, in `meta`, a
/// slot's zero id), so its first 8 bytes hold the slot in bits 32–47: a
/// slot's rows are one contiguous key range in every table.
inline constexpr std::size_t slot_key_bytes = 8;

/// The slot of a key that starts with a queue id or a slot's zero id; none
/// for a node-wide `meta` key (those start with a letter).
inline std::optional<slot_t> slot_of_key(std::string_view key) {
  if (key.size() < slot_key_bytes || key[0] != 0 || key[1] != 0)
    return std::nullopt;
  return slot_of_id(get_u64(key, 0));
}

/// The first key of slot `s` in any table, and the first key after it.
inline std::string slot_begin(slot_t s) {
  std::string k;
  put_u64(k, slot_id(s, 0));
  return k;
}
inline std::string slot_end(slot_t s) {
  std::string k;
  put_u64(k, slot_id(s, 0) + (std::uint64_t{1} << 32));
  return k;
}

/// slot · "counters" (meta): the slot's id counters.
inline std::string slot_counters(slot_t s) {
  auto k = slot_begin(s);
  k.append("counters");
  return k;
}

/// queue · "doomed" (meta): a deleted queue whose rows are still being
/// removed in bounded steps (`mut::sweep_queue`).
inline constexpr std::string_view doomed_suffix = "doomed";

inline std::string doomed(queue_id q) {
  auto k = queue(q);
  k.append(doomed_suffix);
  return k;
}

/// Node-wide `meta` keys: the store's format and its number of slots, both
/// written when the store is created.
inline constexpr std::string_view format_key = "format";
inline constexpr std::string_view slot_count_key = "slots";

} // namespace spool::storage::keys
