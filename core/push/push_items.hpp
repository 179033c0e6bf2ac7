#pragma once

/// The items of a push before anything is stored (semantics.md §1, §2):
/// each item checked as a whole, and the items grouped by the name they go
/// to (queue, then partition). One rule for every push, checked once where
/// it enters (the broker's push, a transaction's push operations); the
/// queues trust it.

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "storage/segment.hpp"
#include "storage/types.hpp"
#include "vocab/expected.hpp"

namespace spool::core {

/// Push item `i` at the edge (the broker's push, a transaction's push
/// operation): its queue (when the item names one), its partition, its
/// frame's sizes and texts (`check_frame_texts`). The error names the item:
/// "items[3].queue must be …", "items[3]: payload exceeds …".
expected<void> check_push_item(std::size_t i, const std::string* queue,
                               std::string_view partition,
                               const storage::frame& f,
                               const storage::frame_limits& limits);

/// The parts of `check_push_item`: item i's partition name, and its
/// frame's sizes (`storage::check_frame`), with the same errors.
expected<void> check_item_partition(std::size_t i, std::string_view partition);
/// (Inline: a push checks every frame, and nearly all pass.)
inline expected<void> check_item_frame(std::size_t i, const storage::frame& f,
                                       const storage::frame_limits& limits);
/// The error of item i whose frame `check_frame` refused.
api_error item_frame_error(std::size_t i, const storage::error& refused);

inline expected<void> check_item_frame(std::size_t i, const storage::frame& f,
                                       const storage::frame_limits& limits) {
  auto ok = storage::check_frame(f, limits);
  if (ok) [[likely]]
    return {};
  return item_frame_error(i, ok.err());
}

/// Items grouped by name in first-seen order: `names[k]` receives the items
/// `items[k]` (input indices, ascending); `slot[i]` is item i's group.
struct push_groups {
  std::vector<std::string> names;
  std::vector<std::vector<std::size_t>> items;
  std::vector<std::size_t> slot;
};

/// Groups `n` items by `name_of(i)`. Pushes usually name one queue and
/// partition for a run of items: a name equal to the previous item's skips
/// the lookup.
template <class NameOf>
push_groups group_by_name(std::size_t n, NameOf name_of) {
  // The index keeps views of the names: `name_of` must return references
  // to names that outlive the call, never temporaries.
  static_assert(
      std::is_lvalue_reference_v<std::invoke_result_t<NameOf&, std::size_t>>);
  push_groups g;
  g.slot.resize(n);
  std::unordered_map<std::string_view, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& name = name_of(i);
    if (i > 0 && name == name_of(i - 1)) {
      g.slot[i] = g.slot[i - 1];
    } else {
      auto [it, fresh] = index.try_emplace(name, g.names.size());
      if (fresh) {
        g.names.push_back(name);
        g.items.emplace_back();
      }
      g.slot[i] = it->second;
    }
    g.items[g.slot[i]].push_back(i);
  }
  return g;
}

/// Each item's value (`take(i)`) in its group, in input order: what a
/// group's queue or partition receives. To move the items, `take` returns
/// an rvalue reference (`-> T&&`): each item is then moved once, straight
/// into its group (a `take` returning by value moves it twice).
template <class T, class Take>
std::vector<std::vector<T>> distribute(const push_groups& g, Take take) {
  std::vector<std::vector<T>> out(g.names.size());
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k].reserve(g.items[k].size());
  for (std::size_t i = 0; i < g.slot.size(); ++i)
    out[g.slot[i]].push_back(take(i));
  return out;
}

} // namespace spool::core
