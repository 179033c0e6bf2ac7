#pragma once

// The gateway's implementation (internal to gateway/): the node's handle,
// the clocks, the token source and the table of pops in flight; `ask`
// sends one request from a helper actor of its own.

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <random>
#include <tuple>
#include <unordered_map>

#include "actors/write.hpp"
#include "gateway/convert.hpp"
#include "gateway/start.hpp"

namespace spool {

using gateway_detail::clocks;

struct gateway::impl {
  caf::actor_system& sys;
  actors::node_api node;
  std::function<micros()> wall;
  /// Tokens and generated transaction ids: this gateway's random prefix and
  /// a counter (unique on the node, never reused while it runs).
  std::string prefix;
  std::atomic<std::uint64_t> counter{0};
  /// The pops in flight by token, with their queue (none: a namespace
  /// pop), so that a cancel reaches only the queue where it is parked.
  std::mutex mx;
  std::unordered_map<std::string, std::optional<std::string>> pops;

  impl(caf::actor_system& s, actors::node_api n, std::function<micros()> w) :
      sys(s), node(std::move(n)), wall(std::move(w)) {
    std::random_device rd;
    std::mt19937_64 gen{(static_cast<std::uint64_t>(rd()) << 32) ^ rd()};
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx",
                  static_cast<unsigned long long>(gen()));
    prefix = buf;
  }

  std::string next_id() {
    char buf[64];
    auto n = counter.fetch_add(1, std::memory_order_relaxed);
    std::snprintf(buf, sizeof buf, "%.8s-%.4s-%.4s-%012llx", prefix.data(),
                  prefix.data() + 8, prefix.data() + 12,
                  static_cast<unsigned long long>(n));
    return buf;
  }

  /// Sends `xs...` to the node from a helper actor; `convert(reply,
  /// clocks)` makes the answer `k` gets (a CAF error: `internal`).
  template <class Reply, class T, class Convert, class... Ts>
  void ask(gateway::done<T> k, Convert convert, Ts... xs) {
    sys.spawn(
        [node = node, wall = wall, k = std::move(k),
         convert = std::move(convert), msg = std::make_tuple(std::move(xs)...)](
            caf::event_based_actor* self, int) mutable {
          std::apply(
              [&](auto&... args) {
                self->request(node, caf::infinite, std::move(args)...)
                    .then(
                        [self, wall, k, convert](Reply& r) mutable {
                          clocks now{self->clock().now(), wall()};
                          k(convert(r, now));
                        },
                        [k](caf::error& err) mutable {
                          k(expected<T>{actors::unreachable(err, "node")});
                        });
              },
              msg);
        },
        0); // the int: CAF 0.17's init_fun_factory binds a reference
            // through a null pointer for argument-less spawns (UBSan)
  }
};

} // namespace spool
