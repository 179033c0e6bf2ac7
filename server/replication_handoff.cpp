// The SIGTERM handoff (server/replication.hpp, docs/cluster.md "Handoff"):
// rounds of elections that each prefer an up-to-date follower, run on the
// committer's thread and waited for here.

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <thread>

#include "server/replication.hpp"

namespace spool::server {

namespace {

using clock = std::chrono::steady_clock;
using cluster::node_id;

/// One round's result for one slot.
struct attempt {
  slot_t slot = 0;
  std::optional<node_id> to; ///< none: no follower to hand it to
  bool any_up = false;       ///< a follower's link is up
  /// It is not led here any more: who leads it (none: nobody).
  std::optional<std::optional<node_id>> gone;
  core::promote_outcome out;
};

} // namespace

replication::handoff_report
replication::hand_off(std::chrono::milliseconds budget) {
  auto until = clock::now() + budget;
  auto self = host_->config().self;
  auto dir = host_->directory();
  auto name = [&](node_id n) { return dir->names().name(n); };
  handoff_report rep;
  if (stopped_)
    return rep;
  // An election runs up to this long; a round is started only with that
  // much time left (and waited for), so none is cut off midway.
  auto election = std::chrono::milliseconds{host_->config().election_deadline};
  std::vector<slot_t> left; // slots still led here
  // At least a second for this first look, even with no budget: a writer
  // thread that is merely busy is not called stuck.
  if (!with_host(
          [&](core::replica_host& h) {
            for (auto& r : h.report(0))
              if (r.view.role == cluster::role::leader)
                left.push_back(r.slot);
          },
          std::max(until, clock::now() + std::chrono::seconds{1}))) {
    rep.lines.push_back("the writer thread did not answer within the "
                        "budget: no slot was handed off");
    return rep;
  }
  rep.led = left.size();
  std::map<slot_t, std::string> why;             // the last reason, if kept
  std::map<slot_t, core::promote_outcome> moved; // handed: its new leader
  std::vector<slot_t> given_up;                  // no follower is up
  std::vector<std::pair<slot_t, std::optional<node_id>>> elsewhere;
  while (!left.empty()
         && clock::now() + election + std::chrono::milliseconds{500} < until) {
    // A round: each slot to a follower that is up and has its whole log.
    auto round = std::make_shared<std::promise<std::vector<attempt>>>();
    auto done = round->get_future();
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    auto round_end = clock::now() + election + std::chrono::seconds{1};
    commits_->run([host = host_, links = links_, left, round, cancelled] {
      struct tally {
        std::vector<attempt> all;
        std::size_t open = 0;
        std::shared_ptr<std::promise<std::vector<attempt>>> round;
      };
      auto t = std::make_shared<tally>();
      t->round = round;
      std::map<slot_t, std::optional<node_id>> to;
      std::map<slot_t, bool> any_up;
      for (auto& r : host->report(0))
        for (auto& f : r.followers) {
          auto up = links->up(f.node);
          any_up[r.slot] = any_up[r.slot] || up;
          if (f.entries == 0 && up && !to[r.slot])
            to[r.slot] = f.node;
        }
      t->all.resize(left.size());
      t->open = left.size() + 1; // and this job's own end
      auto one_done = [t] {
        if (--t->open == 0)
          t->round->set_value(std::move(t->all));
      };
      for (std::size_t i = 0; i < left.size(); ++i) {
        auto s = left[i];
        t->all[i].slot = s;
        t->all[i].to = to[s];
        t->all[i].any_up = any_up[s];
        auto v = host->view(s);
        if (v && v->role != cluster::role::leader)
          t->all[i].gone = v->leader;
        if (!to[s] || t->all[i].gone || cancelled->load()) {
          one_done();
          continue;
        }
        host->promote(
            s, std::nullopt,
            [t, i, one_done](const core::promote_outcome& o) {
              t->all[i].out = o;
              one_done();
            },
            to[s]);
      }
      one_done();
    });
    if (done.wait_until(round_end) != std::future_status::ready) {
      *cancelled = true; // the committer is stuck: start nothing more
      break;
    }
    std::vector<slot_t> still;
    for (auto& a : done.get()) {
      if (a.gone) { // another coordinator's election, or a failed one
        elsewhere.emplace_back(a.slot, *a.gone);
        continue;
      }
      if (!a.to && !a.any_up) { // nobody to wait for
        why[a.slot] = "no follower of it is up";
        given_up.push_back(a.slot);
        continue;
      }
      if (!a.to)
        why[a.slot] = "no follower that is up holds its whole log";
      else if (a.out.failure)
        why[a.slot] = a.out.failure->message;
      else if (!a.out.leader || *a.out.leader == self)
        why[a.slot] = "this node was elected again (" + name(*a.to)
                      + " lacked the end of its log, or did not answer in "
                        "time)";
      else {
        moved[a.slot] = a.out;
        why.erase(a.slot);
        continue;
      }
      still.push_back(a.slot);
    }
    left = std::move(still);
    if (!left.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  // The new leaders serve once their epoch starts are committed: with this
  // node's copy, when the third replica is down. So it stays until it sees
  // each committed (at least a second more than the budget).
  auto confirm_until = std::max(until, clock::now() + std::chrono::seconds{1});
  std::map<slot_t, cluster::seq_t> start_of; // the new epoch's first seq here
  std::map<slot_t, bool> confirmed;
  while (confirmed.size() < moved.size() && clock::now() < confirm_until) {
    auto seen = with_host(
        [&](core::replica_host& h) {
          for (auto& [s, o] : moved) {
            if (confirmed.count(s))
              continue;
            auto v = h.view(s);
            if (!v || v->epoch != o.epoch || v->last.epoch != o.epoch)
              continue;
            auto [it, fresh] = start_of.emplace(s, v->last.seq);
            (void)fresh;
            if (v->commit >= it->second)
              confirmed[s] = true;
          }
        },
        confirm_until);
    if (!seen)
      break; // the writer thread is stuck: the report says what is unseen
    if (confirmed.size() < moved.size())
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  for (auto& [s, o] : moved) {
    auto line = "slot " + std::to_string(s) + ": handed to " + name(*o.leader)
                + " (epoch " + std::to_string(o.epoch) + ")";
    if (confirmed.count(s))
      ++rep.handed;
    else
      line += ", its epoch start not yet seen committed here";
    rep.lines.push_back(std::move(line));
  }
  for (auto& [s, by] : elsewhere)
    rep.lines.push_back("slot " + std::to_string(s) + ": "
                        + (by ? "led by " + name(*by) + " now (not handed here)"
                              : "has no leader (an election failed): it "
                                "waits for a promote"));
  left.insert(left.end(), given_up.begin(), given_up.end());
  for (auto s : left)
    rep.lines.push_back("slot " + std::to_string(s) + ": not handed off ("
                        + (why.count(s) ? why[s] : "out of time")
                        + "): it waits for this node's return or a promote");
  return rep;
}

} // namespace spool::server
