#pragma once

/// Long-poll requests of one actor (semantics.md §3): the one piece behind
/// the queue's pops and the broker's namespace pops. A request runs once
/// (`submit`); if it finds nothing and may wait, it parks by arrival id
/// (served in that order) with its deadline and an optional wake hint (when
/// its partitions said frames may become deliverable without a push). The
/// owner keeps one timer for `next_due()`, calls `expire` when it fires and
/// `wake` on every wake event (push, lease end) or due hint.
///
/// Races the lot closes: a wake that comes while a request is running (not
/// parked yet) makes it run again instead of parking, so no wake-up is lost;
/// a cancel (the client left) that comes while it runs answers it when the
/// run ends. A server-wide counter, shared by every lot, bounds parked
/// requests (`pop.maxParked`): each park counts once, each answer (or the
/// owner's end) uncounts once.

#include <caf/typed_response_promise.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "actors/cursor/cursor_core.hpp"

namespace spool::actors {

template <class Request, class Reply>
class parking_lot {
public:
  using promise = caf::typed_response_promise<Reply>;
  using hint = std::optional<core::mono_time>;

  /// What the owner provides.
  struct hooks {
    /// Runs a request once; calls the continuation with its reply.
    std::function<void(const Request&, std::function<void(Reply)>)> attempt;
    /// For a reply that found nothing: its wake hint (possibly none). For a
    /// reply to deliver (frames or an error): nullopt.
    std::function<std::optional<hint>(const Reply&)> nothing;
    /// The request's key for `cancel` (its lease id).
    std::function<std::string(const Request&)> key;
    /// The reply when the server-wide cap refuses to park.
    std::function<Reply(Reply)> busy;
    std::function<core::mono_time()> now;
    /// Re-arms the owner's timer (after a park).
    std::function<void()> rearm;
  };

  parking_lot() = default;
  parking_lot(const parking_lot&) = delete;
  parking_lot& operator=(const parking_lot&) = delete;

  ~parking_lot() {
    // The owner ends: requests still parked or running are never answered
    // here (their requesters get the actor's exit); they leave the count.
    *total_ -= parked_.size() + retrying_;
  }

  /// Shares the server-wide count and its cap, and the owner's hooks.
  void setup(std::shared_ptr<std::atomic<std::size_t>> total, std::size_t max,
             hooks h) {
    total_ = std::move(total);
    max_ = max;
    hooks_ = std::move(h);
  }

  /// The rule both owners use: a reply with nothing claimed and no failure
  /// found nothing; its hint is its `retry_at`.
  template <class R>
  static std::optional<hint> nothing_claimed(const R& r) {
    if (r.claimed.empty() && !r.failure)
      return hint{r.retry_at};
    return std::nullopt;
  }

  bool empty() const {
    return parked_.empty();
  }

  /// Runs `req` once; delivers what it finds, or parks it until `deadline`
  /// when it finds nothing and `may_park`.
  void submit(Request req, promise rp, core::mono_time deadline,
              bool may_park) {
    auto key = hooks_.key(req);
    auto gen = generation_;
    auto held = std::make_shared<Request>(std::move(req));
    running_[key] = held.get();
    hooks_.attempt(*held, [this, held, rp, deadline, may_park, key,
                           gen](Reply reply) mutable {
      bool cancelled = end_run(key);
      auto found_nothing = hooks_.nothing(reply);
      if (!found_nothing || !may_park || cancelled) {
        rp.deliver(cancelled && found_nothing ? Reply{} : std::move(reply));
        return;
      }
      if (gen != generation_) // woken while it ran: run again
        return submit(std::move(*held), rp, deadline, may_park);
      if (*total_ >= max_) {
        rp.deliver(hooks_.busy(std::move(reply)));
        return;
      }
      ++*total_;
      parked_.emplace(next_id_++,
                      entry{std::move(*held), rp, deadline, *found_nothing});
      hooks_.rearm();
    });
  }

  /// The earliest deadline or wake hint of the parked requests.
  std::optional<core::mono_time> next_due() const {
    std::optional<core::mono_time> next;
    for (auto& [_, e] : parked_)
      if (!next || e.due() < *next)
        next = e.due();
    return next;
  }

  /// Answers every parked request past its deadline empty; answers whether
  /// a wake hint is due (then call `wake`).
  bool expire(core::mono_time now) {
    bool hint_due = false;
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (it->second.deadline <= now) {
        answer(it->second, Reply{});
        it = parked_.erase(it);
      } else {
        hint_due
            = hint_due || (it->second.wake_at && *it->second.wake_at <= now);
        ++it;
      }
    }
    return hint_due;
  }

  /// A wake event: every parked request runs again, in arrival order; one
  /// that still finds nothing parks again in its place; requests running
  /// now run once more when they come back empty.
  void wake() {
    ++generation_;
    auto waiting = std::move(parked_);
    parked_.clear();
    for (auto& [id, e] : waiting)
      rerun(id, std::make_shared<entry>(std::move(e)));
  }

  /// Answers empty (and drops) the parked requests `which` selects.
  template <class Pred>
  void drop(Pred which) {
    for (auto it = parked_.begin(); it != parked_.end();)
      if (which(it->second.req)) {
        answer(it->second, Reply{});
        it = parked_.erase(it);
      } else {
        ++it;
      }
  }

  /// Ends the requests `which` selects: parked ones are answered empty at
  /// once, running ones when their run ends (they never park).
  template <class Pred>
  void cancel_if(Pred which) {
    drop(which);
    for (auto& [key, req] : running_)
      if (which(*req))
        cancelled_.insert(key);
  }

  /// The client of the request keyed `key` left.
  void cancel(const std::string& key) {
    cancel_if([&](const Request& r) { return hooks_.key(r) == key; });
  }

  /// Calls `f` with every parked request (for the idle sweep: a group
  /// waiting is not idle).
  template <class F>
  void for_each(F f) const {
    for (auto& [_, e] : parked_)
      f(e.req);
  }

private:
  struct entry {
    Request req;
    promise rp;
    core::mono_time deadline;
    hint wake_at;

    core::mono_time due() const {
      return wake_at ? std::min(deadline, *wake_at) : deadline;
    }
  };

  /// Runs a parked request again (it stays counted while it runs).
  void rerun(std::uint64_t id, std::shared_ptr<entry> held) {
    auto key = hooks_.key(held->req);
    running_[key] = &held->req;
    ++retrying_;
    auto gen = generation_;
    hooks_.attempt(held->req, [this, id, held, key, gen](Reply reply) {
      --retrying_;
      bool cancelled = end_run(key);
      auto found_nothing = hooks_.nothing(reply);
      if (found_nothing && !cancelled && hooks_.now() < held->deadline) {
        if (gen != generation_) // woken while it ran: run again
          return rerun(id, held);
        held->wake_at = *found_nothing;
        parked_.emplace(id, std::move(*held));
        hooks_.rearm();
        return;
      }
      answer(*held, cancelled && found_nothing ? Reply{} : std::move(reply));
    });
  }

  /// A run of `key` ended; answers whether it was cancelled meanwhile.
  bool end_run(const std::string& key) {
    running_.erase(key);
    return cancelled_.erase(key) > 0;
  }

  void answer(entry& e, Reply reply) {
    e.rp.deliver(std::move(reply));
    --*total_;
  }

  hooks hooks_;
  std::shared_ptr<std::atomic<std::size_t>> total_
      = std::make_shared<std::atomic<std::size_t>>(0);
  std::size_t max_ = SIZE_MAX;
  std::map<std::uint64_t, entry> parked_;
  std::uint64_t next_id_ = 0;
  /// Bumped by every wake event.
  std::uint64_t generation_ = 0;
  /// Parked requests running again (still counted in `total_`).
  std::size_t retrying_ = 0;
  /// Requests running now, by key (each alive while its run is).
  std::map<std::string, const Request*> running_;
  std::set<std::string> cancelled_;
};

} // namespace spool::actors
