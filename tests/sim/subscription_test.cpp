// Where a new consumer group starts (the product document's "Where a new
// consumer group starts" and "The durable subscription record";
// semantics.md §5): each test is named after the rule it checks.

#include "sim/broker_sim.hpp"

#include <chrono>
#include <cstdio>

#include "storage/tables.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;
using storage::subscription_mode;

namespace {

/// `t` (µs UTC) as RFC 3339 with microseconds and `Z`.
std::string rfc3339(storage::micros t) {
  using namespace std::chrono;
  auto secs = t / 1'000'000;
  auto us = t % 1'000'000;
  sys_days day{days{secs / 86'400}};
  auto rest = secs % 86'400;
  year_month_day ymd{day};
  char buf[64];
  std::snprintf(
      buf, sizeof buf, "%04d-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ",
      static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
      static_cast<unsigned>(ymd.day()), static_cast<long long>(rest / 3600),
      static_cast<long long>(rest / 60 % 60), static_cast<long long>(rest % 60),
      static_cast<long long>(us));
  return buf;
}

struct sub_fixture : broker_sim {
  int leases = 0;

  /// One pop by `group` (mode and from as a client gives them), every
  /// claimed frame acked; answers the offsets delivered, by partition.
  std::map<std::string, std::vector<std::int64_t>>
  consume(const std::string& queue, const std::string& group,
          core::subscription_params params = {},
          std::optional<std::string> partition = {}) {
    actors::queue_pop_request r;
    r.group = group;
    r.partition = std::move(partition);
    r.batch = 100;
    r.partitions = 10;
    r.lease_id = "L" + std::to_string(++leases);
    r.subscription = std::move(params);
    auto out = request<actors::queue_pop_reply>(broker, actors::pop_atom::value,
                                                queue, r);
    REQUIRE(out);
    REQUIRE_FALSE(out->failure);
    std::map<std::string, std::vector<std::int64_t>> got;
    for (auto& c : out->claimed) {
      auto& offs = got[c.partition];
      std::vector<ack_request> acks;
      REQUIRE(c.reply.lease); // the lease id: the token behind the queue's id
      for (auto& m : c.reply.messages) {
        offs.push_back(m.frame.off.value);
        ack_request a;
        a.lease_id = c.reply.lease->id;
        a.off = m.frame.off;
        acks.push_back(a);
      }
      auto acked = ack_located(c.partition_uuid, group, acks);
      REQUIRE(acked);
      for (auto& r : *acked) { // routed and applied
        REQUIRE(r.error == ack_error::none);
        REQUIRE_FALSE(r.failure);
      }
    }
    return got;
  }

  /// Offsets one pop of `group` on partition `p` of `queue` delivers.
  std::vector<std::int64_t> offsets(const std::string& queue,
                                    const std::string& group,
                                    core::subscription_params params = {},
                                    const std::string& p = "Default") {
    auto got = consume(queue, group, std::move(params), p);
    return got.contains(p) ? got[p] : std::vector<std::int64_t>{};
  }

  /// Registers `group` on `queue` with `params` by a pop of batch 1 on
  /// `partition`, and answers that partition's stored row (the pop's lease
  /// leaves committed at the seed).
  std::optional<storage::cursor_record>
  seeded(const std::string& queue, const std::string& partition,
         const std::string& group, core::subscription_params params) {
    actors::queue_pop_request r;
    r.group = group;
    r.partition = partition;
    r.lease_id = "S" + std::to_string(++leases);
    r.subscription = std::move(params);
    auto out = request<actors::queue_pop_reply>(broker, actors::pop_atom::value,
                                                queue, r);
    REQUIRE(out);
    REQUIRE_FALSE(out->failure);
    return cursor(queue, partition, group); // the lease changes no committed
  }

  std::optional<storage::subscription_record> record(const std::string& queue,
                                                     const std::string& group) {
    auto q = queue_id(queue);
    auto t = store.store->db().read();
    REQUIRE(t);
    auto s = storage::tables::get_subscription(*t, q, group);
    REQUIRE(s);
    return *s;
  }
};

core::subscription_params mode(std::string m) {
  return {std::move(m), {}};
}

core::subscription_params from(std::string f) {
  return {{}, std::move(f)};
}

using offs = std::vector<std::int64_t>;

} // namespace

TEST_CASE("all: the cursor lands just below the oldest retained offset",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "Default", {"a", "b", "c"});
  fx.advance(1s);
  fx.push("q", "Default", {"d"});
  auto purged = fx.request<actors::purge_reply>(
      fx.broker, actors::purge_atom::value, std::string{"q"},
      actors::purge_request{std::nullopt, offset{3}});
  REQUIRE(purged);
  // The stored seed is watermark - 1, not only the offsets delivered.
  auto seed = fx.seeded("q", "Default", "seed-check", mode("all"));
  REQUIRE(seed);
  CHECK(seed->committed == offset{2});
  CHECK(fx.offsets("q", "g", mode("all")) == offs{3});
}

TEST_CASE("new or subscriptionFrom=now: only messages pushed after this "
          "moment are delivered",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "Default", {"a", "b"});
  CHECK(fx.offsets("q", "by-mode", mode("new")).empty());
  CHECK(fx.offsets("q", "by-new-only", mode("new-only")).empty());
  CHECK(fx.offsets("q", "by-from", from("now")).empty());
  fx.advance(1s);
  fx.push("q", "Default", {"c"});
  CHECK(fx.offsets("q", "by-mode") == offs{2});
  CHECK(fx.offsets("q", "by-new-only") == offs{2});
  CHECK(fx.offsets("q", "by-from") == offs{2});
  auto rec = fx.record("q", "by-mode");
  REQUIRE(rec);
  CHECK(rec->mode == subscription_mode::new_only);
  CHECK(rec->registered_mode == subscription_mode::new_only);
}

TEST_CASE("a timestamp: the cursor lands just below the first segment whose "
          "commit time is at or after that timestamp",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "Default", {"s1-0", "s1-1"});
  fx.advance(10s);
  auto t2 = fx.wall();
  fx.push("q", "Default", {"s2-0", "s2-1"});
  fx.advance(10s);
  fx.push("q", "Default", {"s3-0"});
  CHECK(fx.offsets("q", "before", from(rfc3339(t2 - 5'000'000)))
        == offs{2, 3, 4});
  CHECK(fx.offsets("q", "exact", from(rfc3339(t2))) == offs{2, 3, 4});
  CHECK(fx.offsets("q", "after", from(rfc3339(t2 + 1))) == offs{4});
  auto rec = fx.record("q", "exact");
  REQUIRE(rec);
  CHECK(rec->mode == subscription_mode::timestamp);
  CHECK(rec->timestamp == t2);
}

TEST_CASE("a timestamp with nothing that recent lands on the current last "
          "offset: a future-only cursor",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "Default", {"a", "b"});
  auto future = rfc3339(fx.wall() + 3'600'000'000);
  CHECK(fx.offsets("q", "g", from(future)).empty());
  fx.push("q", "Default", {"c"});
  CHECK(fx.offsets("q", "g") == offs{2});
}

TEST_CASE("a timestamp older than the oldest retained segment resolves to it",
          "[sim][subscription]") {
  sub_fixture fx;
  auto long_ago = rfc3339(fx.wall() - 86'400'000'000);
  fx.push("q", "Default", {"a"});
  fx.advance(1s);
  fx.push("q", "Default", {"b", "c"});
  auto purged = fx.request<actors::purge_reply>(
      fx.broker, actors::purge_atom::value, std::string{"q"},
      actors::purge_request{std::nullopt, offset{1}});
  REQUIRE(purged);
  // Stored: committed just below the oldest retained segment.
  auto seed = fx.seeded("q", "Default", "seed-check", from(long_ago));
  REQUIRE(seed);
  CHECK(seed->committed == offset{0});
  CHECK(fx.offsets("q", "g", from(long_ago)) == offs{1, 2});
}

TEST_CASE("an unparsable timestamp is treated as registration-time new rather "
          "than failing the pop",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "Default", {"a"});
  CHECK(fx.offsets("q", "g", from("yesterday at noon")).empty());
  auto rec = fx.record("q", "g");
  REQUIRE(rec);
  CHECK(rec->mode == subscription_mode::new_only);
  CHECK(rec->timestamp == fx.wall());
  fx.advance(1s);
  fx.push("q", "Default", {"b"});
  CHECK(fx.offsets("q", "g") == offs{1});
}

TEST_CASE("seeding happens only on the first contact: passing "
          "subscriptionMode=new to a group that has already consumed changes "
          "nothing, and neither does removing it",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "Default", {"a", "b"});
  CHECK(fx.offsets("q", "old", mode("all")) == offs{0, 1});
  fx.push("q", "Default", {"c", "d"});
  // Not re-seeded to the last offset: the backlog is still delivered.
  CHECK(fx.offsets("q", "old", mode("new")) == offs{2, 3});
  // Nor by a pop that names no mode.
  fx.push("q", "Default", {"e0"});
  CHECK(fx.offsets("q", "old") == offs{4});
  // A group registered `new` keeps that when a later pop names another
  // mode or none.
  fx.push("q", "Default", {"e"});
  CHECK(fx.offsets("q", "fresh", mode("new")).empty());
  fx.advance(1s);
  fx.push("q", "Default", {"f"});
  CHECK(fx.offsets("q", "fresh", mode("all")) == offs{6});
  fx.push("q", "Default", {"g"});
  CHECK(fx.offsets("q", "fresh") == offs{7});
  auto rec = fx.record("q", "fresh");
  REQUIRE(rec);
  CHECK(rec->mode == subscription_mode::new_only);
}

TEST_CASE("the first pop of a group on a queue writes its subscription record "
          "and seeds every partition in one durable write",
          "[sim][subscription]") {
  sub_fixture fx;
  for (auto p : {"p1", "p2", "p3"})
    fx.push("q", p, {"x", "y"});
  fx.gate_st->keep = true;
  fx.gate_st->seen.clear();
  auto registered_at = fx.wall();
  CHECK(fx.offsets("q", "g", mode("new"), "p2").empty());
  REQUIRE_FALSE(fx.gate_st->seen.empty());
  auto& first = fx.gate_st->seen.front();
  CHECK(count_of<storage::mut::put_subscription>(first) == 1);
  CHECK(count_of<storage::mut::put_cursor>(first) == 3);
  std::size_t records = 0;
  for (auto& b : fx.gate_st->seen)
    records += count_of<storage::mut::put_subscription>(b);
  CHECK(records == 1);
  auto rec = fx.record("q", "g");
  REQUIRE(rec);
  CHECK(rec->registered_at == registered_at);
  // Every partition was seeded at its last offset, also the ones the pop
  // did not touch.
  auto q = fx.queue_id("q");
  auto t = fx.store.store->db().read();
  REQUIRE(t);
  auto parts = storage::tables::partitions_of(*t, q);
  REQUIRE(parts);
  REQUIRE(parts->size() == 3);
  for (auto& p : *parts) {
    auto c = storage::tables::get_cursor(*t, q, p.id, "g");
    REQUIRE(c);
    REQUIRE(*c);
    CHECK((*c)->committed == offset{1});
  }
}

TEST_CASE("a partition created after a group subscribed is seeded from the "
          "stored subscription, so its own backlog is delivered",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "old", {"a", "b"});
  CHECK(fx.consume("q", "g", mode("new")).empty());
  fx.advance(1s);
  fx.push("q", "later", {"c", "d"}); // created now, after the registration
  CHECK(fx.offsets("q", "g", {}, "later") == offs{0, 1});
  // The same after a restart, from the durable record.
  fx.start();
  fx.advance(1s);
  fx.push("q", "after-restart", {"e"});
  CHECK(fx.offsets("q", "g", mode("new"), "after-restart") == offs{0});
  CHECK(fx.consume("q", "g").empty()); // `old`'s backlog stays skipped
}

TEST_CASE("a partition created later is seeded by the walk from the stored "
          "timestamp, not from its start",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "a", {"x"});
  auto in_an_hour = fx.wall() + 3'600'000'000;
  CHECK(fx.consume("q", "g", from(rfc3339(in_an_hour))).empty());
  fx.advance(1s);
  fx.push("q", "b", {"early-0", "early-1"}); // before the timestamp
  fx.advance(2h);
  fx.push("q", "b", {"late"}); // after it
  // First contact with b only now: the walk from the stored timestamp (not
  // b's start, not its last offset at this first contact).
  CHECK(fx.offsets("q", "g", {}, "b") == offs{2});
}

TEST_CASE("two first pops of one group at once register it once",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "Default", {"a"});
  fx.gate_st->keep = true;
  fx.gate_st->seen.clear();
  actors::queue_pop_request r;
  r.group = "g";
  r.batch = 10;
  r.subscription = mode("new");
  r.lease_id = "one";
  auto first = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, r);
  r.lease_id = "two";
  r.subscription = mode("all");
  auto second = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, r);
  fx.run();
  REQUIRE(*first);
  REQUIRE(*second);
  CHECK((*first)->claimed.empty());
  CHECK((*second)->claimed.empty()); // the first registration (new) holds
  std::size_t records = 0;
  for (auto& b : fx.gate_st->seen)
    records += count_of<storage::mut::put_subscription>(b);
  CHECK(records == 1);
}

TEST_CASE("a queue-mode pop always registers as all: subscription modes are "
          "ignored and it never skips a backlog",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "Default", {"a", "b"});
  auto queue_mode = std::string{core::queue_mode_group};
  CHECK(fx.offsets("q", queue_mode, {"new", "now"}) == offs{0, 1});
  auto rec = fx.record("q", queue_mode);
  REQUIRE(rec);
  CHECK(rec->mode == subscription_mode::all);
}

TEST_CASE("a pop on a queue that does not exist yet registers the group, "
          "answers empty, and the record applies when partitions appear",
          "[sim][subscription]") {
  sub_fixture fx;
  CHECK(fx.consume("future", "g", mode("new")).empty());
  auto rec = fx.record("future", "g");
  REQUIRE(rec);
  CHECK(rec->mode == subscription_mode::new_only);
  fx.advance(1s);
  fx.push("future", "Default", {"a"});
  CHECK(fx.offsets("future", "g") == offs{0});
}

TEST_CASE("a long-poll pop on a queue that does not exist yet is served by "
          "the first push",
          "[sim][subscription][long-poll]") {
  sub_fixture fx;
  actors::queue_pop_request r;
  r.group = "g";
  r.batch = 10;
  r.wait = true;
  r.timeout = 30s;
  r.lease_id = "wait";
  auto pending = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"future"}, r);
  fx.run();
  CHECK(!*pending); // parked
  fx.advance(1s);
  fx.push("future", "Default", {"a"});
  REQUIRE(*pending);
  REQUIRE((*pending)->claimed.size() == 1);
  CHECK((*pending)->claimed[0].reply.messages.size() == 1);
}

TEST_CASE("defaultSubscriptionMode new applies when a first pop names no mode",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.default_subscription = subscription_mode::new_only;
  fx.start();
  fx.push("q", "Default", {"a"});
  CHECK(fx.offsets("q", "g").empty());
  CHECK(fx.offsets("q", "explicit", mode("all")) == offs{0});
}

TEST_CASE("a group deleted with its records registers again on its next pop",
          "[sim][subscription][admin]") {
  sub_fixture fx;
  fx.push("q", "Default", {"a"});
  CHECK(fx.offsets("q", "g", mode("all")) == offs{0});
  auto first = fx.record("q", "g")->registered_at;
  auto del = fx.request<actors::delete_group_reply>(
      fx.broker, actors::delete_atom::value,
      actors::delete_group_request{"g", std::string{"q"}, true});
  REQUIRE(del);
  REQUIRE_FALSE(del->failure);
  CHECK_FALSE(fx.record("q", "g"));
  fx.push("q", "Default", {"b"});
  CHECK(fx.offsets("q", "g", mode("new")).empty());
  CHECK(fx.record("q", "g")->mode == subscription_mode::new_only);
  // The same simulated microsecond, yet another registration: a
  // subscription update read from the first cannot apply to this one.
  CHECK(fx.record("q", "g")->registered_at != first);
}

TEST_CASE("recipe: bring up a new consumer that must not see history with "
          "subscriptionMode=new on first contact",
          "[sim][subscription][recipe]") {
  sub_fixture fx;
  for (int i = 0; i < 5; ++i)
    fx.push("orders", "p" + std::to_string(i % 2), {"old"});
  CHECK(fx.consume("orders", "audit", mode("new")).empty());
  fx.advance(1s);
  fx.push("orders", "p0", {"new-0"});
  fx.push("orders", "p1", {"new-1"});
  auto got = fx.consume("orders", "audit");
  CHECK(got["p0"] == offs{3});
  CHECK(got["p1"] == offs{2});
}

TEST_CASE("recipe: re-run a pipeline from scratch with a new group name: a "
          "fresh group with subscriptionMode=all reads the whole retained log "
          "without disturbing the existing one",
          "[sim][subscription][recipe]") {
  sub_fixture fx;
  fx.push("q", "Default", {"a", "b", "c"});
  CHECK(fx.offsets("q", "v1") == offs{0, 1, 2});
  fx.push("q", "Default", {"d"});
  CHECK(fx.offsets("q", "v2", mode("all")) == offs{0, 1, 2, 3});
  CHECK(fx.offsets("q", "v1") == offs{3});
}

// -- empty-scan watermarks and the candidate set ------------------------------

namespace {

/// Pops the queues sent to partitions so far.
std::uint64_t asked(sub_fixture& fx) {
  return fx.metrics->partition_pops.load();
}

/// Pushes one frame to each of `n` partitions p0..p(n-1) as one push.
void spread(sub_fixture& fx, const std::string& queue, std::size_t n) {
  std::vector<actors::broker_push_item> v;
  for (std::size_t i = 0; i < n; ++i)
    v.push_back({queue, {"p" + std::to_string(i), msg("x")}});
  auto r = fx.request<actors::queue_push_reply>(fx.broker,
                                                actors::push_atom::value, v);
  REQUIRE(r);
  REQUIRE_FALSE(r->failure);
}

} // namespace

TEST_CASE("a partition a group found empty at last offset X is skipped by its "
          "wildcard pops until its last offset passes X",
          "[sim][subscription][candidates]") {
  sub_fixture fx;
  spread(fx, "q", 4);
  auto got = fx.consume("q", "g"); // claims all four
  REQUIRE(got.size() == 4);
  CHECK(fx.consume("q", "g").empty()); // finds all four empty
  auto before = asked(fx);
  CHECK(fx.consume("q", "g").empty());
  CHECK(asked(fx) == before); // nobody is asked again
  fx.push("q", "p2", {"y"});
  before = asked(fx);
  auto again = fx.consume("q", "g");
  CHECK(asked(fx) == before + 1); // only p2
  CHECK(again["p2"] == offs{1});
  // Another group is not affected by g's watermarks.
  CHECK(fx.consume("q", "other").size() == 4);
}

TEST_CASE("a wildcard pop on a queue with 10,000 partitions does not scan all "
          "of them",
          "[sim][subscription][candidates]") {
  sub_fixture fx;
  fx.pop_limits.max_partitions = 10'000;
  fx.start();
  spread(fx, "big", 10'000);
  // The first pops meet every partition once.
  std::size_t delivered = 0;
  for (int i = 0; i < 3 && delivered < 10'000; ++i) {
    actors::queue_pop_request r;
    r.group = "g";
    r.batch = 10'000;
    r.partitions = 10'000;
    r.auto_ack = true;
    r.lease_id = "all-" + std::to_string(i);
    auto out = fx.request<actors::queue_pop_reply>(
        fx.broker, actors::pop_atom::value, std::string{"big"}, r);
    REQUIRE(out);
    for (auto& c : out->claimed)
      delivered += c.reply.messages.size();
  }
  REQUIRE(delivered == 10'000);
  CHECK(fx.consume("big", "g").empty()); // every partition found empty once
  fx.push("big", "p7777", {"late"});
  auto before = asked(fx);
  auto got = fx.consume("big", "g");
  CHECK(got["p7777"] == offs{1});
  CHECK(asked(fx) - before == 1);
}

TEST_CASE("a subscription update clears the group's empty-scan watermarks: "
          "its next pop considers every partition again",
          "[sim][subscription][candidates]") {
  sub_fixture fx;
  spread(fx, "q", 3);
  fx.consume("q", "g");
  fx.consume("q", "g"); // all three found empty
  auto before = asked(fx);
  fx.consume("q", "g");
  REQUIRE(asked(fx) == before);
  auto r = fx.request<actors::sub_update_reply>(
      fx.broker, actors::sub_update_atom::value, std::string{"g"}, fx.wall());
  REQUIRE(r);
  CHECK(r->rows_updated == 1);
  fx.consume("q", "g");
  CHECK(asked(fx) == before + 3);
}

TEST_CASE("a partition met after registration gets its seed row at first "
          "contact, even when that pop finds nothing: a later subscription "
          "update and a restart do not skip its backlog",
          "[sim][subscription][restart]") {
  sub_fixture fx;
  core::options_patch o;
  o.delayed_processing_s = 60; // frames invisible for a minute
  fx.configure("q", o);
  CHECK(fx.consume("q", "g", mode("all")).empty()); // registers `all`
  fx.push("q", "P2", {"a", "b"});                   // a partition met later
  CHECK(fx.offsets("q", "g", {}, "P2").empty());    // first contact: delayed
  // Its seed row is stored now.
  auto row = fx.cursor("q", "P2", "g");
  REQUIRE(row);
  CHECK(row->committed == offset{-1});
  // A subscription update to the future, then a restart: P2 keeps its seed.
  auto r = fx.request<actors::sub_update_reply>(
      fx.broker, actors::sub_update_atom::value, std::string{"g"},
      fx.wall() + 3'600'000'000);
  REQUIRE(r);
  REQUIRE_FALSE(r->failure);
  fx.start();
  fx.advance(61s);
  CHECK(fx.offsets("q", "g", {}, "P2") == offs{0, 1});
}

TEST_CASE("a partition created after a subscription update is seeded from the "
          "new timestamp",
          "[sim][subscription]") {
  sub_fixture fx;
  fx.push("q", "P1", {"x"});
  CHECK(fx.consume("q", "g", mode("all"))
        == std::map<std::string, offs>{{"P1", offs{0}}});
  fx.advance(1s);
  auto ts = fx.wall() + 3'600'000'000; // an hour ahead
  auto r = fx.request<actors::sub_update_reply>(
      fx.broker, actors::sub_update_atom::value, std::string{"g"}, ts);
  REQUIRE(r);
  REQUIRE(r->rows_updated == 1);
  fx.push("q", "P2", {"before-ts"}); // created after the update
  fx.advance(2h);
  fx.push("q", "P2", {"after-ts"});
  CHECK(fx.offsets("q", "g", {}, "P2") == offs{1});
  // After a restart too, from the stored record.
  fx.push("q", "P3", {"late-0"});
  fx.start();
  CHECK(fx.offsets("q", "g", {}, "P3") == offs{0});
}
