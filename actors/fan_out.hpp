#pragma once

/// Asks several actors the same question and gathers their answers: the one
/// piece of code behind every queue-wide and broker-wide request (listings,
/// group deletion, purge). Answers come back in the order of `dests`; an
/// actor that failed to answer leaves its slot empty, with the error.

#include <caf/error.hpp>
#include <caf/local_actor.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "actors/interfaces.hpp"
#include "actors/write.hpp"

namespace spool::actors {

template <class Reply>
struct fanned {
  std::optional<Reply> reply;
  caf::error error; ///< set when `reply` is empty
};

/// At most this many questions of one gather are outstanding at a time.
/// CAF 0.17 keeps an actor's pending response handlers in a flat map that
/// is searched linearly (`detail::unordered_flat_map`), so n requests in
/// flight at once cost O(n²): 10,000 at once took 70-100 ms on this
/// machine, the same 10,000 in windows of 64 took 10 ms (bench/README.md).
inline constexpr std::size_t gather_window = 64;

namespace detail {

template <class Reply, class Ask>
struct gather_state {
  std::vector<fanned<Reply>> slots;
  std::size_t next = 0;
  std::size_t waiting;
  Ask ask;
  std::function<void(std::vector<fanned<Reply>>)> done;
};

template <class Reply, class Ask>
void gather_next(std::shared_ptr<gather_state<Reply, Ask>> g) {
  auto i = g->next++;
  auto answered = [g] {
    if (--g->waiting == 0)
      g->done(std::move(g->slots));
    else if (g->next < g->slots.size())
      gather_next(g);
  };
  g->ask(i).then(
      [g, i, answered](Reply& r) {
        g->slots[i].reply = std::move(r);
        answered();
      },
      [g, i, answered](caf::error& err) {
        g->slots[i].error = std::move(err);
        answered();
      });
}

} // namespace detail

/// Asks `n` questions, `ask(i)` sending the i-th (it returns the request's
/// response handle), and calls `done` once, with one slot per question,
/// after the last answer (at once when `n` is 0). At most `gather_window`
/// questions are in flight: `ask` is kept and called again as answers come
/// in, so it must own (not borrow) what it sends.
template <class Reply, class Ask>
void gather(std::size_t n, Ask ask,
            std::function<void(std::vector<fanned<Reply>>)> done) {
  if (n == 0) {
    done({});
    return;
  }
  auto g = std::make_shared<detail::gather_state<Reply, Ask>>(
      detail::gather_state<Reply, Ask>{std::vector<fanned<Reply>>(n), 0, n,
                                       std::move(ask), std::move(done)});
  for (std::size_t k = 0; k < std::min(n, gather_window); ++k)
    detail::gather_next(g);
}

/// Sends `xs...` to every actor of `dests` and calls `done` once, with one
/// slot per destination, after the last answer.
template <class Reply, class Self, class Handle, class... Ts>
void fan_out(Self* self, const std::vector<Handle>& dests,
             std::function<void(std::vector<fanned<Reply>>)> done,
             const Ts&... xs) {
  gather<Reply>(
      dests.size(),
      [self, dests, xs...](std::size_t i) {
        return self->request(dests[i], caf::infinite, xs...);
      },
      std::move(done));
}

/// A slot's answer, or (unanswered) a reply failed with `who` unreachable.
template <class Reply>
Reply or_failed(fanned<Reply>& slot, const char* who = "actor") {
  return slot.reply ? std::move(*slot.reply)
                    : failed<Reply>(unreachable(slot.error, who));
}

/// Folds the answers of a fan-out into one reply of their type: `add(out,
/// part)` for every answer; the first failure, an answer's own or an
/// unanswered slot's (`who` unreachable), becomes the reply's.
template <class Reply, class Add>
Reply fold_replies(std::vector<fanned<Reply>>& slots, Add add,
                   const char* who = "actor") {
  Reply out;
  for (auto& s : slots) {
    if (!s.reply) {
      if (!out.failure)
        out.failure = unreachable(s.error, who);
      continue;
    }
    if (s.reply->failure && !out.failure)
      out.failure = s.reply->failure;
    add(out, *s.reply);
  }
  return out;
}

/// The sum of DLQ counts; the first failure (or unanswered slot) wins.
inline dlq_count_reply total_of(std::vector<fanned<dlq_count_reply>>& slots) {
  return fold_replies(slots,
                      [](dlq_count_reply& total, const dlq_count_reply& part) {
                        total.count += part.count;
                        total.remaining += part.remaining;
                      });
}

} // namespace spool::actors
