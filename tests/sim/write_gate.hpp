#pragma once

// A writer in front of the real one for simulation tests: it records every
// batch in arrival order, and while closed holds them so a test can count,
// reorder and release writes (`flush`). It is also the fault-injection seam
// (`gate_state::inject`): fail the Nth batch from now, every batch a
// predicate picks (say, one holding a given mutation type), with an I/O
// error or "storage full", or stall batches until the test lets them go.

#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <variant>
#include <vector>

#include "actors/interfaces.hpp"
#include "actors/write.hpp"

namespace spool::test {

/// Which batches fail, and how.
struct fault_plan {
  /// The Nth batch from now fails (1 = the next one); 0 = none.
  std::size_t nth = 0;
  /// Every batch this picks fails (unset = none).
  std::function<bool(const storage::write_batch&)> when;
  /// How many batches may still fail (SIZE_MAX = no limit).
  std::size_t times = SIZE_MAX;
  /// What a failed batch answers: `io_error` or `storage_full`.
  errc code = errc::internal;
  /// Picked batches are held (as if `closed`, and every later batch behind
  /// them) instead of failed; `flush` lets them go.
  bool stall = false;
};

/// What the gate saw and holds.
struct gate_state {
  bool closed = false;
  /// Faults to inject (`inject`); every batch is counted in `batches`.
  fault_plan faults;
  std::size_t batches = 0;
  /// Batches failed by the plan.
  std::size_t failed = 0;
  void inject(fault_plan plan) {
    faults = std::move(plan);
  }
  /// Whether the plan picks `b` (counting it).
  bool picks(const storage::write_batch& b) {
    auto& f = faults;
    bool hit = false;
    if (f.nth > 0 && --f.nth == 0)
      hit = true;
    if (f.when && f.when(b))
      hit = true;
    if (!hit || f.times == 0)
      return false;
    if (f.times != SIZE_MAX)
      --f.times;
    return true;
  }
  /// `flush` fails the held writes (with `held_code`, counted in `failed`)
  /// instead of passing them.
  bool fail_held = false;
  errc held_code = errc::internal;
  /// Whether `seen` keeps a copy of every batch.
  bool keep = true;
  std::vector<storage::write_batch> seen; ///< every batch, in arrival order
  struct held_write {
    actors::submission sub;
    caf::typed_response_promise<actors::write_result> rp;
    bool proposal = false; ///< came as `propose` (with parts), not `write`
  };
  std::deque<held_write> held;
};

inline void forward(actors::writer_actor::pointer self,
                    actors::writer_actor real, gate_state::held_write w) {
  auto rp = w.rp;
  auto answer = [rp](actors::write_result& r) mutable { rp.deliver(r); };
  auto gone = [rp](caf::error&) mutable {
    rp.deliver(actors::write_result{make_error(errc::internal, "writer gone")});
  };
  if (w.proposal)
    self->request(real, caf::infinite, actors::propose_atom::value,
                  std::move(w.sub))
        .then(answer, gone);
  else
    self->request(real, caf::infinite, actors::write_atom::value,
                  std::move(w.sub.batch))
        .then(answer, gone);
}

/// Fails a write the gate took: a proposal's parts are given up first (as
/// the writer settles them before it answers).
inline void fail(actors::writer_actor::pointer self, actors::writer_actor real,
                 gate_state::held_write& w, api_error err) {
  actors::abort_parts(self, real, std::move(w.sub.parts));
  w.rp.deliver(actors::write_result{std::move(err)});
}

/// What the gate does with a write (`write` or `propose`) that arrives.
inline void take(actors::writer_actor::pointer self,
                 std::shared_ptr<gate_state> st, actors::writer_actor real,
                 gate_state::held_write w) {
  if (st->keep)
    st->seen.push_back(w.sub.batch);
  ++st->batches;
  bool picked = st->picks(w.sub.batch);
  if (picked && !st->faults.stall) {
    ++st->failed;
    fail(self, real, w,
         make_error(st->faults.code, "injected ", to_string(st->faults.code)));
    return;
  }
  // A stalled batch holds every later one behind it, as a hung sync
  // holds the writer.
  if (st->closed || picked || (st->faults.stall && !st->held.empty()))
    st->held.push_back(std::move(w));
  else
    forward(self, real, std::move(w));
}

/// A writer in front of the real one: records every batch; while closed it
/// holds them; `flush` releases the held ones in `held` order (or fails
/// them, with `fail_held`).
inline actors::writer_actor::behavior_type
gate(actors::writer_actor::pointer self, std::shared_ptr<gate_state> st,
     actors::writer_actor real) {
  return {
      [=](actors::write_atom, storage::write_batch& b) {
        auto rp = self->make_response_promise<actors::write_result>();
        take(self, st, real, {{std::move(b), {}}, rp, false});
        return rp;
      },
      [=](actors::propose_atom, actors::submission& s) {
        auto rp = self->make_response_promise<actors::write_result>();
        take(self, st, real, {std::move(s), rp, true});
        return rp;
      },
      [=](actors::hold_atom, actors::part_ref& part) {
        self->send(real, actors::hold_atom::value, std::move(part));
      },
      [=](actors::abort_atom, std::vector<actors::part_ref>& parts) {
        self->send(real, actors::abort_atom::value, std::move(parts));
      },
      [=](actors::flush_atom) {
        while (!st->held.empty()) {
          auto w = std::move(st->held.front());
          st->held.pop_front();
          if (st->fail_held) {
            ++st->failed;
            fail(self, real, w,
                 make_error(st->held_code, "injected ",
                            to_string(st->held_code), " (held)"));
          } else
            forward(self, real, std::move(w));
        }
      },
      [=](actors::durable_atom, std::uint16_t slot, std::uint64_t seq) {
        auto rp = self->make_response_promise<actors::write_result>();
        self->request(real, caf::infinite, actors::durable_atom::value, slot,
                      seq)
            .then([rp](actors::write_result& r) mutable { rp.deliver(r); },
                  [rp](caf::error&) mutable {
                    rp.deliver(actors::write_result{
                        make_error(errc::internal, "writer gone")});
                  });
        return rp;
      },
      // The real writer's internal messages: never sent to the gate.
      [=](actors::flush_atom, std::uint64_t) {},
      [=](actors::durable_atom, std::uint64_t) {},
      [=](actors::timeout_atom, std::uint64_t) {},
  };
}

template <class T>
std::size_t count_of(const storage::write_batch& b) {
  return static_cast<std::size_t>(
      std::count_if(b.mutations.begin(), b.mutations.end(),
                    [](auto& m) { return std::holds_alternative<T>(m); }));
}

/// A plan failing the batches that hold a `T` mutation, `times` of them.
template <class T>
fault_plan fail_batches_with(std::size_t times = SIZE_MAX) {
  fault_plan f;
  f.when = [](const storage::write_batch& b) { return count_of<T>(b) > 0; };
  f.times = times;
  return f;
}

} // namespace spool::test
