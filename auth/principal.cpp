#include "auth/principal.hpp"

#include <algorithm>

namespace spool::auth {

bool principal::may_use_queue(std::string_view name) const {
  if (!queue_prefixes)
    return true;
  return std::any_of(queue_prefixes->begin(), queue_prefixes->end(),
                     [&](const std::string& p) { return name.starts_with(p); });
}

bool principal::may_use_group(std::string_view name) const {
  if (!groups)
    return true;
  return std::find(groups->begin(), groups->end(), name) != groups->end();
}

} // namespace spool::auth
