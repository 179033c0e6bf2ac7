#include "core/broker/pop_checks.hpp"

#include <algorithm>

#include "core/limits/names.hpp"
#include "core/queue/subscription.hpp"

namespace spool::core {

expected<std::size_t> check_pop(const config::pop_limits& limits,
                                const pop_shape& pop) {
  auto bad = [](auto... parts) {
    return make_error(errc::invalid_argument, parts...);
  };
  if (pop.group.empty())
    return bad("consumer group must not be empty (queue mode is ",
               queue_mode_group, ")");
  SPOOL_TRY(check_name(name_kind::group, pop.group));
  if (pop.partition)
    SPOOL_TRY(check_name(name_kind::partition, *pop.partition));
  if (pop.batch < 1 || pop.batch > limits.max_batch)
    return bad("batch must be between 1 and ", limits.max_batch, ", got ",
               pop.batch);
  if (!pop.partition
      && (pop.partitions < 1 || pop.partitions > limits.max_partitions))
    return bad("partitions must be between 1 and ", limits.max_partitions,
               ", got ", pop.partitions);
  if (pop.wait
      && (pop.timeout.count() < 0
          || static_cast<std::uint64_t>(pop.timeout.count())
                 > limits.max_timeout_ms))
    return bad("timeout must be between 0 and ", limits.max_timeout_ms,
               " ms, got ", pop.timeout.count());
  return std::min<std::size_t>(pop.max_bytes, limits.max_bytes);
}

std::pair<std::string, std::string> namespace_and_task(const std::string& q) {
  auto first = q.find('.');
  if (first == std::string::npos)
    return {};
  auto second = q.find('.', first + 1);
  return {q.substr(0, first), q.substr(first + 1, second == std::string::npos
                                                      ? std::string::npos
                                                      : second - first - 1)};
}

} // namespace spool::core
