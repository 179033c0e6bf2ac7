#pragma once

/// A message's id: a UUID (version 8, RFC 9562) made of a hash of its
/// partition's uuid and its offset. Every door names a message the same way,
/// a duplicate push answers its original's id, and it is also the
/// transactionId of a message pushed without one (so a lookup by
/// transactionId finds it without an index: the id carries the offset).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spool {

/// 8-4-4-4-12 lowercase hex: 64 bits of hash (version nibble 8), then the
/// variant bits 10 and the offset's low 62 bits.
std::string message_uuid(std::string_view partition_uuid, std::int64_t offset);

/// The same in two steps, for a run of messages of one partition: the
/// partition's half (a hash), once; then each id into `out`, no allocation.
std::uint64_t message_uuid_high(std::string_view partition_uuid);
void format_message_uuid(char (&out)[36], std::uint64_t high,
                         std::int64_t offset);

/// The offset `id` names if it is a message id of this partition (the
/// exact text `message_uuid` makes for it), none otherwise.
std::optional<std::int64_t> message_uuid_offset(std::string_view partition_uuid,
                                                std::string_view id);

} // namespace spool
