#include "storage/group_commit.hpp"

#include "storage/keys.hpp"
#include "storage/slot_log.hpp"

namespace spool::storage {

namespace {

enum class attempt_result { done, grow };

/// Applies batch `b` in `t` and numbers it in the slot log, in `t`.
expected<void> apply_numbered(env& e, txn& t, const write_batch& b,
                              std::vector<slot_seq>& numbers) {
  std::vector<undo_image> undo;
  t.record_undo(&undo);
  for (const auto& m : b.mutations) {
    auto from = undo.size();
    auto applied = apply(t, m);
    if (!applied) {
      t.record_undo(nullptr);
      return applied;
    }
    // A mutation writes its own slot's rows only: what a follower checks.
    auto s = slot_of(m);
    for (auto i = from; i < undo.size(); ++i)
      if (keys::slot_of_key(undo[i].key) != s) {
        t.record_undo(nullptr);
        return make_error(ec::invalid_argument, "slot log: a mutation of slot ",
                          s, " wrote a row outside it (table ",
                          int{undo[i].table}, ")");
      }
  }
  t.record_undo(nullptr);
  auto numbered = slot_log::append(t, b, std::move(undo), e.options().slot_log);
  if (!numbered)
    return std::move(numbered).err();
  numbers = std::move(*numbered);
  return {};
}

/// One try at committing the group. `nested` puts each batch in a child txn.
attempt_result try_commit(env& e, std::span<const write_batch* const> batches,
                          bool nested, std::vector<expected<void>>& results,
                          std::vector<std::vector<slot_seq>>& numbers) {
  results.assign(batches.size(), expected<void>{});
  numbers.assign(batches.size(), {});
  auto fail_all = [&](const error& err) {
    for (auto& r : results)
      r = err;
    for (auto& n : numbers)
      n.clear();
    return attempt_result::done;
  };
  auto t = e.write();
  if (!t)
    return fail_all(t.err());
  bool any_failed = false;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    if (!nested) {
      if (auto r = apply_numbered(e, *t, *batches[i], numbers[i]); !r) {
        if (r.err().code == ec::storage_full)
          return attempt_result::grow;
        // Signal the caller to redo the group with nested transactions.
        results[i] = std::move(r).err();
        any_failed = true;
        break;
      }
      continue;
    }
    auto child = t->begin_child();
    if (!child)
      return fail_all(child.err());
    auto r = apply_numbered(e, *child, *batches[i], numbers[i]);
    if (r)
      r = child->commit();
    if (!r) {
      if (r.err().code == ec::storage_full)
        return attempt_result::grow;
      child->abort();
      results[i] = std::move(r).err();
      numbers[i].clear(); // a failed batch is never numbered
    }
  }
  if (any_failed) {
    t->abort();
    return try_commit(e, batches, true, results, numbers);
  }
  if (auto r = t->commit(); !r) {
    if (r.err().code == ec::storage_full)
      return attempt_result::grow;
    for (auto& n : numbers)
      n.clear();
    return fail_all(r.err());
  }
  return attempt_result::done;
}

} // namespace

std::vector<expected<void>>
commit_group(env& e, std::span<const write_batch* const> batches,
             std::vector<std::vector<slot_seq>>* numbers) {
  std::vector<expected<void>> results;
  std::vector<std::vector<slot_seq>> numbered;
  while (try_commit(e, batches, false, results, numbered)
         == attempt_result::grow) {
    if (auto grown = e.grow(); !grown) {
      results.assign(batches.size(), grown.err());
      numbered.assign(batches.size(), {});
      break;
    }
  }
  if (numbers != nullptr)
    *numbers = std::move(numbered);
  return results;
}

group_commit::group_commit(env& e, commit_options opts) :
    env_(e), opts_(opts), thread_([this] { run(); }) {
}

group_commit::~group_commit() {
  stop();
}

void group_commit::submit(write_batch batch, callback done) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!stopping_) {
      queue_.push_back(item{std::move(batch), std::move(done)});
      cv_.notify_one();
      return;
    }
  }
  done(make_error(ec::shutting_down, "the store writer has stopped"));
}

std::future<expected<void>> group_commit::submit(write_batch batch) {
  auto promise = std::make_shared<std::promise<expected<void>>>();
  auto result = promise->get_future();
  submit(std::move(batch),
         [promise](expected<void> r) { promise->set_value(std::move(r)); });
  return result;
}

void group_commit::stop() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable())
    thread_.join();
}

commit_stats group_commit::stats() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return stats_;
}

void group_commit::run() {
  std::vector<item> group;
  std::vector<const write_batch*> batches;
  for (;;) {
    group.clear();
    {
      std::unique_lock<std::mutex> lock{mtx_};
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return; // stopping and drained
      std::size_t bytes = 0;
      while (!queue_.empty() && group.size() < opts_.max_group_batches) {
        auto size = queue_.front().batch.byte_size();
        if (!group.empty() && bytes + size > opts_.max_group_bytes)
          break;
        bytes += size;
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    batches.clear();
    for (auto& it : group)
      batches.push_back(&it.batch);
    auto results = commit_group(env_, batches);
    std::uint64_t failed = 0;
    for (auto& r : results)
      failed += r ? 0 : 1;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stats_.commits += 1;
      stats_.batches += group.size();
      stats_.failed_batches += failed;
    }
    for (std::size_t i = 0; i < group.size(); ++i)
      group[i].done(std::move(results[i]));
  }
}

} // namespace spool::storage
