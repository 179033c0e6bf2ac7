#pragma once

/// "Did you mean …?" for a word a user typed: the CLI's commands and the
/// HTTP door's query keys. No allocation beyond the distance table.

#include <optional>
#include <span>
#include <string_view>

namespace spool::wire {

/// The candidate nearest to `word`, if it is near enough to be a slip:
/// letters compared without case, `_` and `-` ignored (`consumer_group`
/// is `consumerGroup`), then at most one edit (a letter added, dropped,
/// changed, or two swapped) per three letters of the
/// word (at least one, at most two). None when nothing is that near.
std::optional<std::string_view>
closest(std::string_view word, std::span<const std::string_view> candidates);

} // namespace spool::wire
