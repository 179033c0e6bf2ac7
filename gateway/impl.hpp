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

#include "actors/metrics.hpp"
#include "actors/write.hpp"
#include "gateway/convert.hpp"
#include "gateway/start.hpp"

namespace spool {

using gateway_detail::clocks;

namespace gateway_detail {

/// The reply's failure, or `f(reply)`.
template <class Reply, class F>
auto or_failure(Reply& r, F f) -> expected<decltype(f(r))> {
  if (r.failure)
    return *r.failure;
  return f(r);
}

} // namespace gateway_detail

struct gateway::impl {
  caf::actor_system& sys;
  actors::node_api node;
  std::function<micros()> wall;
  std::shared_ptr<const actors::node_metrics> metrics; ///< none: not kept
  gateway::promoter promote;                           ///< none: one node
  gateway::slot_reporter slot_report;                  ///< none: one node
  gateway::slot_server served;                         ///< none: one node
  /// Decrypts payloads stored encrypted at rest; none: no key configured.
  std::shared_ptr<const cipher::keyring> encryption_keys;
  /// Pop tokens: this gateway's random prefix and a counter (unique on the
  /// node, never reused while it runs).
  std::string prefix;
  std::atomic<std::uint64_t> counter{0};
  /// The pops in flight by token, each with the helper that sent it: a
  /// cancel goes through that helper, so it reaches the broker after the
  /// pop (one sender, in order) and only the pop's queue. Shared with the
  /// helpers, which may outlive the gateway.
  struct pop_table {
    struct entry {
      caf::actor helper; ///< null until the spawn returned
      bool cancelled = false;
    };
    std::mutex mx;
    std::unordered_map<std::string, entry> pops;
    /// Set by `cancel_all` (a node shutting down): a pop that comes later
    /// is cancelled as it starts, so none parks past the shutdown.
    bool closed = false;
    void erase(const std::string& token) {
      std::lock_guard lock{mx};
      pops.erase(token);
    }
  };
  std::shared_ptr<pop_table> pops = std::make_shared<pop_table>();

  impl(caf::actor_system& s, actors::node_api n, std::function<micros()> w) :
      sys(s), node(std::move(n)), wall(std::move(w)) {
    std::random_device rd;
    std::mt19937_64 gen{(static_cast<std::uint64_t>(rd()) << 32) ^ rd()};
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx",
                  static_cast<unsigned long long>(gen()));
    prefix = buf;
  }

  /// A pop token, `rrrr-rrrr-cccccccccccc`: 32 random bits, then the
  /// counter. The queue that grants the lease puts its id in front
  /// (`lease_id_of`), which makes the lease id UUID-shaped.
  std::string next_id() {
    char buf[32];
    auto n = counter.fetch_add(1, std::memory_order_relaxed);
    std::snprintf(buf, sizeof buf, "%.4s-%.4s-%012llx", prefix.data(),
                  prefix.data() + 4,
                  static_cast<unsigned long long>(n & 0xFFFF'FFFF'FFFFull));
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

  /// A pop (`msg`: the tuple after `pop_atom`): as `ask`, from a helper that
  /// stays until the answer and passes a cancel on (to `queue` only; none: the
  /// broker's parked namespace pops). A token already in flight is refused.
  template <class Reply, class Convert, class Msg>
  void ask_pop(const std::string& token, std::optional<std::string> queue,
               gateway::done<node::pop_reply> k, Convert convert, Msg msg) {
    bool in_flight = false;
    {
      std::lock_guard lock{pops->mx};
      auto [it, fresh] = pops->pops.try_emplace(token);
      in_flight = !fresh;
      if (fresh && pops->closed)
        it->second.cancelled = true; // answered at once (after the spawn)
    }
    if (in_flight) // answered outside the lock (it may call the gateway)
      return k(make_error(errc::invalid_argument, "pop token ", token,
                          " is already in flight"));
    auto helper = sys.spawn(
        [node = node, wall = wall, k = std::move(k),
         convert = std::move(convert), msg = std::move(msg), token, queue,
         table = pops](caf::event_based_actor* self,
                       int) mutable -> caf::behavior {
          std::apply(
              [&](auto&... args) {
                self->request(node, caf::infinite, actors::pop_atom::value,
                              std::move(args)...)
                    .then(
                        [self, wall, k, convert, token,
                         table](Reply& r) mutable {
                          clocks now{self->clock().now(), wall()};
                          table->erase(token); // before the caller sees it
                          k(convert(r, now));
                          self->quit();
                        },
                        [self, k, token, table](caf::error& err) mutable {
                          table->erase(token);
                          k(expected<node::pop_reply>{
                              actors::unreachable(err, "node")});
                          self->quit();
                        });
              },
              msg);
          return {[self, node, token, queue](actors::cancel_atom) {
            self->send(node, actors::cancel_atom::value, token, queue);
          }};
        },
        0);
    std::lock_guard lock{pops->mx};
    auto it = pops->pops.find(token);
    if (it == pops->pops.end())
      return; // answered already
    it->second.helper = helper;
    if (it->second.cancelled)
      caf::anon_send(helper, actors::cancel_atom::value);
  }
};

} // namespace spool
