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
    std::function<void()> durable;
  };
  std::vector<group> held;
  void committed(std::vector<storage::slot_seq> marks,
                 std::function<void()> k) override {
    held.push_back({std::move(marks), std::move(k)});
  }
  const char* name() const noexcept override {
    return "held";
  }
  /// Declares the `i`th group held so far durable.
  void release(std::size_t i) {
    REQUIRE(i < held.size());
    REQUIRE(held[i].durable);
    auto k = std::move(held[i].durable);
    held[i].durable = nullptr;
    k();
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
