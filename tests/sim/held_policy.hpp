#pragma once

// A durability policy the test releases by hand: what a replication quorum
// will do, deterministically.

#include <catch2/catch.hpp>

#include <functional>
#include <vector>

#include "core/writer/durability.hpp"

namespace spool::test {

/// A durability policy that holds every committed group until released
/// (what a replication quorum will do).
struct held_policy final : actors::durability_policy {
  struct group {
    std::vector<storage::slot_seq> marks;
    actors::durable_fn durable;
  };
  std::vector<group> held;
  void committed(std::vector<actors::durable_mark> marks,
                 actors::durable_fn k) override {
    std::vector<storage::slot_seq> at;
    for (auto& m : marks)
      at.push_back(m.at);
    held.push_back({std::move(at), std::move(k)});
  }
  const char* name() const noexcept override {
    return "held";
  }
  /// Declares the `i`th group held so far durable, but for the slots
  /// `lost`.
  void release(std::size_t i, std::vector<actors::lost_slot> lost = {}) {
    REQUIRE(i < held.size());
    REQUIRE(held[i].durable);
    auto k = std::move(held[i].durable);
    held[i].durable = nullptr;
    k(std::move(lost));
  }
  /// Whether a group waits to be declared durable.
  bool pending() const {
    for (auto& g : held)
      if (g.durable)
        return true;
    return false;
  }
  void release_all() {
    for (std::size_t i = 0; i < held.size(); ++i)
      if (held[i].durable)
        release(i);
  }
};

} // namespace spool::test
