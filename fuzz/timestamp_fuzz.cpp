// libFuzzer target: RFC 3339 parsing. Whatever parses formats back to a
// text that parses to the same instant; the run formatter (a pop's
// createdAt) writes the same text as format_micros, after any time before.

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
  static spool::timefmt::micros_formatter run; // keeps the last second
  if (run(*t) != spool::timefmt::format_micros(*t))
    std::abort();
  return 0;
}
