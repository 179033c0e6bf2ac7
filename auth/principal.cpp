#include "auth/principal.hpp"

#include <algorithm>

#include "vocab/queries.hpp"

namespace spool::auth {

bool principal::may_use_queue(std::string_view name) const {
  return named_by_prefixes(name, queue_prefixes);
}

bool principal::may_use_group(std::string_view name) const {
  if (!groups)
    return true;
  return std::find(groups->begin(), groups->end(), name) != groups->end();
}

} // namespace spool::auth
