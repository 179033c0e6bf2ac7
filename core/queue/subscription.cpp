#include "core/queue/subscription.hpp"

#include <chrono>
#include <cstdint>

namespace spool::core {

namespace {

/// Reads exactly `n` digits at `pos`.
std::optional<int> digits(std::string_view s, std::size_t& pos, std::size_t n) {
  if (pos + n > s.size())
    return std::nullopt;
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto c = s[pos + i];
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + (c - '0');
  }
  pos += n;
  return v;
}

bool expect(std::string_view s, std::size_t& pos, std::string_view any_of) {
  if (pos >= s.size() || any_of.find(s[pos]) == std::string_view::npos)
    return false;
  ++pos;
  return true;
}

} // namespace

std::optional<storage::micros> parse_timestamp(std::string_view s) {
  using namespace std::chrono;
  std::size_t pos = 0;
  auto y = digits(s, pos, 4);
  if (!y || !expect(s, pos, "-"))
    return std::nullopt;
  auto mo = digits(s, pos, 2);
  if (!mo || !expect(s, pos, "-"))
    return std::nullopt;
  auto d = digits(s, pos, 2);
  if (!d || !expect(s, pos, "Tt "))
    return std::nullopt;
  auto h = digits(s, pos, 2);
  if (!h || !expect(s, pos, ":"))
    return std::nullopt;
  auto mi = digits(s, pos, 2);
  if (!mi || !expect(s, pos, ":"))
    return std::nullopt;
  auto sec = digits(s, pos, 2);
  if (!sec)
    return std::nullopt;
  std::int64_t frac_us = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    std::size_t n = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (n < 6)
        frac_us = frac_us * 10 + (s[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0)
      return std::nullopt;
    for (; n < 6; ++n)
      frac_us *= 10;
  }
  std::int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int sign = s[pos] == '-' ? -1 : 1;
    ++pos;
    auto oh = digits(s, pos, 2);
    if (!oh || !expect(s, pos, ":"))
      return std::nullopt;
    auto om = digits(s, pos, 2);
    if (!om || *oh > 23 || *om > 59)
      return std::nullopt;
    offset_s = sign * (*oh * 3600 + *om * 60);
  } else {
    return std::nullopt; // RFC 3339 requires an offset
  }
  if (pos != s.size())
    return std::nullopt;
  // 60 is a leap second (RFC 3339 allows it at the end of a UTC day only):
  // counted as the next second.
  if (*h > 23 || *mi > 59 || *sec > 60)
    return std::nullopt;
  auto utc_minute = ((*h * 60 + *mi - offset_s / 60) % 1440 + 1440) % 1440;
  if (*sec == 60 && utc_minute != 23 * 60 + 59)
    return std::nullopt;
  year_month_day date{year{*y}, month{static_cast<unsigned>(*mo)},
                      day{static_cast<unsigned>(*d)}};
  if (!date.ok())
    return std::nullopt;
  auto days = sys_days{date}.time_since_epoch().count();
  std::int64_t secs = static_cast<std::int64_t>(days) * 86'400 + *h * 3600
                      + *mi * 60 + *sec - offset_s;
  return secs * 1'000'000 + frac_us;
}

storage::subscription_record
registration(std::string_view group, const subscription_params& params,
             storage::subscription_mode server_default, storage::micros now) {
  using storage::subscription_mode;
  storage::subscription_record rec;
  rec.registered_at = now;
  auto set = [&](subscription_mode mode, storage::micros ts) {
    rec.mode = mode;
    rec.registered_mode = mode;
    rec.timestamp = mode == subscription_mode::all ? 0 : ts;
  };
  if (group == queue_mode_group)
    set(subscription_mode::all, 0);
  else if (!params.from.empty() && params.from != "now") {
    if (auto ts = parse_timestamp(params.from))
      set(subscription_mode::timestamp, *ts);
    else
      set(subscription_mode::new_only, now); // unparsable: new, not an error
  } else if (!params.from.empty())
    set(subscription_mode::new_only, now);
  else if (!params.mode.empty())
    set(params.mode == "new" || params.mode == "new-only"
            ? subscription_mode::new_only
            : subscription_mode::all,
        now);
  else
    set(server_default, now);
  return rec;
}

std::string_view to_string(storage::subscription_mode mode) {
  switch (mode) {
  case storage::subscription_mode::all:
    return "all";
  case storage::subscription_mode::new_only:
    return "new";
  case storage::subscription_mode::timestamp:
    return "timestamp";
  }
  return "all";
}

} // namespace spool::core
