#pragma once

/// Asks several actors the same question and gathers their answers: the one
/// piece of code behind every queue-wide and broker-wide request (listings,
/// group deletion, purge). Answers come back in the order of `dests`; an
/// actor that failed to answer leaves its slot empty, with the error.

#include <caf/error.hpp>
#include <caf/local_actor.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace spool::actors {

template <class Reply>
struct fanned {
  std::optional<Reply> reply;
  caf::error error; ///< set when `reply` is empty
};

/// Sends `xs...` to every actor of `dests` and calls `done` once, with one
/// slot per destination, after the last answer (at once when `dests` is
/// empty).
template <class Reply, class Self, class Handle, class... Ts>
void fan_out(Self* self, const std::vector<Handle>& dests,
             std::function<void(std::vector<fanned<Reply>>)> done,
             const Ts&... xs) {
  if (dests.empty()) {
    done({});
    return;
  }
  struct gather {
    std::vector<fanned<Reply>> slots;
    std::size_t waiting;
    std::function<void(std::vector<fanned<Reply>>)> done;
  };
  auto g = std::make_shared<gather>(gather{
      std::vector<fanned<Reply>>(dests.size()), dests.size(), std::move(done)});
  for (std::size_t i = 0; i < dests.size(); ++i)
    self->request(dests[i], caf::infinite, xs...)
        .then(
            [g, i](Reply& r) {
              g->slots[i].reply = std::move(r);
              if (--g->waiting == 0)
                g->done(std::move(g->slots));
            },
            [g, i](caf::error& err) {
              g->slots[i].error = std::move(err);
              if (--g->waiting == 0)
                g->done(std::move(g->slots));
            });
}

} // namespace spool::actors
