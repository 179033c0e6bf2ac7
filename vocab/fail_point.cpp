#include "vocab/fail_point.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <charconv>
#include <cstdio>

namespace spool::fail_points {

namespace {

constexpr std::array<std::string_view, 2> known
    = {leader_synced_before_quorum, fenced_before_answer};
constexpr std::uint32_t any_slot = UINT32_MAX;

struct point {
  std::size_t which = 0; ///< index into `known`
  std::uint32_t slot = any_slot;
};

// Written once by `configure` before any thread starts, then only read.
std::array<point, 8> points;
std::size_t count = 0;
std::atomic<bool> armed{false};

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  return s;
}

} // namespace

std::optional<std::string> configure(std::string_view spec) {
  std::array<point, 8> read{};
  std::size_t n = 0;
  while (!spec.empty()) {
    auto comma = spec.find(',');
    auto item = trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? "" : spec.substr(comma + 1);
    if (item.empty())
      continue;
    if (n == read.size())
      return "SPOOL_FAIL_POINTS names more than 8 points";
    auto at = item.find('@');
    auto name = item.substr(0, at);
    point p;
    std::size_t i = 0;
    while (i < known.size() && known[i] != name)
      ++i;
    if (i == known.size()) {
      std::string names;
      for (auto k : known)
        names += (names.empty() ? "" : ", ") + std::string{k};
      return "SPOOL_FAIL_POINTS: unknown fail point '" + std::string{name}
             + "' (known: " + names + ")";
    }
    p.which = i;
    if (at != std::string_view::npos) {
      auto s = item.substr(at + 1);
      std::uint32_t slot = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), slot);
      if (ec != std::errc{} || end != s.data() + s.size() || s.empty()
          || slot >= 65536)
        return "SPOOL_FAIL_POINTS: '" + std::string{item}
               + "': the slot after '@' must be a number below 65536";
      p.slot = slot;
    }
    read[n++] = p;
  }
  points = read;
  count = n;
  return std::nullopt;
}

bool named() noexcept {
  return count > 0;
}

void arm() noexcept {
  armed.store(count > 0, std::memory_order_relaxed);
  // What a test waits for before it makes the step happen.
  constexpr std::string_view line = "fail points armed\n";
  [[maybe_unused]] auto w = ::write(2, line.data(), line.size());
}

void hit(std::string_view point_name, std::uint32_t slot) noexcept {
  if (!armed.load(std::memory_order_relaxed))
    return;
  for (std::size_t i = 0; i < count; ++i) {
    auto& p = points[i];
    if (known[p.which] != point_name || (p.slot != any_slot && p.slot != slot))
      continue;
    // Unbuffered, so the line is in the log before the process is gone.
    char line[160];
    auto n = std::snprintf(
        line, sizeof line, "fail point %.*s hit (slot %u): SIGKILL\n",
        static_cast<int>(point_name.size()), point_name.data(), slot);
    if (n > 0) {
      [[maybe_unused]] auto w = ::write(2, line, static_cast<std::size_t>(n));
    }
    ::kill(::getpid(), SIGKILL);
    ::_exit(137); // never past this point, whatever kill did
  }
}

} // namespace spool::fail_points
