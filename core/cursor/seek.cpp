#include "core/cursor/seek.hpp"

#include <algorithm>
#include <limits>

namespace spool::core {

namespace {

/// a + b without overflow (saturating at the int64 limits).
std::int64_t add_saturated(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out))
    return b > 0 ? std::numeric_limits<std::int64_t>::max()
                 : std::numeric_limits<std::int64_t>::min();
  return out;
}

} // namespace

expected<seek_rule> seek_rule_of(const seek_target& t) {
  if (t.to_end)
    return seek_rule::to_end;
  if (t.timestamp)
    return seek_rule::timestamp;
  if (t.to_start)
    return seek_rule::to_start;
  if (t.offset)
    return seek_rule::offset;
  if (t.shift_by)
    return seek_rule::shift_by;
  return make_error(errc::invalid_argument,
                    "Must specify toEnd=true or a timestamp");
}

storage::offset seek_position(seek_rule rule, const seek_target& t,
                              const seek_bounds& b) {
  auto low = (b.watermark - 1).value;
  auto high = std::max(b.last_offset.value, low);
  std::int64_t want = high;
  switch (rule) {
  case seek_rule::to_end:
    want = high;
    break;
  case seek_rule::timestamp:
    want = b.walked ? b.walked->value : high;
    break;
  case seek_rule::to_start:
    want = low;
    break;
  case seek_rule::offset:
    want = add_saturated(t.offset.value_or(0), -1);
    break;
  case seek_rule::shift_by:
    want = add_saturated(std::max(b.committed.value, low),
                         t.shift_by.value_or(0));
    break;
  }
  return storage::offset{std::clamp(want, low, high)};
}

seek_plan plan_seek(const cursor_core& core, seek_rule rule,
                    const seek_target& t, storage::offset watermark,
                    storage::offset last_offset,
                    std::optional<storage::offset> walked,
                    storage::micros wall) {
  seek_plan p;
  p.before = core.committed();
  p.after = seek_position(rule, t,
                          {watermark, last_offset, core.committed(), walked});
  p.record = core.record_after_seek(p.after, wall);
  return p;
}

} // namespace spool::core
