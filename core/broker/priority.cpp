#include "core/broker/priority.hpp"

#include <algorithm>
#include <tuple>

namespace spool::core {

bool serves(std::string_view ns, std::string_view task, std::string_view pop_ns,
            const std::optional<std::string>& pop_task) {
  return !ns.empty() && ns == pop_ns && (!pop_task || *pop_task == task);
}

std::vector<std::size_t> serving_order(std::span<const queue_candidate> qs,
                                       storage::micros now,
                                       storage::micros max_starvation) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < qs.size(); ++i)
    if (qs[i].oldest_waiting)
      out.push_back(i);
  auto starved = [&](std::size_t i) {
    return now - *qs[i].oldest_waiting > max_starvation;
  };
  std::sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    bool sa = starved(a);
    bool sb = starved(b);
    if (sa != sb)
      return sa;
    if (sa) // both starved: the longest waiting first
      return std::tie(*qs[a].oldest_waiting, qs[a].name)
             < std::tie(*qs[b].oldest_waiting, qs[b].name);
    return std::make_tuple(-qs[a].priority, std::cref(qs[a].name))
           < std::make_tuple(-qs[b].priority, std::cref(qs[b].name));
  });
  return out;
}

} // namespace spool::core
