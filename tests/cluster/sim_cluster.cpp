#include "sim_cluster.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "cluster/election.hpp"
#include "cluster/replica_core.hpp"
#include "sim_disk.hpp"

namespace spool::cluster::sim {

namespace {

struct violation : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct node_state {
  node_id id{};
  std::unique_ptr<sim_disk> disk;
  std::unique_ptr<replica_core> core;
  std::optional<election> elect;
  millis elect_deadline = 0;
  bool alive = true;
  /// Answers that leave at the next sync (a `ready`'s after_sync).
  std::vector<envelope> held;
  seq_t commit_seen = 0;
  epoch_t highest_seen = 0;
  millis lead_sent = 0;
};

struct proposal {
  node_id at{};
  epoch_t epoch = 0;
  seq_t seq = 0;
  std::string payload;
  bool acked = false;
};

std::string name(node_id n) {
  return "n" + std::to_string(index_of(n) + 1);
}

std::string describe(const message& m) {
  std::ostringstream s;
  if (auto* f = std::get_if<fence_req>(&m))
    s << "fence(" << f->epoch
      << (f->expect ? " expect " + std::to_string(*f->expect) : "") << ")";
  else if (auto* r = std::get_if<fence_rep>(&m))
    s << "fence_rep(" << r->asked << (r->granted ? " granted" : " refused")
      << " at " << r->epoch << " end " << r->log_end.epoch << ":"
      << r->log_end.seq << (r->damaged ? " damaged" : "") << ")";
  else if (auto* l = std::get_if<lead_req>(&m))
    s << "lead(" << l->epoch << ")";
  else if (auto* a = std::get_if<append_req>(&m)) {
    s << "append(" << a->epoch << " prev " << a->prev.epoch << ":"
      << a->prev.seq << " [";
    for (auto& e : a->entries)
      s << e.epoch << ":" << e.seq << " ";
    s << "] commit " << a->commit << ")";
  } else if (auto* p = std::get_if<append_rep>(&m))
    s << "append_rep(" << p->epoch << " refused " << int(p->refused)
      << " match " << p->match << " hint " << p->hint.epoch << ":"
      << p->hint.seq << ")";
  else if (auto* n = std::get_if<snapshot_req>(&m))
    s << "snapshot(" << n->epoch << " copy " << n->piece.copy << " piece "
      << n->piece.index << (n->piece.last ? " last" : "") << " through "
      << n->piece.through.epoch << ":" << n->piece.through.seq << ")";
  else if (auto* t = std::get_if<snapshot_rep>(&m))
    s << "snapshot_rep(" << t->epoch << " copy " << t->copy << " taken "
      << t->taken << ")";
  return s.str();
}

class world {
public:
  explicit world(const sim_options& o) :
      opt_(o), rng_(o.seed), snap_rng_(o.seed ^ 0x5eedc0b1) {
    std::size_t n = o.nodes ? o.nodes : (chance(0.7) ? 3 : 5);
    std::size_t keeps[] = {6, 24, 1000};
    std::size_t keep = keeps[pick(3)];
    std::size_t batches[] = {1, 2, 4, 16};
    std::size_t flights[] = {1, 3, 8, 64};
    cfg_.max_batch_entries = batches[pick(4)];
    cfg_.max_in_flight = flights[pick(4)];
    cfg_.heartbeat = 30;
    cfg_.retry = 100;
    // Snapshots of one piece, or of many (an entry is its payload and 33
    // bytes in a piece), a few at a time.
    // (Their own draws: the runs' other choices stay what they were.)
    std::size_t pieces[] = {1 << 20, 1000, 200};
    cfg_.snapshot_piece_bytes = pieces[snap_rng_() % 3];
    cfg_.snapshot_pieces_in_flight = 1 + snap_rng_() % 4;
    cfg_.snapshot_idle = 1000;
    std::size_t copies = 1 + snap_rng_() % 2;
    for (std::size_t i = 0; i < n; ++i)
      cfg_.replicas.push_back(node_id{static_cast<std::uint32_t>(i)});
    choose_profile();
    for (auto id : cfg_.replicas) {
      auto& s = nodes_.emplace_back();
      s.id = id;
      s.disk = std::make_unique<sim_disk>(keep, copies);
    }
    for (auto& s : nodes_)
      boot(s);
    cut_.assign(n * n, false);
    res_.nodes = n;
  }

  sim_result run() {
    std::size_t step = 0;
    try {
      promote(nodes_[0], std::nullopt); // the operator's first promote
      for (; step < opt_.steps; ++step)
        chaos_step();
      heal();
    } catch (const violation& v) {
      res_.ok = false;
      res_.failure = "seed " + std::to_string(opt_.seed) + ", step "
                     + std::to_string(step) + ": " + v.what();
    }
    for (auto& t : trace_)
      res_.trace += t + "\n";
    return res_;
  }

private:
  bool chance(double p) {
    return std::uniform_real_distribution<>(0, 1)(rng_) < p;
  }
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  void note(std::string s) {
    trace_.push_back("t" + std::to_string(now_) + " " + std::move(s));
    if (trace_.size() > opt_.trace_lines)
      trace_.pop_front();
  }
  void fail(const std::string& why) {
    note("VIOLATION: " + why);
    throw violation(why);
  }
  node_state& at(node_id n) {
    return nodes_[index_of(n)];
  }
  /// Damage is injected into one replica at a time: a majority damaged
  /// elects no one (by design), which says nothing of safety.
  bool any_damaged() const {
    for (auto& s : nodes_)
      if (s.disk->damaged_or_may_be())
        return true;
    return false;
  }

  // --- the shell ---------------------------------------------------------

  void boot(node_state& s) {
    auto c = cfg_;
    c.self = s.id;
    s.core = std::make_unique<replica_core>(c, *s.disk);
    s.alive = true;
    carry_out(s, s.core->start(now_));
  }

  void carry_out(node_state& s, ready r) {
    if (!r.write.empty()) {
      auto res = s.disk->write(r.write);
      if (res != write_result::ok) {
        note(name(s.id) + " write failed " + std::to_string(int(res)));
        carry_out(s, s.core->write_failed(res, now_));
        return;
      }
      if (r.write.truncate_after) {
        ++res_.truncations;
        note(name(s.id) + " truncated after "
             + std::to_string(*r.write.truncate_after));
        if (*r.write.truncate_after < s.commit_seen)
          fail(name(s.id) + " truncated below its commit point "
               + std::to_string(s.commit_seen));
      }
      if (r.write.install) {
        ++res_.snapshots;
        if (r.write.stage && r.write.stage->index > 0)
          ++res_.pieced_snapshots;
        note(name(s.id) + " installed a snapshot through "
             + std::to_string(r.write.install->seq));
        check_holds_committed(s, "after a snapshot", true);
      }
    }
    for (auto& e : r.send) {
      check_sent(e);
      post(std::move(e));
    }
    for (auto& e : r.after_sync)
      s.held.push_back(std::move(e));
    for (auto& n : r.notices)
      on_notice(s, n);
    if (r.committed)
      acknowledge(s, *r.committed);
    observe_commit(s);
  }

  void on_notice(node_state& s, const notice& n) {
    switch (n.kind) {
    case notice_kind::leading: {
      note(name(s.id) + " leads epoch " + std::to_string(n.epoch));
      auto [it, fresh] = leaders_.emplace(n.epoch, s.id);
      if (!fresh && it->second != s.id)
        fail("two leaders of epoch " + std::to_string(n.epoch) + ": "
             + name(it->second) + " and " + name(s.id));
      check_holds_committed(s, "taking office", false, n.epoch);
      return;
    }
    case notice_kind::serving:
      note(name(s.id) + " serves epoch " + std::to_string(n.epoch));
      check_holds_committed(s, "serving", false, n.epoch);
      return;
    case notice_kind::restart_election:
      // Above every epoch it knows of, expecting nobody moved past it; its
      // own replica is fenced last, so a refused try leaves it as it was.
      if (!s.elect) {
        auto e = std::max(s.disk->hard().epoch, s.highest_seen);
        start_election(
            s, {s.id, cfg_.replicas, e + 1, e, std::nullopt, s.id, true});
      }
      return;
    default:
      note(name(s.id) + " notice " + std::to_string(int(n.kind)));
      return;
    }
  }

  /// Every entry any replica knew committed is in `s`'s history (or, for
  /// a copy that may lag, every one its history reaches). A leader of
  /// epoch `below` needs only those committed in an older epoch (Raft's
  /// leader completeness): a leader of a stale epoch may take office late,
  /// and it can commit nothing, as a majority promised the newer one.
  void check_holds_committed(node_state& s, const char* when,
                             bool may_lag = false,
                             epoch_t below = ~epoch_t{0}) {
    for (auto& [seq, e] : committed_) {
      if (commit_epoch_[seq] >= below)
        continue;
      auto* mine = s.disk->at(seq);
      if (!mine && may_lag)
        break;
      if (!mine || mine->epoch != e.epoch || mine->payload != e.payload)
        fail(name(s.id) + " lacks committed seq " + std::to_string(seq) + " "
             + when);
    }
  }

  /// What leaves a node was synced there first (an append's entries), so
  /// one (epoch, seq) carries one payload in every message ever sent: two
  /// would be two reigns of one epoch.
  void check_sent(const envelope& e) {
    auto* a = std::get_if<append_req>(&e.msg);
    if (!a)
      return;
    for (auto& x : a->entries) {
      auto [it, fresh] = sent_.emplace(std::pair{x.epoch, x.seq}, x.payload);
      if (!fresh && it->second != x.payload)
        fail("two payloads sent at epoch " + std::to_string(x.epoch) + " seq "
             + std::to_string(x.seq));
    }
  }

  /// The newest committed entry is synced on a majority.
  void check_quorum_holds() {
    if (committed_.empty())
      return;
    auto& [seq, e] = *committed_.rbegin();
    std::size_t holders = 0;
    for (auto& s : nodes_)
      if (auto* mine = s.disk->synced_at(seq);
          mine && mine->epoch == e.epoch && mine->payload == e.payload)
        ++holders;
    if (holders < nodes_.size() / 2 + 1)
      fail("committed seq " + std::to_string(seq) + " is synced on "
           + std::to_string(holders) + " replicas only");
  }

  void observe_commit(node_state& s) {
    auto c = s.core->commit();
    if (c < s.commit_seen)
      fail(name(s.id) + "'s commit point went back");
    for (seq_t q = s.commit_seen + 1; q <= c; ++q) {
      auto* e = s.disk->at(q);
      if (!e)
        fail(name(s.id) + " commits seq " + std::to_string(q) + " it lacks");
      auto [it, fresh] = committed_.emplace(q, *e);
      // Committed by the leader of this epoch or of an older one.
      auto at_epoch = s.disk->hard().epoch;
      auto [ce, none] = commit_epoch_.emplace(q, at_epoch);
      if (!none)
        ce->second = std::min(ce->second, at_epoch);
      if (!fresh
          && (it->second.epoch != e->epoch || it->second.payload != e->payload))
        fail("two payloads committed at seq " + std::to_string(q) + " ("
             + name(s.id) + " has epoch " + std::to_string(e->epoch)
             + ", before: epoch " + std::to_string(it->second.epoch) + ")");
    }
    s.commit_seen = c;
    check_quorum_holds();
  }

  void acknowledge(node_state& s, seq_t c) {
    for (auto& p : proposals_)
      if (!p.acked && p.at == s.id && p.seq <= c
          && p.epoch == s.core->epoch()) {
        auto* e = s.disk->at(p.seq);
        if (!e || e->payload != p.payload)
          fail("acknowledged " + p.payload + " but seq " + std::to_string(p.seq)
               + " holds something else");
        p.acked = true;
        ++res_.acknowledged;
      }
  }

  void post(envelope e) {
    if (faults_ && chance(drop_))
      return;
    // A link's delay is 1-10 ms, and now and then up to 150 (a message
    // overtaken by later ones). Bounded, as a connection's is: an unbounded
    // delay is a lost message, and the leader resends.
    // Once healed, a link delivers in order (a connection).
    auto delay = [&] { return 1 + (chance(0.05) ? pick(150) : pick(10)); };
    if (faults_ && chance(duplicate_))
      flights_.push_back({now_ + delay(), e});
    auto at = now_ + delay();
    if (!faults_) {
      auto& last = link_due_[index_of(e.from) * nodes_.size() + index_of(e.to)];
      at = last = std::max(last + 1, at);
    }
    flights_.push_back({at, std::move(e)});
  }

  /// A message whose time has come, at random among them (the first
  /// one due once the network is healed).
  std::optional<std::size_t> due() {
    std::vector<std::size_t> ready;
    for (std::size_t i = 0; i < flights_.size(); ++i)
      if (flights_[i].due <= now_)
        ready.push_back(i);
    if (ready.empty())
      return std::nullopt;
    if (!faults_)
      return *std::min_element(ready.begin(), ready.end(), [&](auto a, auto b) {
        return flights_[a].due < flights_[b].due;
      });
    return ready[pick(ready.size())];
  }

  void deliver(std::size_t i) {
    auto e = std::move(flights_[i].env);
    flights_.erase(flights_.begin() + static_cast<std::ptrdiff_t>(i));
    auto& t = at(e.to);
    if (cut_[index_of(e.from) * nodes_.size() + index_of(e.to)] || !t.alive)
      return;
    if (auto* a = std::get_if<append_req>(&e.msg);
        a && faults_ && !a->entries.empty() && chance(0.01) && !any_damaged()) {
      a->entries[pick(a->entries.size())].payload += "!"; // bit rot on the way
      note("corrupted an append to " + name(e.to));
    }
    if (auto* s = std::get_if<snapshot_req>(&e.msg);
        s && faults_ && chance(0.05) && !any_damaged()) {
      s->piece.data += "!";
      note("corrupted a snapshot to " + name(e.to));
    }
    note(name(e.from) + "->" + name(e.to) + " " + describe(e.msg));
    if (auto* r = std::get_if<fence_rep>(&e.msg)) {
      if (!t.elect)
        return;
      for (auto& out : t.elect->on_reply(e.from, *r))
        post(std::move(out));
      end_election(t);
      return;
    }
    carry_out(t, t.core->on_message(e, now_));
  }

  void flush(node_state& s) {
    if (!s.disk->sync()) {
      // A failed fsync stops the node (as databases do since fsyncgate):
      // it restarts from what is durable.
      note(name(s.id) + "'s sync failed");
      crash(s);
      return;
    }
    auto held = std::move(s.held);
    s.held.clear();
    for (auto& e : held)
      post(std::move(e));
    carry_out(s, s.core->synced(s.disk->last().seq, now_));
  }

  void tick(node_state& s) {
    if (s.elect && now_ >= s.elect_deadline) {
      // A handoff's election chooses without its preferred replica, as
      // the host does.
      auto chosen = s.elect->settle();
      if (!chosen.empty()) {
        for (auto& e : chosen)
          post(std::move(e));
        s.elect_deadline = now_ + 300;
        s.lead_sent = now_;
        end_election(s);
      } else {
        s.elect->give_up();
        end_election(s);
        s.elect.reset();
      }
    }
    if (s.elect && now_ - s.lead_sent >= cfg_.retry) {
      s.lead_sent = now_;
      for (auto& e : s.elect->lead_again())
        post(std::move(e));
    }
    carry_out(s, s.core->tick(now_));
  }

  void start_election(node_state& s, election_config c) {
    ++res_.elections;
    note(name(s.id) + " runs an election for epoch " + std::to_string(c.epoch)
         + (c.expect ? " (restart)" : "") + (c.to ? " to " + name(*c.to) : "")
         + (c.await_prefer ? " (handoff to " + name(*c.prefer) + ")" : ""));
    s.elect.emplace(std::move(c));
    s.elect_deadline = now_ + 300;
    for (auto& e : s.elect->start())
      post(std::move(e));
  }

  void end_election(node_state& s) {
    if (!s.elect || s.elect->state() == election_state::running)
      return;
    if (s.elect->state() == election_state::failed)
      note(name(s.id) + " election failed: " + s.elect->reason());
    else
      note(name(s.id) + " election chose " + name(*s.elect->chosen()));
    s.highest_seen = std::max(s.highest_seen, s.elect->highest_seen());
    // An elected one stays until its deadline, sending `lead` again.
    if (s.elect->state() == election_state::failed)
      s.elect.reset();
  }

  /// The operator's promote (`to`), or a leader's handoff (`prefer`).
  void promote(node_state& s, std::optional<node_id> to,
               std::optional<node_id> prefer = std::nullopt) {
    if (s.elect)
      return;
    auto e = std::max(s.disk->hard().epoch, s.highest_seen) + 1;
    election_config c{s.id, cfg_.replicas, e, std::nullopt, to, prefer};
    c.self_last = prefer.has_value(); // as the host's handoff
    c.await_prefer = prefer.has_value();
    start_election(s, std::move(c));
  }

  void propose(node_state& s) {
    auto e = s.core->write_epoch();
    if (!e)
      return;
    auto seq = s.disk->last().seq + 1;
    auto payload = "w" + std::to_string(++writes_);
    writes w;
    w.append.push_back(make_entry(*e, seq, entry_kind::data, payload));
    if (s.disk->write(w) != write_result::ok)
      return; // the writer answers its error; nothing is stored
    proposals_.push_back({s.id, *e, seq, payload, false});
    carry_out(s, s.core->local_appended(now_));
  }

  void crash(node_state& s) {
    ++res_.crashes;
    note(name(s.id) + " crashes");
    s.alive = false;
    s.disk->crash();
    s.core.reset();
    s.elect.reset();
    s.held.clear();
    s.commit_seen = 0;
    // Its writer's unanswered writes die with it: their clients got no
    // answer (they retry with their transactionId).
    std::erase_if(proposals_,
                  [&](const proposal& p) { return p.at == s.id && !p.acked; });
  }

  // --- the schedule ------------------------------------------------------

  node_state* random_alive() {
    std::vector<node_state*> up;
    for (auto& s : nodes_)
      if (s.alive)
        up.push_back(&s);
    return up.empty() ? nullptr : up[pick(up.size())];
  }

  node_state* leader_or_any() {
    for (auto& s : nodes_)
      if (s.alive && s.core->current_role() == role::leader && chance(0.85))
        return &s;
    return random_alive();
  }

  // What a chaos step does, with a weight per seed (the seed's profile:
  // some seeds crash and elect often, some lose many messages, some write
  // a lot), so that rare interleavings get their seeds.
  enum action : std::size_t {
    deliver_one,
    flush_one,
    tick_one,
    write_one,
    crash_one,
    restart_one,
    cut_link,
    heal_links,
    operator_promote,
    toggle_full,
    fail_write,
    wait,
    actions
  };

  void choose_profile() {
    double base[actions] = {40, 12, 10, 14, 1.2, 6, 2, 3, 1.2, 1, 1, 6};
    for (std::size_t a = 0; a < actions; ++a)
      weight_[a]
          = base[a]
            * (0.25 + 1.75 * std::uniform_real_distribution<>(0, 1)(rng_));
    drop_ = chance(0.5) ? 0.0
                        : 0.1 * std::uniform_real_distribution<>(0, 1)(rng_);
    duplicate_ = chance(0.5)
                     ? 0.0
                     : 0.06 * std::uniform_real_distribution<>(0, 1)(rng_);
  }

  void chaos_step() {
    now_ += pick(5);
    double total = 0;
    for (auto w : weight_)
      total += w;
    double roll = std::uniform_real_distribution<>(0, total)(rng_);
    std::size_t a = 0;
    while (a + 1 < actions && roll >= weight_[a])
      roll -= weight_[a++];
    auto* s = random_alive();
    switch (a) {
    case deliver_one:
      if (auto i = due())
        deliver(*i);
      return;
    case flush_one:
      if (s)
        flush(*s);
      return;
    case tick_one:
      if (s)
        tick(*s);
      return;
    case write_one:
      if (auto* l = leader_or_any())
        propose(*l);
      return;
    case crash_one:
      if (s)
        crash(*s);
      return;
    case restart_one: {
      auto& d = nodes_[pick(nodes_.size())];
      if (!d.alive) {
        note(name(d.id) + " restarts");
        boot(d);
      }
      return;
    }
    case cut_link: {
      auto x = pick(nodes_.size()), y = pick(nodes_.size());
      if (x != y) {
        note("cut " + name(node_id{static_cast<std::uint32_t>(x)}) + " -> "
             + name(node_id{static_cast<std::uint32_t>(y)}));
        cut_[x * nodes_.size() + y] = true;
        if (chance(0.7))
          cut_[y * nodes_.size() + x] = true;
      }
      return;
    }
    case heal_links:
      note("network healed");
      cut_.assign(cut_.size(), false);
      return;
    case operator_promote:
      if (s) {
        auto some = std::optional(cfg_.replicas[pick(nodes_.size())]);
        if (chance(0.3))
          promote(*s, some);
        else if (chance(0.1)) // a handoff
          promote(*s, std::nullopt, some);
        else
          promote(*s, std::nullopt);
      }
      return;
    case toggle_full: {
      auto& d = nodes_[pick(nodes_.size())];
      d.disk->full = !d.disk->full;
      note(name(d.id) + (d.disk->full ? " disk full" : " disk has room"));
      return;
    }
    case fail_write:
      if (s && snap_rng_() % 5 == 0) { // besides the rest, by its own draw
        s->disk->end_copies();
        note(name(s->id) + "'s open copies end (a map growth)");
      }
      if (s && chance(0.3)) {
        s->disk->fail_sync = true;
        note(name(s->id) + "'s next sync fails");
      } else if (s && !any_damaged()) {
        s->disk->fail_next = true;
        note(name(s->id) + "'s next write fails");
      }
      return;
    default:
      now_ += 50;
      return;
    }
  }

  /// Every replica holds the serving leader's log, all of it committed.
  /// (Heartbeats keep messages in flight for good.)
  bool converged() {
    const node_state* l = nullptr;
    for (auto& s : nodes_) {
      if (!s.held.empty() || s.elect)
        return false;
      if (s.core->serving())
        l = &s;
    }
    if (!l)
      return false;
    for (auto& s : nodes_)
      if (s.disk->last() != l->disk->last()
          || s.core->commit() != l->disk->last().seq || s.disk->hard().damaged)
        return false;
    return true;
  }

  void heal() {
    note("faults stop");
    faults_ = false;
    cut_.assign(cut_.size(), false);
    for (auto& s : nodes_) {
      s.disk->full = false;
      s.disk->fail_next = false;
      s.disk->fail_sync = false;
      if (!s.alive)
        boot(s);
    }
    millis last_promote = now_;
    for (std::size_t i = 0; i < opt_.heal_steps; ++i) {
      ++now_;
      if (auto d = due(); d && chance(0.8)) {
        deliver(*d);
        --now_;
        continue;
      }
      bool serving = false, electing = false;
      for (auto& s : nodes_) {
        flush(s);
        tick(s);
        serving |= s.core->serving();
        electing |= s.elect.has_value();
      }
      if (i < opt_.heal_steps / 4 && chance(0.05))
        if (auto* l = leader_or_any())
          propose(*l);
      if (!serving && !electing && now_ - last_promote > 1000) {
        last_promote = now_;
        promote(nodes_[pick(nodes_.size())], std::nullopt);
      }
      if (converged())
        return final_check();
    }
    std::string where;
    std::map<std::string, std::size_t> kinds;
    for (auto& f : flights_)
      ++kinds[describe(f.env.msg).substr(0, 10) + " " + name(f.env.from) + ">"
              + name(f.env.to)];
    for (auto& [k, n] : kinds)
      where += " [" + k + ": " + std::to_string(n) + "]";
    for (auto& s : nodes_)
      where += " " + name(s.id) + " at " + std::to_string(s.disk->last().seq)
               + " commit " + std::to_string(s.core->commit())
               + (s.core->serving() ? " serving" : "")
               + (s.disk->hard().damaged ? " damaged" : "");
    fail("the replicas did not converge after healing ("
         + std::to_string(flights_.size()) + " messages in flight;" + where
         + ")");
  }

  void final_check() {
    const auto& h = nodes_[0].disk->history();
    for (auto& s : nodes_) {
      if (s.disk->history() != h)
        fail(name(s.id) + "'s history differs from n1's after healing");
      check_holds_committed(s, "after healing");
    }
    for (auto& p : proposals_)
      if (p.acked && (p.seq > h.size() || h[p.seq - 1].payload != p.payload))
        fail("acknowledged " + p.payload + " is lost");
    res_.committed = committed_.size();
  }

  sim_options opt_;
  std::mt19937_64 rng_;
  /// The snapshot's settings and faults.
  std::mt19937_64 snap_rng_;
  replica_config cfg_;
  std::vector<node_state> nodes_;
  struct flight {
    millis due = 0;
    envelope env;
  };
  std::vector<flight> flights_;
  /// Per link, when its last message is due (in order once healed).
  std::vector<millis> link_due_ = std::vector<millis>(25, 0);
  std::vector<bool> cut_;
  bool faults_ = true;
  double weight_[actions] = {};
  double drop_ = 0;
  double duplicate_ = 0;
  millis now_ = 1;
  std::map<seq_t, entry> committed_;
  std::map<std::pair<epoch_t, seq_t>, std::string> sent_;
  /// The oldest epoch in which a replica knew each seq committed.
  std::map<seq_t, epoch_t> commit_epoch_;
  std::map<epoch_t, node_id> leaders_;
  std::vector<proposal> proposals_;
  std::uint64_t writes_ = 0;
  std::deque<std::string> trace_;
  sim_result res_;
};

} // namespace

sim_result run(const sim_options& o) {
  return world(o).run();
}

} // namespace spool::cluster::sim
