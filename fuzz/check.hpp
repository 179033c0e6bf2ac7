#pragma once

// What the request fuzz targets require of a reader's answer: a value, or
// a 400-class API error with a message that `write` can put on the wire.

#include <cstdlib>

#include "vocab/expected.hpp"

namespace spool::fuzz {

template <class T, class Write>
void check(const expected<T>& r, Write write) {
  if (r)
    return;
  auto code = r.err().code;
  if (code != errc::bad_request && code != errc::invalid_argument)
    std::abort();
  if (r.err().message.empty())
    std::abort();
  write(r.err().message);
}

} // namespace spool::fuzz
