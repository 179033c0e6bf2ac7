// Three real spoold under load through the client library, with kills that
// land at chosen steps through fail points (vocab/fail_point.hpp): the
// leader dies with a write durable on its disk only, before any quorum;
// a follower dies with a fence persisted and not answered, so the promote
// it was part of fails; the operator promotes again, the old leader comes
// back as a follower. Then a history checker (history.hpp) compares every
// acknowledged operation with the final state, and the three replicas'
// rows of the slot are compared byte for byte.

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "client/client.hpp"
#include "storage/store.hpp"
#include "system/cluster_fixture.hpp"
#include "system/history.hpp"
#include "unit/storage/slot_rows.hpp"

using namespace spool;
using namespace spool::test;

namespace {

/// Sets an environment variable for the test's lifetime: the spoold
/// children it starts inherit it.
struct scoped_env {
  std::string name;
  scoped_env(std::string n, const std::string& value) : name(std::move(n)) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~scoped_env() {
    ::unsetenv(name.c_str());
  }
};

const std::string queue = "orders";
const std::vector<std::string> partitions = {"p0", "p1"};

/// The load: a producer per partition (one push at a time, keyed), a
/// consumer of group g1 that acks what it pops (cumulatively), and group
/// g2 seeking p0. Each through its own client pointed at `entry`, which
/// follows `not_leader`; every answer goes into the history.
struct load {
  history h;
  std::mutex m;
  std::atomic<bool> stop{false};
  std::atomic<int> pushes_acked{0};
  std::atomic<std::int64_t> p0_end{0}; ///< p0's next offset, as answered
  std::vector<std::thread> threads;

  explicit load(std::uint16_t entry) {
    auto opts = [entry] {
      client::options o;
      o.port = entry;
      o.request_timeout = 4s;
      o.connect_timeout = 1s;
      o.backoff_max = 500ms;
      return o;
    };
    for (auto& p : partitions)
      threads.emplace_back([this, p, o = opts()] { produce(o, p); });
    threads.emplace_back([this, o = opts()] { consume(o); });
    threads.emplace_back([this, o = opts()] { seek(o); });
  }
  ~load() {
    finish();
  }
  void finish() {
    stop = true;
    for (auto& t : threads)
      if (t.joinable())
        t.join();
  }

  void produce(client::options o, const std::string& p) {
    client::client c{o};
    for (int i = 0; !stop; ++i) {
      std::vector<node::push_item> items;
      for (int k = 0; k < 5; ++k) {
        node::push_item it;
        it.queue = queue;
        it.partition = p;
        it.transaction_id = p + "-" + std::to_string(i * 5 + k);
        it.payload = R"({"n":)" + std::to_string(i * 5 + k) + "}";
        items.push_back(std::move(it));
      }
      auto r = c.push(items);
      std::lock_guard lock{m};
      for (std::size_t k = 0; k < items.size(); ++k) {
        bool ok
            = r && k < r->size() && (*r)[k].status == node::push_status::queued;
        h.pushes.push_back({p, *items[k].transaction_id, items[k].payload, ok,
                            ok ? std::optional{(*r)[k].offset} : std::nullopt});
        if (ok)
          ++pushes_acked;
        if (ok && p == "p0")
          p0_end = std::max(p0_end.load(), (*r)[k].offset + 1);
      }
      if (!r)
        std::this_thread::sleep_for(50ms);
    }
  }

  void consume(client::options o) {
    client::client c{o};
    while (!stop) {
      node::pop_request req;
      req.queue = queue;
      req.group = "g1";
      req.batch = 50;
      auto got = c.pop(req);
      if (!got || got->messages.empty()) {
        std::this_thread::sleep_for(20ms);
        continue;
      }
      {
        std::lock_guard lock{m};
        for (auto& msg : got->messages)
          h.observed.push_back(
              {msg.partition, msg.offset, msg.transaction_id, msg.payload});
      }
      auto settle = c.ack_request_for(*got);
      auto acked = c.ack(settle);
      if (!acked || acked->items.size() != settle.items.size())
        continue;
      std::lock_guard lock{m};
      for (std::size_t i = 0; i < settle.items.size(); ++i) {
        if (!acked->items[i].success)
          continue;
        auto& it = settle.items[i]; // cumulative (`upTo`), or one offset
        auto last = it.up_to ? it.up_to : it.offset;
        for (auto& msg : got->messages)
          if (msg.partition_id == it.partition_id && last
              && msg.offset <= *last)
            h.acks.push_back({"g1", msg.partition, msg.offset});
      }
    }
  }

  void seek(client::options o) {
    client::client c{o};
    std::uint64_t x = 7;
    while (!stop) {
      std::this_thread::sleep_for(100ms);
      auto end = p0_end.load();
      if (end == 0)
        continue;
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      auto to = static_cast<std::int64_t>((x >> 33)
                                          % static_cast<std::uint64_t>(end));
      node::seek_request req;
      req.group = "g2";
      req.queue = queue;
      req.partition = "p0";
      req.target.offset = to;
      auto r = c.seek(req);
      std::lock_guard lock{m};
      if (r && r->positions.size() == 1)
        h.seeks.push_back({"g2", "p0", r->positions[0].after, true});
      else
        h.seeks.push_back({"g2", "p0", to - 1, false});
    }
  }

  /// Waits until `n` more pushes were acknowledged, up to `timeout`.
  bool pushes_grow(int n, std::chrono::seconds timeout = 60s) {
    auto goal = pushes_acked + n;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pushes_acked < goal) {
      if (std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }
};

/// Reads the final state through a client pointed at `entry`.
void read_final(history& h, std::uint16_t entry) {
  client::options o;
  o.port = entry;
  o.request_timeout = 10s;
  client::client c{o};
  for (auto& p : partitions) {
    node::browse_request b;
    b.queue = queue;
    b.partition = p;
    b.limit = 1000;
    for (;;) {
      auto r = c.browse(b);
      REQUIRE(r);
      for (auto& msg : r->messages)
        h.final_log[p].push_back(
            {p, msg.offset, msg.transaction_id, msg.payload});
      if (r->messages.empty() || r->next <= b.from)
        break;
      b.from = r->next;
    }
  }
  for (std::string g : {"g1", "g2"}) {
    node::seek_request s;
    s.group = g;
    s.queue = queue;
    s.target.to_end = true;
    s.dry_run = true;
    auto r = c.seek(s);
    REQUIRE(r);
    for (auto& pos : r->positions)
      h.final_cursor[{g, pos.partition}] = pos.before.value_or(-1);
  }
}

} // namespace

TEST_CASE("under load, the leader killed between its local fsync and the "
          "quorum and a follower killed between a fence and its answer "
          "lose nothing acknowledged: the history holds and the replicas' "
          "rows of the slot are byte-identical after healing",
          "[system][cluster][failover][history]") {
  auto slot = slot_of(queue, default_slot_count);
  auto s = std::to_string(slot);
  scoped_env points{"SPOOL_FAIL_POINTS", "leader-synced-before-quorum@" + s
                                             + ",fenced-before-answer@" + s};
  three_nodes c;
  auto l = three_nodes::leader_of(queue);
  auto f1 = (l + 1) % 3; // the clients' entry, and where the operator acts
  auto f2 = (l + 2) % 3;
  load work{c.nodes[f1]->mp_port()};
  REQUIRE(work.pushes_grow(200));

  // The leader: its next write of the slot is on its disk and nowhere else.
  c.nodes[l]->signal(SIGUSR2);
  REQUIRE(c.nodes[l]->wait_for_log("fail points armed", 10s));
  REQUIRE(c.nodes[l]->wait_killed());
  CHECK(c.nodes[l]->log().find(
            "fail point leader-synced-before-quorum hit (slot " + s + ")")
        != std::string::npos);

  // A follower persists the promote's fence and dies before it answers:
  // the election has no majority, and fails.
  c.nodes[f2]->signal(SIGUSR2);
  REQUIRE(c.nodes[f2]->wait_for_log("fail points armed", 10s));
  auto failed = c.nodes[f1]->post("/api/v1/cluster/promote?slot=" + s, "");
  INFO(failed.body);
  CHECK(failed.status == 503);
  CHECK(failed.body.find("majority") != std::string::npos);
  REQUIRE(c.nodes[f2]->wait_killed());
  CHECK(c.nodes[f2]->log().find("fail point fenced-before-answer hit (slot " + s
                                + ")")
        != std::string::npos);

  // Back (its fail points not armed), the promote succeeds.
  c.nodes[f2]->start();
  http_response promoted;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  do {
    promoted = c.nodes[f1]->post("/api/v1/cluster/promote?slot=" + s, "");
    if (promoted.status != 200)
      std::this_thread::sleep_for(200ms);
  } while (promoted.status != 200
           && std::chrono::steady_clock::now() < deadline);
  INFO(promoted.body);
  REQUIRE(promoted.status == 200);
  auto leader = promoted.body_json()["slots"][0]["leader"].get<std::string>();
  auto nl = std::stoul(leader.substr(1)) - 1;
  REQUIRE(nl != l);
  CHECK(promoted.body_json()["slots"][0]["epoch"].get<std::uint64_t>() >= 3);
  REQUIRE(work.pushes_grow(200));

  // The old leader rejoins as a follower: it drops the write only it held.
  c.nodes[l]->start();
  REQUIRE(work.pushes_grow(100));
  work.finish();

  history h;
  {
    std::lock_guard lock{work.m};
    h = work.h;
  }
  read_final(h, c.nodes[f1]->mp_port());
  auto bad = check(h);
  std::string first;
  for (std::size_t i = 0; i < std::min<std::size_t>(bad.size(), 10); ++i)
    first += bad[i] + "\n";
  INFO(bad.size() << " violation(s); the first:\n" << first);
  CHECK(bad.empty());
  std::size_t acked = 0;
  for (auto& p : h.pushes)
    acked += p.acked ? 1 : 0;
  std::size_t stored = 0;
  for (auto& [p, log] : h.final_log)
    stored += log.size();
  INFO(h.pushes.size() << " pushes, " << acked << " acknowledged, " << stored
                       << " stored; " << h.acks.size() << " acks, "
                       << h.seeks.size() << " seeks");
  CHECK(acked >= 500);
  CHECK_FALSE(h.acks.empty());
  CHECK_FALSE(h.seeks.empty());

  // Healed: the leader sees no follower lacking anything, and each
  // follower's log ends where the leader's does. Then the leader stops
  // first (nothing more is shipped), the others at once after it, and
  // their rows of the slot are the same bytes.
  for (std::size_t f = 0; f < 3; ++f)
    if (f != nl)
      CHECK(c.nodes[nl]->metric_becomes(
          "spool_slot_follower_lag_entries{slot=\"" + s + "\",follower=\"n"
              + std::to_string(f + 1) + "\"}",
          0, 30s));
  auto last = "spool_slot_last_seq{slot=\"" + s + "\"}";
  auto end = c.nodes[nl]->metric(last);
  for (std::size_t f = 0; f < 3; ++f)
    if (f != nl)
      CHECK(c.nodes[f]->metric_becomes(last, end, 10s));
  INFO("the leader's log ends at seq " << end);
  c.nodes[nl]->kill9();
  for (auto& n : c.nodes)
    if (n->pid() > 0)
      n->kill9();
  auto reference = slot_rows_at(c.nodes[nl]->data(), slot);
  CHECK_FALSE(reference.empty());
  for (std::size_t f = 0; f < 3; ++f) {
    if (f == nl)
      continue;
    INFO("n" << f + 1 << " against the leader n" << nl + 1);
    CHECK(rows_diff(slot_rows_at(c.nodes[f]->data(), slot), reference) == "");
  }
}
