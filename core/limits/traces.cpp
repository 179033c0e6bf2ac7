#include "core/limits/traces.hpp"

#include <algorithm>
#include <string>

#include "core/limits/names.hpp"

namespace spool::core {

expected<void> check_trace(storage::trace_record& rec) {
  SPOOL_TRY(check_text("eventType", rec.event_type));
  SPOOL_TRY(check_text("consumerGroup", rec.consumer_group));
  SPOOL_TRY(check_text("workerId", rec.worker_id));
  if (rec.data.empty())
    return make_error(errc::invalid_argument, "data is required");
  if (rec.data.size() > max_trace_data)
    return make_error(errc::too_large, "data holds ", rec.data.size(),
                      " bytes; a trace holds at most ", max_trace_data);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < rec.names.size(); ++i) {
    auto& n = rec.names[i];
    auto where = "traceNames[" + std::to_string(i) + "]";
    if (n.empty())
      return make_error(errc::invalid_argument, where, " must not be empty");
    SPOOL_TRY(check_text(where.c_str(), n));
    if (std::find(names.begin(), names.end(), n) != names.end())
      continue;
    if (names.size() == max_trace_names) // before the next: never quadratic
      return make_error(errc::invalid_argument, "a trace carries at most ",
                        max_trace_names, " traceNames");
    names.push_back(std::move(n));
  }
  rec.names = std::move(names);
  return {};
}

} // namespace spool::core
