// The nearest candidate to a mistyped word (wire/spelling.hpp).

#include "wire/spelling.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace spool::wire {

namespace {

/// Lower case, with `_` and `-` left out.
std::string folded(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-')
      out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

/// Edits from `a` to `b`: insert, delete, substitute, or swap two letters
/// side by side (`tsak` is one from `task`), one each.
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(
      a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

} // namespace

std::optional<std::string_view>
closest(std::string_view word, std::span<const std::string_view> candidates) {
  auto w = folded(word);
  if (w.empty() || w.size() > 64) // no name is that long
    return std::nullopt;
  std::size_t allowed = std::clamp<std::size_t>(w.size() / 3, 1, 2);
  std::optional<std::string_view> best;
  std::size_t best_distance = allowed + 1;
  for (auto c : candidates) {
    auto d = distance(w, folded(c));
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

} // namespace spool::wire
