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

#include "actors/interfaces.hpp"

namespace spool::actors {

template <class Reply>
struct fanned {
  std::optional<Reply> reply;
  caf::error error; ///< set when `reply` is empty
};

/// Asks `n` questions, `ask(i)` sending the i-th (it returns the request's
/// response handle), and calls `done` once, with one slot per question,
/// after the last answer (at once when `n` is 0).
template <class Reply, class Ask>
void gather(std::size_t n, Ask ask,
            std::function<void(std::vector<fanned<Reply>>)> done) {
  if (n == 0) {
    done({});
    return;
  }
  struct state {
    std::vector<fanned<Reply>> slots;
    std::size_t waiting;
    std::function<void(std::vector<fanned<Reply>>)> done;
  };
  auto g = std::make_shared<state>(
      state{std::vector<fanned<Reply>>(n), n, std::move(done)});
  for (std::size_t i = 0; i < n; ++i)
    ask(i).then(
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

/// Sends `xs...` to every actor of `dests` and calls `done` once, with one
/// slot per destination, after the last answer.
template <class Reply, class Self, class Handle, class... Ts>
void fan_out(Self* self, const std::vector<Handle>& dests,
             std::function<void(std::vector<fanned<Reply>>)> done,
             const Ts&... xs) {
  gather<Reply>(
      dests.size(),
      [&](std::size_t i) {
        return self->request(dests[i], caf::infinite, xs...);
      },
      std::move(done));
}

/// The sum of DLQ counts; the first failure (or unanswered slot) wins.
inline dlq_count_reply total_of(std::vector<fanned<dlq_count_reply>>& slots) {
  dlq_count_reply total;
  for (auto& s : slots) {
    if (!s.reply) {
      if (!total.failure)
        total.failure = storage::make_error(
            storage::ec::io_error,
            "actor unreachable: ", caf::to_string(s.error));
      continue;
    }
    total.count += s.reply->count;
    if (s.reply->failure && !total.failure)
      total.failure = s.reply->failure;
  }
  return total;
}

} // namespace spool::actors
