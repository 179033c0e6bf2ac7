#include "actors/scheduler.hpp"

#include <caf/policy/unprofiled.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/coordinator.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

namespace spool::actors {

namespace {

using caf::resumable;
using namespace std::chrono_literals;

/// Work stealing over per-worker `std::deque`s (see the header). An idle
/// worker polls 100 times, stealing every 10th, then sleeps 10 ms at a time
/// between steals until woken. Every enqueue wakes a sleeper: the job's
/// worker if it sleeps, another one if the job's worker is busy. CAF's
/// default instead polls 500 more times 50 µs apart (25 ms) before it
/// sleeps, because its sleepers wake only on a push to their own queue;
/// here that long poll only burned CPU (seek_bench: ~30 ms of CPU per idle
/// 100 ms with it, ~1 ms without) and delayed jobs pushed to a worker in
/// its 50 µs naps (actor_bench was ~15% slower with it).
class constant_steal : public caf::policy::unprofiled {
public:
  struct coordinator_data {
    explicit coordinator_data(caf::scheduler::abstract_coordinator*) {
      // nop
    }
    std::atomic<std::size_t> next_worker{0};
    /// Workers in (or about to enter) their relaxed sleep.
    std::atomic<std::size_t> sleepers{0};
  };

  struct worker_data {
    explicit worker_data(caf::scheduler::abstract_coordinator*) {
      // nop
    }
    worker_data(const worker_data&) {
      // each worker gets fresh state (the coordinator copies one prototype)
    }
    std::mutex lock;
    std::condition_variable cv;
    std::deque<resumable*> queue; ///< guarded by `lock`
    bool sleeping = false;        ///< guarded by `lock`
    bool poked = false;           ///< guarded by `lock`: a job to steal
    std::minstd_rand rengine{std::random_device{}()};
  };

  // Every enqueue wakes a sleeping worker when the job's worker is busy:
  // the sleeper steals it instead of waiting for its own timeout.

  template <class Coordinator>
  void central_enqueue(Coordinator* self, resumable* job) {
    auto n = d(self).next_worker++ % self->num_workers();
    if (!push(*self->worker_by_id(n), job, false))
      wake_sleeper(self);
  }

  template <class Worker>
  void external_enqueue(Worker* self, resumable* job) {
    if (!push(*self, job, false))
      wake_sleeper(self->parent());
  }

  /// A job scheduled by the running worker: it runs next here.
  template <class Worker>
  void internal_enqueue(Worker* self, resumable* job) {
    push(*self, job, true);
    wake_sleeper(self->parent());
  }

  template <class Worker>
  void resume_job_later(Worker* self, resumable* job) {
    push(*self, job, false);
    wake_sleeper(self->parent());
  }

  template <class Worker>
  resumable* dequeue(Worker* self) {
    auto& me = d(self);
    for (std::size_t i = 0; i < 100; ++i) {
      if (auto* job = take(me, true))
        return job;
      if (i % 10 == 0)
        if (auto* job = steal(self))
          return job;
    }
    auto& sleepers = d(self->parent()).sleepers;
    for (;;) {
      {
        std::lock_guard<std::mutex> guard{me.lock};
        me.sleeping = true;
      }
      ++sleepers;
      // Looked at again after counting as a sleeper: a job pushed before
      // is seen here, one pushed after sees the count and pokes.
      auto* job = take(me, true);
      if (job == nullptr)
        job = steal(self);
      if (job == nullptr) {
        std::unique_lock<std::mutex> guard{me.lock};
        me.cv.wait_for(guard, 10ms,
                       [&] { return !me.queue.empty() || me.poked; });
        if (!me.queue.empty()) {
          job = me.queue.front();
          me.queue.pop_front();
        }
      }
      {
        std::lock_guard<std::mutex> guard{me.lock};
        me.sleeping = false;
        me.poked = false;
      }
      --sleepers;
      if (job == nullptr)
        job = steal(self);
      if (job != nullptr)
        return job;
    }
  }

  template <class Worker, class UnaryFunction>
  void foreach_resumable(Worker* self, UnaryFunction f) {
    while (auto* job = take(d(self), true))
      f(job);
  }

  template <class Coordinator, class UnaryFunction>
  void foreach_central_resumable(Coordinator*, UnaryFunction) {
    // nop: no central queue
  }

private:
  /// Queues `job` on `w`; true when `w` was asleep (and is woken for it).
  template <class Worker>
  static bool push(Worker& w, resumable* job, bool front) {
    auto& data = d(&w);
    std::lock_guard<std::mutex> guard{data.lock};
    if (front)
      data.queue.push_front(job);
    else
      data.queue.push_back(job);
    if (data.sleeping)
      data.cv.notify_one();
    return data.sleeping;
  }

  /// Pokes one sleeping worker, if any, to look for a job to steal.
  template <class Coordinator>
  static void wake_sleeper(Coordinator* parent) {
    if (d(parent).sleepers.load() == 0)
      return;
    for (std::size_t i = 0; i < parent->num_workers(); ++i) {
      auto& other = d(parent->worker_by_id(i));
      std::lock_guard<std::mutex> guard{other.lock};
      if (other.sleeping) {
        other.poked = true;
        other.cv.notify_one();
        return;
      }
    }
  }

  /// The head of `data`'s queue (its owner's end) or its tail (a thief's).
  static resumable* take(worker_data& data, bool head) {
    std::lock_guard<std::mutex> guard{data.lock};
    if (data.queue.empty())
      return nullptr;
    resumable* job;
    if (head) {
      job = data.queue.front();
      data.queue.pop_front();
    } else {
      job = data.queue.back();
      data.queue.pop_back();
    }
    return job;
  }

  /// The oldest job of another worker, starting at a random one.
  template <class Worker>
  static resumable* steal(Worker* self) {
    auto* parent = self->parent();
    auto n = parent->num_workers();
    if (n < 2)
      return nullptr;
    auto start = d(self).rengine() % n;
    for (std::size_t k = 0; k < n; ++k) {
      auto victim = (start + k) % n;
      if (victim == self->id())
        continue;
      if (auto* job = take(d(parent->worker_by_id(victim)), false))
        return job;
    }
    return nullptr;
  }
};

} // namespace

bool use_scheduler(caf::actor_system_config& cfg, std::string_view policy,
                   std::size_t threads) {
  cfg.set("scheduler.max-threads", threads);
  if (policy == "spool") {
    cfg.load<caf::scheduler::coordinator<constant_steal>>();
    return true;
  }
  if (policy != "stealing" && policy != "sharing")
    return false;
  cfg.set("scheduler.policy", caf::atom_from_string(std::string{policy}));
  return true;
}

} // namespace spool::actors
