// Model-based randomized test: random interleavings of push, pop, ack
// (completed / failed), transactions (acks + pushes, some rolled back by a
// bad ack), lease expiry and restart across 4 queues x 4
// partitions x 3 groups, through the broker, checked against a reference
// model of what each group must see. A failure prints its seed. The queues
// are in three slots (two share one through the hash tag `{a}`), and at the
// end of each seed every slot's log is replayed into a fresh store, which
// must equal it byte for byte (`check_replay`).
//
// Invariants, per (queue, partition, group):
//  - a pop delivers ascending offsets, starting at the lowest offset that is
//    neither completed (acked by this test) nor dead-lettered (read from the
//    store's DLQ), and each payload is exactly what was pushed there;
//  - the stored committed offset never decreases and equals that lowest
//    offset minus one whenever no lease is live;
//  - at the end, draining every group settles every pushed message
//    (completed or dead-lettered): nothing is lost, groups never interfere.
// With faults (the second test), random write batches fail (I/O error or
// storage full, injected by the gate writer): an operation that fails is as
// if it never happened (the model does not change), an acknowledged one is
// never undone, and the invariants above still hold. Some operations stall:
// their write is held while the clock moves (up to past the lease time, so
// leases expire and their expiry writes queue behind it), then it passes or
// fails (as the writer's stall timeout fails it: `busy`, nothing stored);
// nothing is answered before its write.

#include "sim/broker_sim.hpp"

#include <map>
#include <random>
#include <set>

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

const std::vector<std::string> queues{"q0{a}", "q1{a}", "q2", "q3"};
const std::vector<std::string> parts{"p0", "p1", "p2", "p3"};
const std::vector<std::string> groups{"g0", "g1", "g2"};
/// Queues created by a push have the default leaseTime (300 s).
constexpr auto past_lease_time = std::chrono::seconds{301};

using key = std::tuple<std::string, std::string, std::string>; // q, p, g
using pkey = std::pair<std::string, std::string>;              // q, p

struct live_lease {
  std::string id;
  std::vector<std::int64_t> offsets;
  /// When the pop that took it started (the cursor stamps it then).
  caf::actor_clock::time_point granted;
};

/// Queues created by a push have the default leaseTime.
constexpr auto lease_time = std::chrono::seconds{300};

struct model_fixture : broker_sim {
  std::mt19937_64 rng;
  std::map<pkey, std::vector<std::string>> pushed;
  std::map<key, std::set<std::int64_t>> completed;
  std::map<key, live_lease> leases;
  std::map<key, std::int64_t> last_committed;
  int lease_no = 0;
  int msg_no = 0;
  std::size_t delivered = 0;
  std::size_t committed_txns = 0;
  std::size_t rolled_back_txns = 0;

  /// Random write failures are injected (`maybe_fault`).
  bool faults = false;
  std::size_t failed_ops = 0;
  /// The next operation's first write stalls (`call`).
  bool stall_next = false;
  std::size_t stalls = 0;
  std::size_t stalls_past_lease = 0;
  std::size_t stalls_failed = 0;
  /// Whether the last `call` stalled.
  bool stalled = false;

  explicit model_fixture(std::uint64_t seed, bool with_faults = false) :
      rng(seed), faults(with_faults) {
  }

  /// With faults: sometimes one of the next three batches fails, or the
  /// next operation's write stalls.
  void maybe_fault() {
    if (!faults)
      return;
    auto roll = rng() % 100;
    if (roll >= 15) {
      stall_next = roll < 23;
      return;
    }
    fault_plan f;
    f.nth = 1 + rng() % 3;
    f.times = 1;
    f.code = rng() % 2 ? errc::internal : errc::storage_full;
    gate_st->inject(std::move(f));
  }

  /// Whether an operation's failure came from an injected fault since
  /// `before` (then it must have changed nothing: the model stays).
  bool faulted(std::size_t before, const std::optional<api_error>& e) {
    if (!e)
      return false;
    // No failure but the injected ones: the operation's own write failed.
    INFO(to_string(*e));
    REQUIRE(gate_st->failed > before);
    REQUIRE(e->message.find("injected") != std::string::npos);
    ++failed_ops;
    return true;
  }

  /// How long a stall holds the write: short, long, or past the lease
  /// time; never within a second of a live lease's expiry (a tie with its
  /// timer the model cannot tell).
  caf::timespan stall_time() {
    static const std::vector<std::pair<int, int>> ranges{
        {1, 30}, {60, 250}, {305, 400}};
    auto [lo, hi] = pick(ranges);
    caf::timespan d = std::chrono::seconds{lo + rng() % (hi - lo + 1)};
    auto near_expiry = [&] {
      return std::any_of(leases.begin(), leases.end(), [&](auto& kv) {
        auto age = now() + d - kv.second.granted;
        return age >= lease_time - 1s && age <= lease_time + 1s;
      });
    };
    while (near_expiry())
      d += 5s;
    return d;
  }

  /// Sends a request to the broker and returns its answer; with
  /// `stall_next`, its first write is held while the clock moves by
  /// `stall_time()`, then passes or fails (`busy`, as the writer's stall
  /// timeout fails it).
  template <class R, class... Ts>
  std::optional<R> call(Ts... xs) {
    stalled = false;
    if (!stall_next)
      return request<R>(broker, xs...);
    stall_next = false;
    fault_plan f;
    f.nth = 1;
    f.times = 1;
    f.stall = true;
    gate_st->inject(std::move(f));
    auto answer = request_later<R>(broker, xs...);
    run();
    gate_st->inject({});
    if (gate_st->held.empty())
      return *answer; // it wrote nothing
    stalled = true;
    ++stalls;
    auto d = stall_time();
    if (d > lease_time)
      ++stalls_past_lease;
    advance(d); // timers fire; their writes wait behind the held one
    REQUIRE_FALSE(*answer); // nothing is answered before its write
    bool fail = rng() % 2 == 0;
    stalls_failed += fail ? 1 : 0;
    gate_st->fail_held = fail;
    gate_st->held_code = errc::unavailable;
    caf::anon_send(gated, actors::flush_atom::value);
    run();
    gate_st->fail_held = false;
    return *answer;
  }

  /// Forgets the leases the clock has ended (a lease taken by a stalled pop
  /// may end before its answer arrives).
  void prune_leases() {
    std::erase_if(leases, [&](auto& kv) {
      return now() - kv.second.granted >= lease_time;
    });
  }

  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[rng() % v.size()];
  }

  /// Offsets dead-lettered for (q, p, g), from the store.
  std::set<std::int64_t> dead(const key& k) {
    auto& [q, p, g] = k;
    std::set<std::int64_t> out;
    auto t = store.store->db().read();
    REQUIRE(t);
    auto qs = storage::tables::all_queues(*t);
    REQUIRE(qs);
    for (auto& rec : *qs)
      if (rec.name == q) {
        auto ps = storage::tables::partitions_of(*t, rec.id);
        REQUIRE(ps);
        for (auto& pr : *ps)
          if (pr.name == p)
            REQUIRE(storage::tables::scan_dlq(
                *t, rec.id, g, [&](const storage::dlq_entry& e) {
                  if (e.partition == pr.id)
                    out.insert(e.message.off.value);
                  return true;
                }));
      }
    return out;
  }

  std::int64_t lowest_unsettled(const key& k) {
    auto d = dead(k);
    auto& c = completed[k];
    std::int64_t o = 0;
    while (c.contains(o) || d.contains(o))
      ++o;
    return o;
  }

  void push() {
    auto& q = pick(queues);
    std::vector<actors::broker_push_item> items;
    auto n = 1 + rng() % 3;
    for (std::size_t i = 0; i < n; ++i) {
      auto& p = pick(parts);
      auto payload = "m" + std::to_string(++msg_no);
      items.push_back({q, {p, msg(payload)}});
    }
    auto before = gate_st->failed;
    auto r = call<actors::queue_push_reply>(actors::push_atom::value, items);
    REQUIRE(r);
    if (faulted(before, r->failure))
      return;
    for (std::size_t i = 0; i < n; ++i) {
      auto& res = r->results[i];
      auto& log = pushed[{q, r->target_of(i).partition}];
      REQUIRE(res.result.off.value == static_cast<std::int64_t>(log.size()));
      log.push_back(items[i].item.frame.payload);
    }
  }

  void pop(const std::string& g, bool named) {
    auto& q = pick(queues);
    actors::queue_pop_request req;
    req.group = g;
    req.batch = 1 + rng() % 5;
    req.partitions = 1 + rng() % 2;
    req.lease_id = "L" + std::to_string(++lease_no);
    if (named)
      req.partition = pick(parts);
    // Where each partition starts now: a stall may let expiries
    // dead-letter frames of it before the answer arrives.
    std::map<std::string, std::int64_t> front_before;
    for (auto& p : parts)
      front_before[p] = lowest_unsettled({q, p, g});
    auto before = gate_st->failed;
    auto started = now();
    auto r = call<actors::queue_pop_reply>(actors::pop_atom::value, q, req);
    REQUIRE(r);
    prune_leases(); // those the stall ended
    if (faulted(before, r->failure))
      return; // a claim whose write failed holds no lease
    for (auto& c : r->claimed) {
      key k{q, c.partition, g};
      REQUIRE(!leases.contains(k)); // one batch in flight per (p, g)
      auto& msgs = c.reply.messages;
      REQUIRE(!msgs.empty());
      INFO(q << "/" << c.partition << " group " << g);
      auto front = msgs.front().frame.off.value;
      if (stalled && front == front_before[c.partition])
        CHECK(front <= lowest_unsettled(k));
      else
        CHECK(front == lowest_unsettled(k));
      live_lease l{c.reply.lease->id, {}, started};
      for (std::size_t i = 0; i < msgs.size(); ++i) {
        auto off = msgs[i].frame.off.value;
        if (i > 0)
          CHECK(off > msgs[i - 1].frame.off.value);
        auto& log = pushed[{q, c.partition}];
        REQUIRE(off < static_cast<std::int64_t>(log.size()));
        CHECK(msgs[i].frame.data.payload == log[off]);
        CHECK(!completed[k].contains(off));
        l.offsets.push_back(off);
        ++delivered;
      }
      leases[k] = l;
    }
  }

  void ack(bool fail) {
    if (leases.empty())
      return;
    auto it = leases.begin();
    std::advance(it, rng() % leases.size());
    auto [k, l] = *it;
    auto& [q, p, g] = k;
    std::vector<ack_request> acks;
    if (fail) {
      ack_request a;
      a.lease_id = l.id;
      a.off = offset{l.offsets[rng() % l.offsets.size()]};
      a.status = ack_status::failed;
      a.error = "model failure";
      acks.push_back(a);
    } else {
      for (auto o : l.offsets)
        if (rng() % 4 != 0) {
          ack_request a;
          a.lease_id = l.id;
          a.off = offset{o};
          acks.push_back(a);
        }
      if (acks.empty())
        return;
    }
    auto before = gate_st->failed;
    // As the gateway sends them: the partition by its (stored) uuid.
    auto located = call<std::vector<actors::located_ack_reply>>(
        actors::ack_atom::value, located_acks(partition(q, p).uuid, g, acks));
    REQUIRE(located);
    auto r = ack_replies(std::move(*located));
    if (faulted(before, r.front().failure)) {
      for (auto& each : r) // one write for the list: none of it applied
        REQUIRE(each.failure);
      return;
    }
    bool released = false;
    for (std::size_t i = 0; i < acks.size(); ++i) {
      REQUIRE(!r[i].failure);
      REQUIRE(r[i].error == ack_error::none);
      released = released || r[i].lease_released;
      if (!fail)
        completed[k].insert(acks[i].off.value);
    }
    if (released)
      leases.erase(k);
    else if (!fail) {
      auto& left = leases[k].offsets;
      for (auto& a : acks)
        left.erase(std::remove(left.begin(), left.end(), a.off.value),
                   left.end());
    }
  }

  /// A transaction completing some frames of up to two live leases and
  /// pushing a few messages; `poison` adds an ack of a wrong lease, which
  /// must roll everything back (the model stays as it is, and later pushes
  /// find no offset gap).
  void txn(bool poison) {
    core::txn_request req;
    std::map<key, std::vector<std::size_t>> ack_ops; // op indices per lease
    for (int n = 0; n < 2 && !leases.empty(); ++n) {
      auto it = leases.begin();
      std::advance(it, rng() % leases.size());
      auto& [k, l] = *it;
      if (ack_ops.contains(k))
        continue;
      auto& [q, p, g] = k;
      for (auto o : l.offsets)
        if (rng() % 3 != 0) {
          core::txn_ack_op a{{}, partition(q, p).uuid, g, {}};
          a.ack.lease_id = l.id;
          a.ack.off = offset{o};
          ack_ops[k].push_back(req.ops.size());
          req.ops.push_back(a);
        }
    }
    std::vector<std::string> payloads;
    core::txn_push_op push;
    for (std::size_t i = 0, n = rng() % 3; i < n; ++i) {
      payloads.push_back("t" + std::to_string(++msg_no));
      push.items.push_back({pick(queues), pick(parts), msg(payloads.back())});
    }
    std::size_t push_op = req.ops.size();
    if (!push.items.empty())
      req.ops.push_back(push);
    if (poison) {
      auto& q = pick(queues);
      auto& p = pick(parts);
      // A partition pushed to has a uuid; any other is named by one that
      // carries the id of no queue (either rolls the transaction back).
      auto uuid = pushed.contains({q, p})
                      ? partition(q, p).uuid
                      : std::string{"00000000-ffff-4000-8000-000000000000"};
      core::txn_ack_op bad{{}, uuid, pick(groups), {}};
      bad.ack.lease_id = "no-such-lease";
      bad.ack.off = offset{0};
      req.ops.push_back(bad);
    }
    if (req.ops.empty())
      return;
    auto before = gate_st->failed;
    auto r = call<actors::txn_reply>(actors::txn_atom::value, req);
    REQUIRE(r);
    if (faulted(before, r->failure))
      return;
    if (!poison && !r->result.success && gate_st->failed > before) {
      INFO(r->result.error);
      REQUIRE(r->result.error.find("injected") != std::string::npos);
      ++failed_ops; // its one write failed: nothing of it applied
      return;
    }
    if (poison) {
      REQUIRE(!r->result.success);
      ++rolled_back_txns;
      return;
    }
    REQUIRE(r->result.success);
    ++committed_txns;
    for (auto& [k, ops] : ack_ops) {
      bool released = false;
      for (auto i : ops) {
        auto& a = std::get<core::txn_ack_op>(req.ops[i]);
        completed[k].insert(a.ack.off.value);
        released = released || r->result.results[i].lease_released;
      }
      if (released) {
        leases.erase(k);
      } else {
        auto& left = leases[k].offsets;
        for (auto i : ops) {
          auto o = std::get<core::txn_ack_op>(req.ops[i]).ack.off.value;
          left.erase(std::remove(left.begin(), left.end(), o), left.end());
        }
      }
    }
    for (std::size_t i = 0; i < payloads.size(); ++i) {
      auto& res = r->result.results[push_op].items[i];
      auto& log = pushed[{res.queue, res.partition}];
      REQUIRE(res.off.value == static_cast<std::int64_t>(log.size()));
      log.push_back(payloads[i]);
    }
  }

  void check_committed() {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto qs = storage::tables::all_queues(*t);
    REQUIRE(qs);
    for (auto& rec : *qs) {
      auto ps = storage::tables::partitions_of(*t, rec.id);
      REQUIRE(ps);
      for (auto& pr : *ps)
        for (auto& g : groups) {
          auto c = storage::tables::get_cursor(*t, rec.id, pr.id, g);
          REQUIRE(c);
          if (!*c)
            continue;
          key k{rec.name, pr.name, g};
          auto committed = (*c)->committed.value;
          auto [it, _] = last_committed.try_emplace(k, -1);
          INFO(rec.name << "/" << pr.name << " group " << g);
          CHECK(committed >= it->second); // never decreases
          it->second = committed;
        }
    }
  }

  /// Pops and completes everything left, for every group.
  void drain_all() {
    for (int round = 0; round < 200; ++round) {
      advance(past_lease_time); // every lease expires
      leases.clear();
      bool any = false;
      for (auto& g : groups)
        for (auto& q : queues) {
          actors::queue_pop_request req;
          req.group = g;
          req.batch = 1000;
          req.partitions = parts.size();
          req.lease_id = "D" + std::to_string(++lease_no);
          auto r = request<actors::queue_pop_reply>(
              broker, actors::pop_atom::value, q, req);
          REQUIRE(r);
          for (auto& c : r->claimed) {
            any = true;
            std::vector<ack_request> acks;
            for (auto& m : c.reply.messages) {
              ack_request a;
              a.lease_id = c.reply.lease->id;
              a.off = m.frame.off;
              acks.push_back(a);
              completed[{q, c.partition, g}].insert(m.frame.off.value);
            }
            auto res = ack_located(c.partition_uuid, g, acks);
            REQUIRE(res);
          }
        }
      if (!any)
        break;
    }
  }
};

} // namespace

namespace {

/// Runs the model over 12 seeds, with or without injected write faults.
void run_model(bool with_faults) {
  std::size_t delivered = 0;
  std::size_t dead_lettered = 0;
  std::size_t txns = 0;
  std::size_t rolled_back = 0;
  std::size_t failed = 0;
  std::size_t stalls = 0;
  std::size_t stalls_past_lease = 0;
  std::size_t stalls_failed = 0;
  std::uint64_t replayed = 0;
  std::size_t truncated = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    INFO("seed " << seed);
    model_fixture fx{seed, with_faults};
    for (int step = 0; step < 250; ++step) {
      fx.maybe_fault();
      auto op = fx.rng() % 100;
      if (op < 30)
        fx.push();
      else if (op < 60)
        fx.pop(fx.pick(groups), fx.rng() % 3 == 0);
      else if (op < 80)
        fx.ack(false);
      else if (op < 85)
        fx.ack(true);
      else if (op < 90)
        fx.txn(fx.rng() % 3 == 0);
      else if (op < 96) {
        fx.advance(past_lease_time); // every live lease expires
        fx.leases.clear();
      } else {
        fx.start(); // restart: every lease is lost
        fx.leases.clear();
      }
      fx.prune_leases(); // those a stall ended
      if (step % 25 == 0)
        fx.check_committed();
    }
    fx.gate_st->inject({}); // the drain runs without faults
    fx.run();
    fx.drain_all();
    fx.check_committed();
    auto rep = check_replay(*fx.store.store);
    fx.replay_at_end = false;
    CHECK(rep.slots == 3);
    replayed += rep.entries;
    truncated += rep.truncated;
    // Nothing lost: every pushed offset is completed or dead-lettered, for
    // every group.
    for (auto& [pk, log] : fx.pushed)
      for (auto& g : groups) {
        key k{pk.first, pk.second, g};
        INFO(pk.first << "/" << pk.second << " group " << g);
        CHECK(fx.lowest_unsettled(k) == static_cast<std::int64_t>(log.size()));
        dead_lettered += fx.dead(k).size();
      }
    delivered += fx.delivered;
    txns += fx.committed_txns;
    rolled_back += fx.rolled_back_txns;
    failed += fx.failed_ops;
    stalls += fx.stalls;
    stalls_past_lease += fx.stalls_past_lease;
    stalls_failed += fx.stalls_failed;
  }
  if (with_faults) {
    CHECK(failed > 0);
    CHECK(stalls_past_lease > 0);
    CHECK(stalls_failed > 0);
    CHECK(stalls_failed < stalls);
  }
  // The run must have exercised the interesting paths.
  CHECK(delivered > 1000);
  CHECK(dead_lettered > 0);
  CHECK(txns > 0);
  CHECK(rolled_back > 0);
  CHECK(truncated == 12 * 3);
  WARN("model test: " << replayed << " slot log entries replayed");
  WARN("model test: " << delivered << " deliveries checked, " << dead_lettered
                      << " dead-lettered, " << txns
                      << " transactions committed, " << rolled_back
                      << " rolled back, " << failed
                      << " operations failed by injected faults, " << stalls
                      << " stalled (" << stalls_past_lease
                      << " past the lease time, " << stalls_failed
                      << " then failed)");
}

} // namespace

TEST_CASE("random push/pop/ack/fail/transaction/expire/restart keeps every "
          "group's view of every partition consistent with the model",
          "[sim][model][randomized]") {
  run_model(false);
}

TEST_CASE("with random write failures, a failed operation is as if it never "
          "happened and an acknowledged one is never undone",
          "[sim][model][randomized][failure]") {
  run_model(true);
}
