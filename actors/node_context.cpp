#include "actors/node_context.hpp"

namespace spool::actors {

expected<void> node_context::validate(const char* who) const {
  auto missing = [who](const char* what) {
    return make_error(errc::invalid_argument, who, ": no ", what);
  };
  if (!store)
    return missing("store");
  if (!writer)
    return missing("writer");
  if (!wall)
    return missing("wall clock");
  if (segments.max_frames == 0 || segments.max_bytes == 0)
    return make_error(errc::invalid_argument, who,
                      ": segment limits must be positive");
  if (retention_interval.count() <= 0 || delete_step == 0)
    return make_error(errc::invalid_argument, who,
                      ": retention interval and delete step must be "
                      "positive");
  return {};
}

} // namespace spool::actors
