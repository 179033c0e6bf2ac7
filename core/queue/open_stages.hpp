#pragma once

/// Stages open on each child of a coordinator (a queue's partitions, the
/// broker's queues): staged through it, not settled yet. A child that dies
/// with one open is respawned only once they all settled: their batch may
/// be written after the child's barrier, and its successor must read the
/// rows it writes. `Waiting` is what the respawn needs (the dead actor's
/// address, or the respawn itself). Pure: no CAF include.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace spool::core {

template <class Waiting>
class open_stages {
public:
  /// A stage opened on `name`.
  void opened(const std::string& name) {
    ++open_[name];
  }

  bool is_open(const std::string& name) const {
    return open_.contains(name);
  }

  /// Defers the respawn of `name` until its open stages closed; false (the
  /// respawn may go now) when none is open.
  bool defer(const std::string& name, Waiting w) {
    if (!is_open(name))
      return false;
    waiting_.insert_or_assign(name, std::move(w));
    return true;
  }

  /// A stage on `name` closed: the respawn that waited for the last one.
  std::optional<Waiting> closed(const std::string& name) {
    auto it = open_.find(name);
    if (it == open_.end() || --it->second > 0)
      return std::nullopt;
    open_.erase(it);
    auto w = waiting_.find(name);
    if (w == waiting_.end())
      return std::nullopt;
    auto out = std::move(w->second);
    waiting_.erase(w);
    return out;
  }

private:
  std::map<std::string, std::size_t> open_;
  std::map<std::string, Waiting> waiting_;
};

} // namespace spool::core
