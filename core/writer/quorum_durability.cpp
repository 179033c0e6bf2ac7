#include "core/writer/quorum_durability.hpp"

#include <algorithm>
#include <utility>

namespace spool::actors {

bool quorum_durability::covered(const group& g) const {
  return std::all_of(g.marks.begin(), g.marks.end(), [&](const auto& m) {
    auto it = commit_.find(m.slot);
    return it != commit_.end() && it->second >= m.seq;
  });
}

std::vector<std::function<void()>> quorum_durability::release() {
  std::vector<std::function<void()>> out;
  while (!waiting_.empty() && covered(waiting_.front())) {
    out.push_back(std::move(waiting_.front().durable));
    waiting_.pop_front();
  }
  return out;
}

void quorum_durability::committed(std::vector<storage::slot_seq> marks,
                                  std::function<void()> durable) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lock{mu_};
    waiting_.push_back({std::move(marks), std::move(durable)});
    ready = release();
  }
  // Outside the lock: a callback may hand the writer its next group.
  for (auto& f : ready)
    f();
}

void quorum_durability::advance(slot_t s, std::uint64_t seq) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lock{mu_};
    auto& c = commit_[s];
    if (seq <= c)
      return;
    c = seq;
    ready = release();
  }
  for (auto& f : ready)
    f();
}

std::size_t quorum_durability::waiting() const {
  std::lock_guard lock{mu_};
  return waiting_.size();
}

} // namespace spool::actors
