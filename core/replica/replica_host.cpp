#include "core/replica/replica_host.hpp"
#include "vocab/fail_point.hpp"

#include <algorithm>

namespace spool::core {

using namespace spool::cluster;

expected<std::shared_ptr<replica_host>>
replica_host::make(storage::env& env, host_config cfg, sender send, clock now,
                   host_events events) {
  if (std::find(cfg.nodes.begin(), cfg.nodes.end(), cfg.self)
      == cfg.nodes.end())
    return make_error(errc::invalid_argument, "cluster: node ",
                      index_of(cfg.self), " is not among the ",
                      cfg.nodes.size(), " nodes of --peers");
  if (cfg.replication_factor == 0 || cfg.replication_factor > cfg.nodes.size())
    return make_error(errc::invalid_argument,
                      "cluster: --replication-factor must be 1..",
                      cfg.nodes.size(), " (the nodes of --peers), got ",
                      cfg.replication_factor);
  if (cfg.slots == 0 || cfg.slots > max_slot_count)
    return make_error(errc::invalid_argument, "cluster: the store has ",
                      cfg.slots, " slots");
  if (env.mode() != storage::durability::strict)
    return make_error(errc::invalid_argument,
                      "cluster: replication needs --durability strict (a "
                      "replica's promise must be on disk before it answers)");
  if (!send || !now)
    return make_error(errc::invalid_argument,
                      "cluster: the host needs a sender and a clock");
  return std::make_shared<replica_host>(env, std::move(cfg), std::move(send),
                                        std::move(now), std::move(events));
}

replica_host::replica_host(storage::env& env, host_config cfg, sender send,
                           clock now, host_events events) :
    env_(env),
    cfg_(std::move(cfg)),
    send_(std::move(send)),
    now_(std::move(now)),
    events_(std::move(events)),
    dir_(std::make_shared<slot_directory>(
        cfg_.slots, cluster_names{cfg_.self, cfg_.nodes, cfg_.names,
                                  cfg_.replication_factor})) {
  slots_.resize(cfg_.slots);
  for (std::uint32_t s = 0; s < cfg_.slots; ++s) {
    auto slot = static_cast<slot_t>(s);
    auto reps = replicas_of(slot, cfg_.nodes, cfg_.replication_factor);
    if (std::find(reps.begin(), reps.end(), cfg_.self) == reps.end())
      continue;
    auto ss = std::make_unique<slot_state>();
    ss->slot = slot;
    ss->replicas = std::move(reps);
    ss->port = std::make_unique<slot_port>(env_, slot);
    auto c = cfg_.core;
    c.self = cfg_.self;
    c.replicas = ss->replicas;
    ss->core = std::make_unique<replica_core>(std::move(c), *ss->port);
    slots_[s] = std::move(ss);
  }
}

replica_host::slot_state* replica_host::find(slot_t s) {
  return s < slots_.size() ? slots_[s].get() : nullptr;
}

const replica_host::slot_state* replica_host::find(slot_t s) const {
  return s < slots_.size() ? slots_[s].get() : nullptr;
}

bool replica_host::holds(slot_t s) const noexcept {
  return find(s) != nullptr;
}

std::string replica_host::name(node_id n) const {
  return dir_->names().name(n);
}

slot_status replica_host::status_of(const slot_state& ss) const {
  slot_status st;
  st.held = true;
  st.failed = ss.failed;
  st.serving = !ss.failed && ss.core->serving();
  st.taking_office
      = !ss.failed && !st.serving && ss.core->current_role() == role::leader;
  st.leader = ss.core->leader();
  st.epoch = ss.core->epoch();
  return st;
}

void replica_host::publish(const slot_state& ss) {
  dir_->set(ss.slot, status_of(ss));
}

void replica_host::start() {
  auto now = now_();
  for (auto& ss : slots_)
    if (ss) {
      carry_out(*ss, ss->core->start(now));
      maybe_bootstrap(*ss);
    }
  drain_local();
}

void replica_host::on_message(slot_message m) {
  auto* ss = find(m.slot);
  // Only a replica of the slot, to this node: anything else is dropped
  // (the peer link checked who sent it).
  if (ss == nullptr || ss->failed || m.env.to != cfg_.self
      || std::find(ss->replicas.begin(), ss->replicas.end(), m.env.from)
             == ss->replicas.end())
    return;
  deliver(*ss, m.env);
  drain_local();
}

void replica_host::deliver(slot_state& ss, const envelope& e) {
  if (auto* r = std::get_if<fence_rep>(&e.msg)) {
    // An answer to this node's election, not to its replica.
    if (ss.elect) {
      for (auto& out : ss.elect->on_reply(e.from, *r))
        post(ss.slot, std::move(out));
      end_election(ss);
    }
    return;
  }
  carry_out(ss, ss.core->on_message(e, now_()));
}

void replica_host::tick() {
  auto now = now_();
  for (auto& p : slots_) {
    if (!p || p->failed)
      continue;
    auto& ss = *p;
    if (ss.elect && now >= ss.elect_deadline) {
      // A handoff's election chooses without its preferred replica, and
      // sends `lead` again until a deadline of its own.
      auto chosen = ss.elect->settle();
      if (!chosen.empty()) {
        for (auto& e : chosen)
          post(ss.slot, std::move(e));
        ss.elect_deadline = now + cfg_.election_deadline;
        ss.lead_sent = now;
        end_election(ss);
      } else {
        ss.elect->give_up();
        end_election(ss);
        ss.elect.reset();
      }
    }
    if (ss.elect && ss.elect->state() == election_state::elected
        && now - ss.lead_sent >= cfg_.core.retry) {
      ss.lead_sent = now;
      for (auto& e : ss.elect->lead_again())
        post(ss.slot, std::move(e));
    }
    carry_out(ss, ss.core->tick(now));
    maybe_bootstrap(ss);
    while (!ss.waiting.empty() && ss.waiting.front().deadline <= now) {
      lose(ss.waiting.front(), ss.slot,
           make_error(errc::unavailable, "Server busy: slot ", ss.slot,
                      " has no quorum (the write may still commit: a retry "
                      "with the same transactionId is safe)"));
      ss.waiting.pop_front();
    }
  }
  drain_local();
}

bool replica_host::promote(slot_t s, std::optional<node_id> to,
                           promote_done done, std::optional<node_id> prefer) {
  auto refuse = [&](errc code, auto&&... why) {
    if (done)
      done({s, std::nullopt, 0, make_error(code, why...)});
    return false;
  };
  auto* ss = find(s);
  if (ss == nullptr)
    return refuse(errc::invalid_argument, "this node holds no replica of slot ",
                  s, ": ask one of its replicas");
  if (to
      && std::find(ss->replicas.begin(), ss->replicas.end(), *to)
             == ss->replicas.end())
    return refuse(errc::invalid_argument, dir_->names().name(*to),
                  " holds no replica of slot ", s, " (nothing was changed)");
  auto store_failed = [&] {
    return refuse(errc::unavailable, "this node's store failed for slot ", s);
  };
  if (ss->failed)
    return store_failed();
  if (ss->elect && ss->elect->state() == election_state::running)
    return refuse(errc::unavailable, "an election for slot ", s,
                  " runs already (it ends within ", cfg_.election_deadline,
                  " ms): try again then");
  if (stopped_)
    return refuse(errc::unavailable, "the node is stopping");
  auto known = ss->port->hard().epoch;
  if (read_failed(*ss))
    return store_failed();
  auto e = std::max(known, ss->highest_seen) + 1;
  // A decided one stops sending `lead` again: the new epoch supersedes it.
  ss->elect.reset();
  // A handoff (`prefer`) fences this node's own replica last, once the
  // others' grants make a majority with it: one that fails (no follower
  // answers) leaves it leading, not a slot without a leader.
  election_config c{cfg_.self, ss->replicas, e, std::nullopt, to, prefer};
  c.self_last = prefer.has_value();
  c.await_prefer = prefer.has_value();
  start_election(*ss, std::move(c));
  ss->promoted = std::move(done);
  drain_local();
  // Decided at once (a one-replica slot; or its own fence refused).
  end_election(*ss);
  return true;
}

void replica_host::tell_promoted(slot_state& ss,
                                 std::optional<api_error> failure) {
  if (!ss.promoted)
    return;
  auto done = std::move(ss.promoted);
  ss.promoted = nullptr;
  promote_outcome o{ss.slot, std::nullopt, 0, std::move(failure)};
  if (!o.failure && ss.elect) {
    o.leader = ss.elect->chosen();
    o.epoch = ss.elect->epoch();
  }
  done(o);
}

void replica_host::maybe_bootstrap(slot_state& ss) {
  if (ss.failed || ss.elect || ss.replicas.front() != cfg_.self
      || ss.core->leader() || ss.core->current_role() == role::leader
      || now_() < ss.retry_at)
    return;
  auto h = ss.port->hard();
  auto last = ss.port->last();
  if (read_failed(ss))
    return;
  // Only a replica never fenced: one that promised an epoch (to another
  // node's election) waits for that election's leader, and a restart has
  // its own rules.
  if (h.epoch != 0 || h.leader || h.damaged)
    return;
  // Above every epoch it knows of and every epoch its log holds (a store
  // written on one node has epoch 1 entries), expecting nobody moved on:
  // a replica that follows someone refuses.
  auto e = std::max({h.epoch, ss.highest_seen, last.epoch});
  start_election(
      ss, {cfg_.self, ss.replicas, e + 1, e, std::nullopt, cfg_.self, true});
}

void replica_host::start_election(slot_state& ss, election_config c) {
  c.name = [dir = dir_](node_id n) { return dir->names().name(n); };
  ss.elect.emplace(std::move(c));
  ss.elect_deadline = now_() + cfg_.election_deadline;
  ss.lead_sent = now_();
  for (auto& e : ss.elect->start())
    post(ss.slot, std::move(e));
}

void replica_host::end_election(slot_state& ss) {
  if (!ss.elect || ss.elect->state() == election_state::running)
    return;
  ss.highest_seen = std::max(ss.highest_seen, ss.elect->highest_seen());
  // An elected one stays until its deadline, sending `lead` again.
  if (ss.elect->state() != election_state::failed)
    return tell_promoted(ss, std::nullopt);
  tell_promoted(ss, make_error(errc::unavailable, ss.elect->reason(),
                               " (a majority was fenced: the slot has no "
                               "leader until a promote succeeds)"));
  ss.retry_at = now_() + cfg_.election_deadline;
  if (events_.election_failed)
    events_.election_failed(ss.slot, ss.elect->reason());
  ss.elect.reset();
}

void replica_host::post(slot_t s, envelope e) {
  if (e.to == cfg_.self)
    local_.push_back({s, std::move(e)});
  else
    send_({s, std::move(e)});
}

void replica_host::drain_local() {
  if (draining_)
    return;
  draining_ = true;
  while (!local_.empty()) {
    auto m = std::move(local_.front());
    local_.pop_front();
    if (auto* ss = find(m.slot); ss != nullptr && !ss->failed)
      deliver(*ss, m.env);
  }
  draining_ = false;
}

bool replica_host::read_failed(slot_state& ss) {
  auto err = ss.port->take_error();
  if (!err)
    return ss.failed;
  ss.failed = true;
  tell_promoted(ss, make_error(errc::unavailable,
                               "this node's store failed: ", err->message));
  ss.elect.reset();
  lose_all(ss, make_error(errc::unavailable, "slot ", ss.slot,
                          ": its store failed (", err->message,
                          "); the write's outcome is unknown"));
  publish(ss);
  if (events_.fatal)
    events_.fatal(ss.slot, *err);
  return true;
}

void replica_host::carry_out(slot_state& ss, ready r) {
  // A read that failed while the core made this step: it must not act on
  // what it read as empty. The node stops.
  if (read_failed(ss))
    return;
  auto now = now_();
  bool wrote = !r.write.empty();
  if (wrote) {
    auto res = ss.port->write(r.write);
    if (res != write_result::ok) {
      ss.port->take_error(); // the core hears why through `res`
      carry_out(ss, ss.core->write_failed(res, now));
      return;
    }
  }
  for (auto& e : r.send)
    post(ss.slot, std::move(e));
  // Strict durability: what the port committed is synced.
  for (auto& e : r.after_sync) {
    if (std::holds_alternative<fence_rep>(e.msg))
      fail_points::hit(fail_points::fenced_before_answer, ss.slot);
    post(ss.slot, std::move(e));
  }
  if (!r.notices.empty())
    publish(ss); // what a notice's listener reads is current
  for (auto& n : r.notices)
    on_notice(ss, n);
  if (r.committed)
    settle(ss);
  if (wrote)
    carry_out(ss, ss.core->synced(ss.port->last().seq, now));
  publish(ss);
}

void replica_host::on_notice(slot_state& ss, const notice& n) {
  if (n.kind == notice_kind::deposed)
    lose_all(ss, make_error(errc::unavailable, "Server busy: slot ", ss.slot,
                            " changed leader before the write reached a "
                            "quorum (it may still commit: a retry with the "
                            "same transactionId is safe)"));
  if (n.kind == notice_kind::restart_election && !ss.elect) {
    // Above every epoch it knows of, expecting nobody moved past it; its
    // own replica is fenced last, so a refused try leaves it as it was.
    auto known = ss.port->hard().epoch;
    if (read_failed(ss))
      return;
    auto e = std::max(known, ss.highest_seen);
    start_election(
        ss, {cfg_.self, ss.replicas, e + 1, e, std::nullopt, cfg_.self, true});
  }
  if (events_.notice)
    events_.notice(ss.slot, n);
}

cluster::seq_t replica_host::commit_of(slot_t s) const {
  auto* ss = find(s);
  return ss != nullptr ? ss->core->commit() : 0;
}

std::optional<slot_view> replica_host::view(slot_t s) const {
  auto* ss = find(s);
  if (ss == nullptr)
    return std::nullopt;
  slot_view v;
  v.role = ss->core->current_role();
  v.epoch = ss->core->epoch();
  v.leader = ss->core->leader();
  v.commit = ss->core->commit();
  v.last = ss->port->last();
  v.serving = ss->core->serving();
  v.damaged = ss->port->hard().damaged;
  // A look from outside: a failed read here is not the slot's to act on
  // (the next step reads again).
  ss->port->take_error();
  return v;
}

std::vector<slot_report> replica_host::report(std::size_t max_read) const {
  std::vector<slot_report> out;
  // Payload bytes read so far over every slot, and the entries they were:
  // once the budget is spent, a lag in bytes is estimated from their mean.
  std::uint64_t read_bytes = 0, read_entries = 0;
  for (auto& p : slots_) {
    if (!p)
      continue;
    auto v = view(p->slot);
    if (!v)
      continue;
    slot_report r{p->slot, *v, {}};
    if (v->role == role::leader)
      for (auto& [n, progress] : p->core->peers()) {
        follower_lag lag{n, 0, 0};
        auto last = v->last.seq;
        if (last > progress.match) {
          lag.entries = last - progress.match;
          // From what the log keeps (a follower behind a trimmed log is
          // sent a snapshot instead).
          auto from = std::max(progress.match, p->port->base().seq) + 1;
          std::uint64_t bytes = 0, entries = 0;
          if (from <= last && read_bytes < max_read) {
            auto read = p->port->read(from, lag.entries, max_read - read_bytes);
            for (auto& e : read)
              bytes += e.payload.size();
            entries = read.size();
            p->port->take_error(); // as `view`: not the slot's to act on
            read_bytes += bytes;
            read_entries += entries;
          }
          lag.bytes = bytes;
          if (entries < lag.entries && read_entries > 0)
            lag.bytes += (lag.entries - entries) * (read_bytes / read_entries);
        }
        r.followers.push_back(lag);
      }
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace spool::core
