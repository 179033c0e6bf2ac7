#pragma once

// A writer in front of the real one for simulation tests: it records every
// batch in arrival order, and while closed holds them so a test can count,
// reorder and release writes (`flush`).

#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <deque>
#include <memory>
#include <variant>
#include <vector>

#include "actors/interfaces.hpp"

namespace spool::test {

/// What the gate saw and holds.
struct gate_state {
  bool closed = false;
  /// `flush` fails the held writes (an I/O error) instead of passing them.
  bool fail_held = false;
  /// Whether `seen` keeps a copy of every batch.
  bool keep = true;
  std::vector<storage::write_batch> seen; ///< every batch, in arrival order
  struct held_write {
    storage::write_batch batch;
    caf::typed_response_promise<actors::write_result> rp;
  };
  std::deque<held_write> held;
};

inline void forward(actors::writer_actor::pointer self,
                    actors::writer_actor real, storage::write_batch batch,
                    caf::typed_response_promise<actors::write_result> rp) {
  self->request(real, caf::infinite, actors::write_atom::value,
                std::move(batch))
      .then([rp](actors::write_result& r) mutable { rp.deliver(r); },
            [rp](caf::error&) mutable {
              rp.deliver(actors::write_result{
                  storage::make_error(storage::ec::io_error, "writer gone")});
            });
}

/// A writer in front of the real one: records every batch; while closed it
/// holds them; `flush` releases the held ones in `held` order (or fails
/// them, with `fail_held`).
inline actors::writer_actor::behavior_type
gate(actors::writer_actor::pointer self, std::shared_ptr<gate_state> st,
     actors::writer_actor real) {
  return {
      [=](actors::write_atom, storage::write_batch& b) {
        if (st->keep)
          st->seen.push_back(b);
        auto rp = self->make_response_promise<actors::write_result>();
        if (st->closed)
          st->held.push_back({std::move(b), rp});
        else
          forward(self, real, std::move(b), rp);
        return rp;
      },
      [=](actors::flush_atom) {
        while (!st->held.empty()) {
          auto w = std::move(st->held.front());
          st->held.pop_front();
          if (st->fail_held)
            w.rp.deliver(actors::write_result{
                storage::make_error(storage::ec::io_error, "injected")});
          else
            forward(self, real, std::move(w.batch), w.rp);
        }
      },
  };
}

template <class T>
std::size_t count_of(const storage::write_batch& b) {
  return static_cast<std::size_t>(
      std::count_if(b.mutations.begin(), b.mutations.end(),
                    [](auto& m) { return std::holds_alternative<T>(m); }));
}

} // namespace spool::test
