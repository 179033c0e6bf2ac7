#include "protocol/api/queue_directory.hpp"

#include <algorithm>

#include "vocab/slot.hpp"

namespace spool::api {

std::optional<std::string> queue_directory::name_of(std::uint64_t id) const {
  std::lock_guard lock{m_};
  if (auto it = names_.find(id); it != names_.end())
    return it->second;
  return std::nullopt;
}

void queue_directory::learn(std::uint64_t id, const std::string& name) {
  std::lock_guard lock{m_};
  names_.try_emplace(id, name);
}

void queue_directory::learn_id(std::string_view id, const std::string& name) {
  if (auto q = queue_of_id(id))
    learn(*q, name);
}

bool queue_directory::all_known(const std::vector<std::uint64_t>& ids) const {
  return std::all_of(ids.begin(), ids.end(),
                     [&](std::uint64_t id) { return names_.contains(id); });
}

void queue_directory::resolve(
    gateway& gw, const std::vector<std::uint64_t>& ids,
    std::function<void(std::optional<api_error>)> then) {
  {
    std::lock_guard lock{m_};
    if (!all_known(ids)) {
      if (refreshing_) {
        // The listing in flight may have been read before these queues
        // were made: the next one answers them.
        next_.push_back(std::move(then));
        return;
      }
      refreshing_ = true;
      waiting_.push_back(std::move(then));
      then = nullptr;
    }
  }
  if (then)
    return then(std::nullopt); // outside the lock: it reads names
  list(gw);
}

void queue_directory::list(gateway& gw) {
  // The listing may answer after the doors closed: it holds the table.
  gw.queues(std::nullopt, [self = shared_from_this(), g = &gw](
                              expected<std::vector<node::queue_info>> qs) {
    self->refreshed(*g, qs);
  });
}

void queue_directory::refreshed(
    gateway& gw, const expected<std::vector<node::queue_info>>& qs) {
  std::vector<std::function<void(std::optional<api_error>)>> run;
  bool again = false;
  {
    std::lock_guard lock{m_};
    if (qs)
      for (auto& q : *qs)
        names_.try_emplace(q.id, q.name);
    run.swap(waiting_);
    again = !next_.empty();
    if (again)
      waiting_.swap(next_);
    else
      refreshing_ = false;
  }
  std::optional<api_error> failed;
  if (!qs)
    failed = qs.err(); // the listing's failure answers its waiters
  for (auto& f : run)
    f(failed);
  if (again)
    list(gw);
}

} // namespace spool::api
