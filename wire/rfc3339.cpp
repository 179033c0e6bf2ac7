#include "wire/rfc3339.hpp"

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
    // UTC, the wire's own form: read by hand (date's stream parser cost a
    // client most of its time decoding a pop's createdAt), when every
    // field is in range; anything else takes date's path below.
    auto num = [&](std::size_t at, std::size_t n) {
      int v = 0;
      for (std::size_t k = at; k < at + n; ++k)
        v = v * 10 + (norm[k] - '0');
      return v;
    };
    using namespace date;
    year_month_day ymd{year{num(0, 4)}, month{static_cast<unsigned>(num(5, 2))},
                       day{static_cast<unsigned>(num(8, 2))}};
    int h = num(11, 2), m = num(14, 2), sec = num(17, 2);
    if (ymd.ok() && h < 24 && m < 60 && sec < 60) {
      auto days = sys_days{ymd}.time_since_epoch();
      return std::chrono::duration_cast<std::chrono::microseconds>(days).count()
             + ((h * 60 + m) * 60 + sec) * std::int64_t{1'000'000} + num(20, 6);
    }
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

namespace {

/// `YYYY-MM-DDTHH:MM:SS.<frac>Z` with `frac_digits` (3 or 6) of the
/// microseconds, written by hand: an answer writes one per message, and
/// date::format (an ostream, its locale) cost a tenth of a pop's CPU.
std::string format_time(micros t, int frac_digits) {
  using namespace std::chrono;
  date::sys_time<microseconds> tp{microseconds{t}};
  auto day = date::floor<date::days>(tp);
  date::year_month_day ymd{day};
  auto us = (tp - day).count(); // within the day, >= 0
  auto sec = us / 1'000'000;
  auto frac = us % 1'000'000;
  int y = static_cast<int>(ymd.year());
  if (y < 0 || y > 9999) // outside RFC 3339's years: date's general form
    return date::format("%FT%TZ", tp);
  char buf[32];
  auto put = [&](int at, std::int64_t v, int n) {
    for (int i = n - 1; i >= 0; --i, v /= 10)
      buf[at + i] = static_cast<char>('0' + v % 10);
  };
  put(0, y, 4);
  buf[4] = '-';
  put(5, static_cast<unsigned>(ymd.month()), 2);
  buf[7] = '-';
  put(8, static_cast<unsigned>(ymd.day()), 2);
  buf[10] = 'T';
  put(11, sec / 3600, 2);
  buf[13] = ':';
  put(14, sec / 60 % 60, 2);
  buf[16] = ':';
  put(17, sec % 60, 2);
  buf[19] = '.';
  put(20, frac_digits == 3 ? frac / 1000 : frac, frac_digits);
  buf[20 + frac_digits] = 'Z';
  return std::string{buf, static_cast<std::size_t>(21 + frac_digits)};
}

} // namespace

std::string format_micros(micros t) {
  return format_time(t, 6);
}

std::string_view micros_formatter::operator()(micros t) {
  auto second = t / 1'000'000; // floored: the second a negative time is in
  if (t % 1'000'000 < 0)
    --second;
  if (second != second_) {
    auto text = format_micros(t);
    if (text.size() != sizeof buf_) {
      second_ = INT64_MIN;
      other_ = std::move(text);
      return other_;
    }
    std::copy(text.begin(), text.end(), buf_);
    second_ = second;
    return {buf_, sizeof buf_};
  }
  auto frac = t - second * 1'000'000;
  for (int i = 25; i >= 20; --i, frac /= 10)
    buf_[i] = static_cast<char>('0' + frac % 10);
  return {buf_, sizeof buf_};
}

std::string format_millis(micros t) {
  return format_time(t, 3);
}

} // namespace spool::timefmt

#pragma GCC diagnostic pop
