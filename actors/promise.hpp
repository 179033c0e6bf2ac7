#pragma once

// A response promise that is always answered. CAF 0.17 has no broken
// promises: a request whose promise an actor held when it died (a bug, an
// exit) is never answered, and whoever waits on it (a parent gathering
// replies, a client) waits forever. Every promise an actor keeps across an
// asynchronous step is held through `promise<T>`: when the last copy goes
// without a delivery (the actor died, its callbacks and state destroyed),
// the requester gets `request_receiver_down`, as for a request still in a
// dead actor's mailbox.

#include <caf/error.hpp>
#include <caf/sec.hpp>
#include <caf/typed_response_promise.hpp>

#include <memory>
#include <utility>

namespace spool::actors {

template <class T>
class promise {
public:
  promise() = default;

  explicit promise(caf::typed_response_promise<T> rp) :
      st_(std::make_shared<state>(std::move(rp))) {
  }

  /// Answers (once: later deliveries are ignored).
  template <class... Ts>
  void deliver(Ts&&... xs) {
    if (st_ && !st_->done) {
      st_->done = true;
      st_->rp.deliver(std::forward<Ts>(xs)...);
    }
  }

  /// Hands the answer to `dest` (once).
  template <class Handle, class... Ts>
  void delegate(const Handle& dest, Ts&&... xs) {
    if (st_ && !st_->done) {
      st_->done = true;
      st_->rp.delegate(dest, std::forward<Ts>(xs)...);
    }
  }

  bool pending() const {
    return st_ && !st_->done && st_->rp.pending();
  }

  /// What a handler returns to say "answered later" (CAF reads only its
  /// type; answers go through this object).
  caf::typed_response_promise<T> later() const {
    return st_ ? st_->rp : caf::typed_response_promise<T>{};
  }
  operator caf::typed_response_promise<T>() const {
    return later();
  }

private:
  struct state {
    explicit state(caf::typed_response_promise<T> p) : rp(std::move(p)) {
    }
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
      if (!done && rp.pending())
        rp.deliver(caf::make_error(caf::sec::request_receiver_down));
    }
    caf::typed_response_promise<T> rp;
    bool done = false;
  };
  std::shared_ptr<state> st_;
};

/// The promise of the request `self` handles now.
template <class T, class Self>
promise<T> promise_for(Self* self) {
  return promise<T>{self->template make_response_promise<T>()};
}

} // namespace spool::actors
