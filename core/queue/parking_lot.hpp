#pragma once

/// Long-poll requests of one actor (semantics.md §3): the one piece behind
/// the queue's pops and the broker's namespace pops. A request runs once
/// (`submit`); if it finds nothing and may wait, it parks by arrival id
/// (served in that order) with its deadline and an optional wake hint (when
/// its partitions said frames may become deliverable without a push). The
/// owner keeps one timer for `next_due()`, calls `expire` when it fires
/// (which also reruns the requests whose hint is due) and `wake` on every
/// wake event (push, lease end): all, or only the requests of some topics
/// (partitions). Each step costs the requests it concerns, not every parked
/// one: requests are indexed by due time, key and topic.
///
/// Races the lot closes: a wake that comes while a request is running (not
/// parked yet) makes it run again instead of parking, so no wake-up is lost;
/// a cancel (the client left) that comes while it runs answers it when the
/// run ends. A server-wide counter, shared by every lot, bounds parked
/// requests (`pop.maxParked`): each park counts once, each answer (or the
/// owner's end) uncounts once.
///
/// Pure: the owner's promise type is `Sink` (anything with
/// `deliver(Reply)`, answered at most once); the actors use their
/// always-answered promise (`actors::promise`).

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "vocab/delivery.hpp"

namespace spool::core {

template <class Request, class Reply, class Sink>
class parking_lot {
public:
  using promise = Sink;
  using hint = std::optional<mono_time>;

  /// What the owner provides.
  struct hooks {
    /// Runs a request once; calls the continuation with its reply.
    std::function<void(const Request&, std::function<void(Reply)>)> attempt;
    /// For a reply that found nothing: its wake hint (possibly none). For a
    /// reply to deliver (frames or an error): nullopt.
    std::function<std::optional<hint>(const Reply&)> nothing;
    /// The request's key for `cancel` (its lease id).
    std::function<std::string(const Request&)> key;
    /// The one topic (partition) the request waits for; none: any. Unset:
    /// every request is for any topic.
    std::function<std::optional<std::string>(const Request&)> topic;
    /// The reply when the server-wide cap refuses to park.
    std::function<Reply(Reply)> busy;
    std::function<mono_time()> now;
    /// Re-arms the owner's timer (after a park).
    std::function<void()> rearm;
    /// Requests with the same chain compete for the same frames (a queue's
    /// pops of one group for one partition, or for any): a wake reruns them
    /// one after the other, in arrival order, and stops at the first that
    /// finds nothing (the rest would find nothing too), so a push costs the
    /// pops it can serve and one per chain, not every parked one. A wake's
    /// topics and predicate must decide alike for every request of a chain
    /// (they read what the chain is made of: the group, the partition).
    /// Unset: every selected request reruns at once.
    std::function<std::string(const Request&)> chain = {};
  };

  parking_lot() = default;
  parking_lot(const parking_lot&) = delete;
  parking_lot& operator=(const parking_lot&) = delete;

  ~parking_lot() {
    // The owner ends: requests still parked or running are not answered
    // here; their sinks do what they do when dropped (the actors' promises
    // answer `request_receiver_down`). They leave the count.
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

  /// Nothing parked and nothing running: a wake event has nobody to wake
  /// (a running request must see it, to run once more if it finds nothing).
  bool idle() const {
    return parked_.empty() && running_.empty();
  }

  /// Runs `req` once; delivers what it finds, or parks it until `deadline`
  /// when it finds nothing and `may_park`.
  void submit(Request req, promise rp, mono_time deadline, bool may_park) {
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
      put(next_id_++, entry{std::move(*held), rp, deadline, *found_nothing});
      hooks_.rearm();
    });
  }

  /// The earliest deadline or wake hint of the parked requests.
  std::optional<mono_time> next_due() const {
    if (due_.empty())
      return std::nullopt;
    return due_.begin()->first;
  }

  /// Answers every parked request past its deadline empty and runs again
  /// those whose wake hint is due (only those: each hint came from its own
  /// request's partitions). Visits only what is due.
  void expire(mono_time now) {
    std::vector<std::uint64_t> hinted;
    while (!due_.empty() && due_.begin()->first <= now) {
      auto id = due_.begin()->second;
      auto e = take(id);
      if (e->deadline <= now) {
        pass_hint(*e);
        answer(*e, Reply{});
      } else {
        hinted.push_back(id);
        held_.emplace(id, std::move(e));
      }
    }
    std::sort(hinted.begin(), hinted.end()); // arrival order
    if (!hooks_.chain)
      return rerun_held(hinted);
    // A hint is its chain's: when the pop that held it delivers, the next
    // of its chain runs too (the others did not rerun at the wake).
    for (auto id : hinted) {
      auto it = held_.find(id);
      std::shared_ptr<entry> e = std::move(it->second);
      held_.erase(it);
      auto key = hooks_.chain(e->req);
      rerun(id, std::move(e), [this, key, id](bool found_nothing) {
        if (!found_nothing)
          run_chain(key, id);
      });
    }
  }

  /// A wake event: every parked request runs again, in arrival order; one
  /// that still finds nothing parks again in its place; requests running
  /// now run once more when they come back empty.
  void wake() {
    if (hooks_.chain)
      return wake_chains([](const Request&) { return true; });
    ++generation_;
    std::vector<std::uint64_t> ids;
    ids.reserve(parked_.size());
    for (auto& [id, _] : parked_)
      ids.push_back(id);
    hold_and_rerun(ids);
  }

  /// A wake event that can serve only requests for one of `topics` (a
  /// push to those partitions) or for any (`topic` none: a wildcard pop),
  /// and among those only the ones `which` selects (a released lease serves
  /// only its own group). The others stay parked, untouched: the cost is the
  /// requests it may serve, not every parked one.
  template <class Pred>
  void wake(const std::vector<std::string>& topics, Pred which) {
    if (hooks_.chain)
      return wake_chains([&](const Request& r) {
        auto topic = hooks_.topic ? hooks_.topic(r) : std::nullopt;
        return (!topic
                || std::find(topics.begin(), topics.end(), *topic)
                       != topics.end())
               && which(r);
      });
    ++generation_;
    std::vector<std::uint64_t> ids(any_topic_.begin(), any_topic_.end());
    for (auto& t : topics)
      if (auto it = by_topic_.find(t); it != by_topic_.end())
        ids.insert(ids.end(), it->second.begin(), it->second.end());
    std::sort(ids.begin(), ids.end()); // arrival order
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::erase_if(ids, [&](auto id) { return !which(parked_.at(id).req); });
    hold_and_rerun(ids);
  }

  /// A wake event for the parked requests `which` selects (visits all).
  template <class Pred>
  void wake_if(Pred which) {
    if (hooks_.chain)
      return wake_chains(which);
    ++generation_;
    std::vector<std::uint64_t> ids;
    for (auto& [id, e] : parked_)
      if (which(e.req))
        ids.push_back(id);
    hold_and_rerun(ids);
  }

  /// A claim ahead of a wake (the owner's push is sealed, not durable yet):
  /// the first parked request of every chain for one of `topics` (or any)
  /// that `which` selects is handed to `claim(req, k)` instead of
  /// `attempt`, running meanwhile (a cancel waits for its end). `k(reply)`
  /// answers it; `k(nullopt)` (not claimed) puts it back as it was, in its
  /// place and with its wake hint, or runs it again if a wake came since.
  /// Without chains: nothing is claimed.
  template <class Pred, class Claim>
  void claim(const std::vector<std::string>& topics, Pred which, Claim claim) {
    if (!hooks_.chain)
      return;
    std::vector<std::uint64_t> heads;
    for (auto& [_, ids] : by_chain_) {
      auto& r = parked_.at(*ids.begin()).req;
      auto topic = hooks_.topic ? hooks_.topic(r) : std::nullopt;
      if ((!topic
           || std::find(topics.begin(), topics.end(), *topic) != topics.end())
          && which(r))
        heads.push_back(*ids.begin());
    }
    for (auto id : heads) {
      std::shared_ptr<entry> held = take(id);
      auto key = hooks_.key(held->req);
      running_[key] = &held->req;
      ++retrying_;
      auto gen = generation_;
      claim(held->req,
            [this, id, held, key, gen](std::optional<Reply> reply) mutable {
              --retrying_;
              bool cancelled = end_run(key);
              if (reply && !hooks_.nothing(*reply))
                return answer(*held, std::move(*reply));
              if (cancelled || hooks_.now() >= held->deadline) {
                pass_hint(*held);
                return answer(*held, Reply{});
              }
              if (gen != generation_) // woken meanwhile: run again
                return rerun(id, held);
              put(id, std::move(*held));
              hooks_.rearm();
            });
    }
  }

  /// Answers empty (and drops) the parked requests `which` selects.
  template <class Pred>
  void drop(Pred which) {
    std::vector<std::uint64_t> ids;
    for (auto& [id, e] : parked_)
      if (which(e.req))
        ids.push_back(id);
    for (auto id : ids)
      answer(*take(id), Reply{});
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

  /// The client of the request keyed `key` left (found by its key, not by
  /// visiting every parked request).
  void cancel(const std::string& key) {
    std::vector<std::uint64_t> ids;
    for (auto [it, end] = by_key_.equal_range(key); it != end; ++it)
      ids.push_back(it->second);
    for (auto id : ids) {
      auto e = take(id);
      pass_hint(*e);
      answer(*e, Reply{});
    }
    if (running_.count(key))
      cancelled_.insert(key);
  }

  /// Calls `f` with every parked request (for the idle sweep: a group
  /// waiting is not idle).
  template <class F>
  void for_each(F f) const {
    for (auto& [_, e] : parked_)
      f(e.req);
  }

private:
  using due_index = std::multimap<mono_time, std::uint64_t>;

  struct entry {
    Request req;
    promise rp;
    mono_time deadline;
    hint wake_at;
    due_index::iterator due_at{}; ///< its place in `due_`

    mono_time due() const {
      return wake_at ? std::min(deadline, *wake_at) : deadline;
    }
  };

  /// Parks `e` as `id`, in every index.
  void put(std::uint64_t id, entry e) {
    auto topic = hooks_.topic ? hooks_.topic(e.req) : std::nullopt;
    auto key = hooks_.key(e.req);
    auto due = e.due();
    auto [it, _] = parked_.emplace(id, std::move(e));
    it->second.due_at = due_.emplace(due, id);
    if (hooks_.chain)
      by_chain_[hooks_.chain(it->second.req)].insert(id);
    by_key_.emplace(std::move(key), id);
    if (topic)
      by_topic_[*topic].insert(id);
    else
      any_topic_.insert(id);
  }

  /// Unparks `id` from every index (still counted) and hands it over.
  std::unique_ptr<entry> take(std::uint64_t id) {
    auto it = parked_.find(id);
    auto e = std::make_unique<entry>(std::move(it->second));
    parked_.erase(it);
    due_.erase(e->due_at);
    auto key = hooks_.key(e->req);
    for (auto [k, end] = by_key_.equal_range(key); k != end; ++k)
      if (k->second == id) {
        by_key_.erase(k);
        break;
      }
    if (hooks_.chain)
      if (auto c = by_chain_.find(hooks_.chain(e->req)); c != by_chain_.end()) {
        c->second.erase(id);
        if (c->second.empty())
          by_chain_.erase(c);
      }
    auto topic = hooks_.topic ? hooks_.topic(e->req) : std::nullopt;
    if (!topic) {
      any_topic_.erase(id);
    } else if (auto t = by_topic_.find(*topic); t != by_topic_.end()) {
      t->second.erase(id);
      if (t->second.empty())
        by_topic_.erase(t);
    }
    return e;
  }

  /// Unparks `ids` first (a rerun may park again at once), then runs them.
  void hold_and_rerun(const std::vector<std::uint64_t>& ids) {
    for (auto id : ids)
      held_.emplace(id, take(id));
    rerun_held(ids);
  }

  void rerun_held(const std::vector<std::uint64_t>& ids) {
    for (auto id : ids) {
      auto it = held_.find(id);
      std::shared_ptr<entry> e = std::move(it->second);
      held_.erase(it);
      rerun(id, std::move(e));
    }
  }

  /// A wake with chains: the first parked request of every chain `which`
  /// selects runs again (judged by that first one: see `hooks::chain`);
  /// visits the chains, not the requests.
  template <class Pred>
  void wake_chains(Pred which) {
    ++generation_;
    std::vector<std::string> starts;
    for (auto& [key, ids] : by_chain_)
      if (which(parked_.at(*ids.begin()).req))
        starts.push_back(key);
    for (auto& key : starts)
      run_chain(key, std::nullopt);
  }

  /// Reruns the first request of chain `key` parked after `after` (the
  /// chain's first when none); when it delivered, the next. Iterative: an
  /// attempt that completes at once queues the next step instead of
  /// nesting one call deeper per request.
  void run_chain(const std::string& key, std::optional<std::uint64_t> after) {
    chain_steps_.emplace_back(key, after);
    if (chain_running_)
      return;
    chain_running_ = true;
    while (!chain_steps_.empty()) {
      auto [k, from] = std::move(chain_steps_.front());
      chain_steps_.pop_front();
      auto it = by_chain_.find(k);
      if (it == by_chain_.end())
        continue;
      auto next = from ? it->second.upper_bound(*from) : it->second.begin();
      if (next == it->second.end())
        continue;
      auto id = *next;
      rerun(id, take(id), [this, k = k, id](bool found_nothing) {
        if (!found_nothing)
          run_chain(k, id);
      });
    }
    chain_running_ = false;
  }

  /// `e` leaves parked (its deadline, a cancel) holding a wake hint that
  /// may be its chain's only one (the others did not rerun at the last
  /// wake): the chain's next parked request takes it over (in `expire`, a
  /// hint due already makes that one due in the same pass).
  void pass_hint(const entry& e) {
    if (!hooks_.chain || !e.wake_at)
      return;
    auto c = by_chain_.find(hooks_.chain(e.req));
    if (c == by_chain_.end())
      return;
    auto& next = parked_.at(*c->second.begin());
    if (next.wake_at && *next.wake_at <= *e.wake_at)
      return;
    next.wake_at = e.wake_at;
    auto id = c->second.begin();
    due_.erase(next.due_at);
    next.due_at = due_.emplace(next.due(), *id);
  }

  /// Runs a parked request again (it stays counted while it runs); `after`
  /// learns whether it found nothing (and parked again).
  void rerun(std::uint64_t id, std::shared_ptr<entry> held,
             std::function<void(bool)> after = {}) {
    auto key = hooks_.key(held->req);
    running_[key] = &held->req;
    ++retrying_;
    auto gen = generation_;
    hooks_.attempt(held->req, [this, id, held, key, gen,
                               after = std::move(after)](Reply reply) {
      --retrying_;
      bool cancelled = end_run(key);
      auto found_nothing = hooks_.nothing(reply);
      if (found_nothing && !cancelled && hooks_.now() < held->deadline) {
        if (gen != generation_) // woken while it ran: run again
          return rerun(id, held, after);
        held->wake_at = *found_nothing;
        put(id, std::move(*held));
        hooks_.rearm();
        if (after)
          after(true);
        return;
      }
      answer(*held, cancelled && found_nothing ? Reply{} : std::move(reply));
      if (after)
        after(false);
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
  /// Indices of `parked_`: by due time, by key, by topic (none: any).
  due_index due_;
  std::multimap<std::string, std::uint64_t> by_key_;
  std::map<std::string, std::set<std::uint64_t>> by_topic_;
  /// Parked requests by chain (`hooks::chain`), in arrival order.
  std::map<std::string, std::set<std::uint64_t>> by_chain_;
  /// `run_chain`'s steps still to take, and whether it is taking them.
  std::deque<std::pair<std::string, std::optional<std::uint64_t>>> chain_steps_;
  bool chain_running_ = false;
  std::set<std::uint64_t> any_topic_;
  /// Unparked for a rerun that has not started yet.
  std::map<std::uint64_t, std::unique_ptr<entry>> held_;
  std::uint64_t next_id_ = 0;
  /// Bumped by every wake event.
  std::uint64_t generation_ = 0;
  /// Parked requests running again (still counted in `total_`).
  std::size_t retrying_ = 0;
  /// Requests running now, by key (each alive while its run is).
  std::map<std::string, const Request*> running_;
  std::set<std::string> cancelled_;
};

} // namespace spool::core
