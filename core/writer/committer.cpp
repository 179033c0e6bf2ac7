#include "core/writer/committer.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace spool::actors {

namespace {

commit_report commit(storage::env& env,
                     const std::vector<const storage::write_batch*>& batches) {
  commit_report r;
  r.results = storage::commit_group(env, batches, &r.numbers);
  return r;
}

class inline_commits final : public committer {
public:
  explicit inline_commits(storage::env& env) : env_(env) {
  }
  void start(std::vector<const storage::write_batch*> batches,
             std::function<void(commit_report)> done) override {
    done(commit(env_, batches));
  }
  void wait_idle() override {
  }

private:
  storage::env& env_;
};

class thread_commits final : public committer {
public:
  explicit thread_commits(storage::env& env) :
      env_(env), thread_([this] { run(); }) {
  }
  ~thread_commits() override {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void start(std::vector<const storage::write_batch*> batches,
             std::function<void(commit_report)> done) override {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      job_.emplace(job{std::move(batches), std::move(done)});
    }
    cv_.notify_all();
  }
  void wait_idle() override {
    std::unique_lock<std::mutex> lock{mtx_};
    cv_.wait(lock, [this] { return !running_ && !job_; });
  }

private:
  struct job {
    std::vector<const storage::write_batch*> batches;
    std::function<void(commit_report)> done;
  };

  void run() {
    std::unique_lock<std::mutex> lock{mtx_};
    for (;;) {
      cv_.wait(lock, [this] { return stopping_ || job_.has_value(); });
      if (!job_)
        return; // stopping with nothing to do
      auto j = std::move(*job_);
      job_.reset();
      running_ = true;
      lock.unlock();
      // `done` may start the next job (the writer answers a group and
      // starts the next before this thread resumes): it is then waiting in
      // `job_`, and idle means neither a job waits nor one runs.
      j.done(commit(env_, j.batches));
      lock.lock();
      running_ = false;
      cv_.notify_all();
    }
  }

  storage::env& env_;
  std::mutex mtx_;
  std::condition_variable cv_;
  std::optional<job> job_;
  bool running_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace

std::vector<storage::slot_seq> commit_report::marks() const {
  std::vector<storage::slot_seq> all;
  for (auto& batch : numbers)
    all.insert(all.end(), batch.begin(), batch.end());
  // By slot, highest seq first: the first of each slot is its mark.
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) {
    return a.slot != b.slot ? a.slot < b.slot : a.seq > b.seq;
  });
  all.erase(std::unique(all.begin(), all.end(),
                        [](auto& a, auto& b) { return a.slot == b.slot; }),
            all.end());
  return all;
}

std::shared_ptr<committer> inline_committer(storage::env& env) {
  return std::make_shared<inline_commits>(env);
}

std::shared_ptr<committer> thread_committer(storage::env& env) {
  return std::make_shared<thread_commits>(env);
}

} // namespace spool::actors
