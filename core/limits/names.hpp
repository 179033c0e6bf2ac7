#pragma once

/// Input limits on names and texts (issue 11, docs/reliability.md): checked
/// at the broker's edge before anything is created or stored. A name is
/// 1..255 bytes of valid UTF-8 with no control character and no '/', so
/// that every key it is part of fits LMDB's 511-byte key limit with room to
/// spare (the longest, cursors and dedup ids: 16 + 255 bytes); names that
/// start with `__` are reserved (except the group `__QUEUE_MODE__`).
/// Pure: no CAF, no storage access.

#include <cstddef>
#include <functional>
#include <string_view>

#include "config/options.hpp"
#include "storage/error.hpp"
#include "storage/types.hpp"

namespace spool::core {

/// The longest queue, partition, group, namespace or task name, and the
/// longest transactionId, traceId or header key, in bytes.
inline constexpr std::size_t max_name_bytes = 255;

enum class name_kind : std::uint8_t {
  queue,
  partition,
  group,
  name_space,
  task
};

/// "queue", "partition", "consumerGroup", "namespace", "task".
const char* to_string(name_kind k) noexcept;

/// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates,
/// nothing above U+10FFFF).
bool valid_utf8(std::string_view s) noexcept;

/// Whether `s` holds a C0 or C1 control character or DEL (read as UTF-8).
bool has_control(std::string_view s) noexcept;

/// A name of `kind`: `invalid_argument` with a message naming the kind and
/// the rule ("queue must be 1..255 bytes, got 300"; a caller prefixes where
/// the name came from: "items[3].queue …").
expected<void> check_name(name_kind kind, std::string_view name);

/// A free text field with a byte limit (transactionId, traceId, header
/// keys): UTF-8, no control characters, at most `max` bytes; `what` names it
/// in the error.
expected<void> check_text(const char* what, std::string_view s,
                          std::size_t max = max_name_bytes);

/// The texts of a frame beyond `storage::check_frame`'s sizes: its
/// transactionId, traceId and header keys as `check_text` (UTF-8, no
/// control characters, at most 255 bytes), header values valid UTF-8.
expected<void> check_frame_texts(const storage::frame& f);

/// A push (or a transaction's pushes) of `items` items, item i holding
/// `payload_of(i)` payload bytes, within `limits`: "a push holds at most …"
/// (`invalid_argument` for the count, `frame_too_large` for the bytes).
expected<void>
check_push_size(const config::push_limits& limits, std::size_t items,
                const std::function<std::size_t(std::size_t)>& payload_of);

} // namespace spool::core
