#include "core/writer/committer.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace spool::actors {

commit_report
commit_now(storage::env& env,
           const std::vector<const storage::write_batch*>& batches,
           commit_hook* hook) {
  commit_report r;
  r.failures.assign(batches.size(), std::nullopt);
  r.numbers.assign(batches.size(), {});
  std::vector<const storage::write_batch*> admitted;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    if (hook != nullptr)
      if (auto refused = hook->admit(*batches[i])) {
        r.failures[i] = std::move(*refused);
        continue;
      }
    admitted.push_back(batches[i]);
    index.push_back(i);
  }
  if (admitted.empty())
    return r;
  std::vector<std::vector<storage::slot_seq>> numbers;
  auto results = storage::commit_group(env, admitted, &numbers);
  for (std::size_t k = 0; k < admitted.size(); ++k) {
    if (k >= results.size() || !results[k]) {
      r.failures[index[k]]
          = k < results.size()
                ? api_error(results[k].err())
                : make_error(errc::internal, "writer: commit gave no result");
      continue;
    }
    if (k < numbers.size())
      r.numbers[index[k]] = std::move(numbers[k]);
  }
  if (hook != nullptr)
    if (auto marks = r.marks(); !marks.empty())
      r.epochs = hook->committed(marks);
  return r;
}

namespace {

class inline_commits final : public committer {
public:
  explicit inline_commits(storage::env& env) : env_(env) {
  }
  void start(std::vector<const storage::write_batch*> batches,
             std::function<void(commit_report)> done) override {
    done(commit_now(env_, batches, hook_.get()));
  }
  void run(std::function<void()> job) override {
    job();
  }
  void wait_idle() override {
  }
  void set_hook(std::shared_ptr<commit_hook> hook) override {
    hook_ = std::move(hook);
  }
  commit_hook* hook() const noexcept override {
    return hook_.get();
  }

private:
  storage::env& env_;
  std::shared_ptr<commit_hook> hook_;
};

class thread_commits final : public committer {
public:
  explicit thread_commits(storage::env& env) :
      env_(env), thread_([this] { loop(); }) {
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
    queue(
        [this, batches = std::move(batches), done = std::move(done)] {
          done(commit_now(env_, batches, hook_.get()));
        },
        true);
  }
  void run(std::function<void()> job) override {
    queue(std::move(job), false);
  }
  // Only commits count: replication's jobs (a steady stream under load)
  // must not keep the writer's stop waiting.
  void wait_idle() override {
    std::unique_lock<std::mutex> lock{mtx_};
    cv_.wait(lock, [this] { return commits_ == 0; });
  }
  void set_hook(std::shared_ptr<commit_hook> hook) override {
    hook_ = std::move(hook);
  }
  commit_hook* hook() const noexcept override {
    return hook_.get();
  }

private:
  struct job {
    std::function<void()> fn;
    bool commit = false;
  };
  void queue(std::function<void()> fn, bool commit) {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      jobs_.push_back({std::move(fn), commit});
      if (commit)
        ++commits_;
    }
    cv_.notify_all();
  }
  void loop() {
    std::unique_lock<std::mutex> lock{mtx_};
    for (;;) {
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty())
        return; // stopping with nothing to do
      auto j = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      // A commit's `done` may queue the next (the writer answers a group
      // and starts the next before this thread resumes): idle means no
      // commit waits or runs.
      j.fn();
      lock.lock();
      if (j.commit)
        --commits_;
      cv_.notify_all();
    }
  }

  storage::env& env_;
  std::shared_ptr<commit_hook> hook_;
  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<job> jobs_;
  /// Commits queued or running.
  std::size_t commits_ = 0;
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
