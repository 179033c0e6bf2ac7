#include "protocol/time/rfc3339.hpp"

// date.h's parser trips g++ 12's -Wmaybe-uninitialized in its own code.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <date/date.h>

#include <cctype>
#include <chrono>
#include <sstream>

namespace spool::timefmt {

namespace {

bool digits(std::string_view s, std::size_t from, std::size_t n) {
  if (from + n > s.size())
    return false;
  for (std::size_t i = from; i < from + n; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i])))
      return false;
  return true;
}

} // namespace

std::optional<micros> parse_rfc3339(std::string_view s) {
  // The shape first (date's parser is lenient about digit counts):
  // YYYY-MM-DD[Tt ]HH:MM:SS[.f+](Z|z|±HH:MM)
  if (s.size() < 20 || s.size() > 64 || !digits(s, 0, 4) || s[4] != '-'
      || !digits(s, 5, 2) || s[7] != '-' || !digits(s, 8, 2)
      || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s, 11, 2)
      || s[13] != ':' || !digits(s, 14, 2) || s[16] != ':' || !digits(s, 17, 2))
    return std::nullopt;
  std::string norm{s.substr(0, 10)};
  norm += 'T';
  norm += s.substr(11, 8);
  std::size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    std::size_t j = i + 1;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
      ++j;
    if (j == i + 1)
      return std::nullopt;
    auto frac = s.substr(i + 1, j - i - 1);
    norm += '.';
    norm += frac.substr(0, 6);
    norm.append(6 - std::min<std::size_t>(6, frac.size()), '0');
    i = j;
  } else {
    norm += ".000000";
  }
  auto zone = s.substr(i);
  if (zone == "Z" || zone == "z") {
    norm += "+00:00";
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-')
             && digits(zone, 1, 2) && zone[3] == ':' && digits(zone, 4, 2)) {
    norm += zone;
  } else {
    return std::nullopt;
  }
  std::istringstream in{norm};
  date::sys_time<std::chrono::microseconds> tp;
  in >> date::parse("%FT%T%Ez", tp);
  if (in.fail())
    return std::nullopt;
  in.peek();
  if (!in.eof())
    return std::nullopt;
  // An offset can move a time in year 0000 or 9999 out of the four-digit
  // years: refused, so that every accepted instant has an RFC 3339 form.
  using namespace date;
  constexpr auto first = sys_days{year{0} / 1 / 1};
  constexpr auto end = sys_days{year{10000} / 1 / 1};
  if (tp < first || tp >= end)
    return std::nullopt;
  return tp.time_since_epoch().count();
}

std::string format_micros(micros t) {
  date::sys_time<std::chrono::microseconds> tp{std::chrono::microseconds{t}};
  return date::format("%FT%TZ", tp);
}

std::string format_millis(micros t) {
  auto tp = date::floor<std::chrono::milliseconds>(
      date::sys_time<std::chrono::microseconds>{std::chrono::microseconds{t}});
  return date::format("%FT%TZ", tp);
}

} // namespace spool::timefmt

#pragma GCC diagnostic pop
