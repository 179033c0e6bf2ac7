#include "cluster/election.hpp"

#include <algorithm>
#include <utility>

namespace spool::cluster {

std::string election::name_of_(node_id n) const {
  return cfg_.name ? cfg_.name(n) : "n" + std::to_string(index_of(n) + 1);
}

election::election(election_config cfg) : cfg_(std::move(cfg)) {
  // Alone (one replica), its own grant is the majority: asked at once.
  self_asked_ = cfg_.replicas.size() / 2 + 1 == 1;
}

std::vector<envelope> election::start() const {
  std::vector<envelope> out;
  out.reserve(cfg_.replicas.size());
  for (auto n : cfg_.replicas) {
    if (cfg_.self_last && n == cfg_.coordinator && !self_asked_)
      continue;
    // Built in place: g++ 12 warns (wrongly) that a braced temporary's
    // variant may be used uninitialized.
    auto& e = out.emplace_back();
    e.from = cfg_.coordinator;
    e.to = n;
    e.msg.emplace<fence_req>(fence_req{cfg_.epoch, cfg_.expect});
  }
  return out;
}

std::vector<envelope> election::lead_again() const {
  if (state_ != election_state::elected)
    return {};
  return {{cfg_.coordinator, *chosen_, lead_req{cfg_.epoch}}};
}

std::vector<envelope> election::settle() {
  if (state_ != election_state::running || !cfg_.await_prefer || prefer_waived_)
    return {};
  prefer_waived_ = true;
  auto out = decide();
  // Only a choice: anything else (none is due here) is not sent.
  return state_ == election_state::elected ? out : std::vector<envelope>{};
}

void election::give_up() {
  if (state_ == election_state::running)
    fail("no majority answered the fence for epoch "
         + std::to_string(cfg_.epoch) + " in time");
}

void election::fail(std::string why) {
  state_ = election_state::failed;
  reason_ = std::move(why);
}

std::vector<envelope> election::on_reply(node_id from, const fence_rep& r) {
  if (state_ != election_state::running || r.asked != cfg_.epoch)
    return {};
  if (std::find(cfg_.replicas.begin(), cfg_.replicas.end(), from)
      == cfg_.replicas.end())
    return {};
  for (auto& a : answers_)
    if (a.from == from)
      return {}; // a duplicate
  answers_.push_back({from, r});
  if (!r.granted && r.epoch >= highest_) {
    highest_ = r.epoch;
    leader_seen_ = r.leader;
  }
  return decide();
}

std::vector<envelope> election::decide() {
  auto n = cfg_.replicas.size();
  auto quorum = n / 2 + 1;
  std::size_t good = 0, bad = 0;
  std::optional<log_pos> best;
  for (auto& a : answers_) {
    if (a.rep.granted && !a.rep.damaged) {
      ++good;
      best = std::max(best.value_or(a.rep.log_end), a.rep.log_end);
    } else {
      ++bad;
    }
  }
  if (bad > n - quorum) {
    fail("the fence for epoch " + std::to_string(cfg_.epoch)
         + " was refused by a majority (the highest epoch seen is "
         + std::to_string(highest_)
         + (leader_seen_ ? ", led by " + name_of_(*leader_seen_) : "") + ")");
    return {};
  }
  if (cfg_.self_last && !self_asked_ && good + 1 >= quorum) {
    self_asked_ = true;
    return {{cfg_.coordinator, cfg_.coordinator,
             fence_req{cfg_.epoch, cfg_.expect}}};
  }
  if (good < quorum)
    return {};
  if (cfg_.await_prefer && cfg_.prefer && !prefer_waived_
      && std::none_of(answers_.begin(), answers_.end(),
                      [&](const answer& a) { return a.from == *cfg_.prefer; }))
    return {}; // its answer, or the deadline
  auto holds_best = [&](const answer& a) {
    return a.rep.granted && !a.rep.damaged && a.rep.log_end == *best;
  };
  std::optional<node_id> pick;
  if (cfg_.to) {
    auto it = std::find_if(answers_.begin(), answers_.end(),
                           [&](const answer& a) { return a.from == *cfg_.to; });
    if (it == answers_.end())
      return {}; // wait for its answer, or the deadline
    if (!holds_best(*it)) {
      auto longest = std::find_if(answers_.begin(), answers_.end(), holds_best);
      fail(name_of_(*cfg_.to) + " does not hold the longest log ("
           + (it->rep.damaged
                  ? std::string("it is damaged")
                  : "it ends at seq " + std::to_string(it->rep.log_end.seq))
           + "); " + name_of_(longest->from) + " does, at epoch "
           + std::to_string(best->epoch) + " seq " + std::to_string(best->seq));
      return {};
    }
    pick = cfg_.to;
  } else {
    for (auto& a : answers_)
      if (holds_best(a) && (!pick || a.from < *pick))
        pick = a.from;
    for (auto& a : answers_)
      if (holds_best(a) && a.from == cfg_.prefer)
        pick = a.from;
  }
  state_ = election_state::elected;
  chosen_ = pick;
  return {{cfg_.coordinator, *pick, lead_req{cfg_.epoch}}};
}

} // namespace spool::cluster
