// The replica host's side of the writer (replica_host.hpp): which batches
// it admits, the epoch it stamps, the writes that wait for their quorum,
// and the durability policy over it.

#include "core/replica/replica_host.hpp"
#include "vocab/fail_point.hpp"

#include <algorithm>

namespace spool::core {

using namespace spool::cluster;

struct replica_host::group {
  std::size_t remaining = 0;
  std::vector<actors::lost_slot> lost;
  actors::durable_fn done;

  /// One of its marks is decided.
  void resolve() {
    if (remaining > 0 && --remaining == 0 && done) {
      auto d = std::move(done);
      done = nullptr;
      d(std::move(lost));
    }
  }
};

std::optional<api_error> replica_host::admit(const storage::write_batch& b) {
  if (b.mutations.empty())
    return std::nullopt; // a barrier
  if (stopped_)
    return make_error(errc::unavailable,
                      "the node is stopping (nothing of the write is stored)");
  auto s = storage::slot_of(b.mutations.front());
  for (auto& m : b.mutations)
    if (auto other = storage::slot_of(m); other != s)
      return make_error(errc::cross_slot, "A write touches slots ", s, " and ",
                        other,
                        ": a cluster commits one slot at a time; put its "
                        "queues in one slot with a {tag} in their names");
  auto* ss = find(s);
  if (ss == nullptr)
    return dir_->refusal(s, slot_status{});
  if (auto why = dir_->refusal(s, status_of(*ss)))
    return why;
  // The fence of a term: a batch made while this node served an earlier
  // epoch of the slot (a queue of that term stopped since, its write still
  // queued) was made from state another leader may have changed since.
  if (b.term == 0)
    return make_error(errc::internal, "a write of slot ", s,
                      " carries no epoch (nothing of it is stored)");
  if (auto e = ss->core->write_epoch(); !e || *e != b.term)
    return make_error(errc::unavailable, "Server busy: slot ", s,
                      " changed leader while the write was on its way (it "
                      "was made in epoch ",
                      b.term, "; nothing of it is stored): retry");
  return std::nullopt;
}

std::vector<std::uint64_t>
replica_host::committed(const std::vector<storage::slot_seq>& marks) {
  std::vector<std::uint64_t> epochs;
  epochs.reserve(marks.size());
  auto now = now_();
  for (auto& m : marks) {
    auto* ss = find(m.slot);
    auto e = ss != nullptr ? ss->core->write_epoch() : std::nullopt;
    // Admitted only while serving: the entries carry its epoch (the slot
    // log stamps the highest epoch it holds, the leader's epoch_start).
    epochs.push_back(e.value_or(0));
    if (!e)
      continue;
    // Durable here, not yet shipped: no quorum can hold it yet.
    fail_points::hit(fail_points::leader_synced_before_quorum, m.slot);
    carry_out(*ss, ss->core->local_appended(now));
    if (!ss->failed)
      carry_out(*ss, ss->core->synced(m.seq, now));
  }
  drain_local();
  return epochs;
}

void replica_host::await(std::vector<actors::durable_mark> marks,
                         actors::durable_fn done) {
  auto g = std::make_shared<group>();
  g->remaining = marks.size() + 1; // one more, resolved below
  g->done = std::move(done);
  auto deadline = now_() + cfg_.quorum_deadline;
  for (auto& m : marks) {
    auto* ss = find(m.at.slot);
    if (stopped_ || ss == nullptr || ss->failed || m.epoch == 0
        || ss->core->write_epoch() != m.epoch) {
      g->lost.push_back(
          {m.at.slot,
           make_error(errc::unavailable, "Server busy: slot ", m.at.slot,
                      " changed leader before the write reached a "
                      "quorum (it may still commit: a retry with "
                      "the same transactionId is safe)")});
      g->resolve();
      continue;
    }
    if (m.at.seq <= ss->core->commit()) {
      g->resolve();
      continue;
    }
    waiter w{m.at.seq, m.epoch, deadline, g};
    auto at = std::upper_bound(
        ss->waiting.begin(), ss->waiting.end(), w.seq,
        [](seq_t seq, const waiter& x) { return seq < x.seq; });
    ss->waiting.insert(at, std::move(w));
  }
  g->resolve();
}

void replica_host::settle(slot_state& ss) {
  auto commit = ss.core->commit();
  auto epoch = ss.core->write_epoch();
  // Taken out first: a group's `done` runs only once the queue is settled.
  std::vector<waiter> due;
  while (!ss.waiting.empty() && ss.waiting.front().seq <= commit) {
    due.push_back(std::move(ss.waiting.front()));
    ss.waiting.pop_front();
  }
  for (auto& w : due)
    if (epoch == w.epoch)
      w.of->resolve();
    else
      lose(w, ss.slot,
           make_error(errc::unavailable, "Server busy: slot ", ss.slot,
                      " changed leader before the write reached a quorum"));
}

void replica_host::lose(waiter& w, slot_t s, const api_error& why) {
  w.of->lost.push_back({s, why});
  w.of->resolve();
}

void replica_host::lose_all(slot_state& ss, const api_error& why) {
  auto waiting = std::move(ss.waiting);
  ss.waiting.clear();
  for (auto& w : waiting)
    lose(w, ss.slot, why);
}

void replica_host::stop() {
  stopped_ = true;
  for (auto& ss : slots_)
    if (ss)
      tell_promoted(*ss, make_error(errc::unavailable, "the node stopped "
                                                       "before the election "
                                                       "ended"));
  for (auto& ss : slots_)
    if (ss)
      lose_all(*ss, make_error(errc::unavailable,
                               "the node stopped before the write reached a "
                               "quorum: its outcome is unknown"));
}

namespace {

class quorum_policy final : public actors::durability_policy {
public:
  quorum_policy(std::shared_ptr<actors::committer> commits,
                std::shared_ptr<replica_host> host) :
      commits_(std::move(commits)), host_(std::move(host)) {
  }
  void committed(std::vector<actors::durable_mark> marks,
                 actors::durable_fn done) override {
    if (marks.empty()) {
      done({});
      return;
    }
    commits_->run([host = host_, marks = std::move(marks),
                   done = std::move(done)]() mutable {
      host->await(std::move(marks), std::move(done));
    });
  }
  const char* name() const noexcept override {
    return "quorum";
  }

private:
  std::shared_ptr<actors::committer> commits_;
  std::shared_ptr<replica_host> host_;
};

} // namespace

std::shared_ptr<actors::durability_policy>
quorum_durability(std::shared_ptr<actors::committer> commits,
                  std::shared_ptr<replica_host> host) {
  return std::make_shared<quorum_policy>(std::move(commits), std::move(host));
}

} // namespace spool::core
