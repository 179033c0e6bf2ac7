#pragma once

/// A cluster's durability policy (docs/cluster.md): a committed group is
/// durable once every slot it wrote is committed by replication at or past
/// the group's seq there, i.e. a majority of the slot's replicas synced it.
/// The slot's replica core raises the commit point (`advance`, from its
/// `ready::committed`). Groups are declared durable in commit order, so a
/// group waits for every group committed before it. Any thread. No CAF.

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/writer/durability.hpp"
#include "vocab/slot.hpp"

namespace spool::actors {

class quorum_durability final : public durability_policy {
public:
  void committed(std::vector<storage::slot_seq> marks,
                 std::function<void()> durable) override;
  const char* name() const noexcept override {
    return "quorum";
  }
  /// Slot `s` is committed through `seq` (a commit point never goes back:
  /// a lower one changes nothing). Runs the `durable` of every group this
  /// covers, and of the groups after it that were covered already.
  void advance(slot_t s, std::uint64_t seq);
  /// Groups committed and not yet durable.
  std::size_t waiting() const;

private:
  struct group {
    std::vector<storage::slot_seq> marks;
    std::function<void()> durable;
  };
  bool covered(const group& g) const;
  /// Takes the covered groups off the front, under the lock.
  std::vector<std::function<void()>> release();

  mutable std::mutex mu_;
  std::unordered_map<slot_t, std::uint64_t> commit_;
  std::deque<group> waiting_;
};

} // namespace spool::actors
