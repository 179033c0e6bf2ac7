// libFuzzer target: RFC 3339 parsing. Whatever parses formats back to a
// text that parses to the same instant; the run formatter (a pop's
// createdAt) writes the same text as format_micros over a run of times
// around it.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "wire/rfc3339.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  std::string_view s{reinterpret_cast<const char*>(data), size};
  auto t = spool::timefmt::parse_rfc3339(s);
  if (!t)
    return 0;
  auto again = spool::timefmt::parse_rfc3339(spool::timefmt::format_micros(*t));
  if (!again || *again != *t)
    std::abort();
  // A run of times from this input alone (so a crash replays): the same
  // second reused, the next, the one before, and back.
  spool::timefmt::micros_formatter run;
  auto frac = static_cast<spool::micros>(size * 7919 % 1'000'000);
  auto second = *t - *t % 1'000'000;
  for (spool::micros v :
       {*t, second + frac, *t + 1'000'000, *t - 1'000'000, *t, second})
    if (run(v) != spool::timefmt::format_micros(v))
      std::abort();
  return 0;
}
