// Replay (semantics.md §6, the product document's "Seek" and "Changing the
// stored subscription"): seek per queue and per partition through the
// broker, in one durable write, and the subscription update. The writer
// sits behind a gate (sim/write_gate.hpp), so writes can be counted and
// held.

#include "sim/broker_sim.hpp"
#include "sim/write_gate.hpp"

#include <map>
#include <random>

#include "actors/fan_out.hpp"
#include "actors/queue/queue_actor.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct seek_fixture : broker_sim {
  seek_fixture() {
    gate_st->keep = true; // writes are counted
  }

  ~seek_fixture() {
    open_gate();
  }

  void close_gate() {
    gate_st->closed = true;
  }

  void open_gate() {
    gate_st->closed = false;
    caf::anon_send(gated, actors::flush_atom::value);
    run();
  }

  std::size_t writes() const {
    return gate_st->seen.size();
  }

  /// Pushes `n` frames to (queue, partition) as one push: one segment with
  /// the default limits. Returns the first offset.
  offset push(const std::string& queue, const std::string& partition,
              std::size_t n = 1) {
    std::vector<actors::broker_push_item> v;
    for (std::size_t i = 0; i < n; ++i)
      v.push_back({queue, {partition, msg("m" + std::to_string(i))}});
    auto r = request<actors::queue_push_reply>(broker, actors::push_atom::value,
                                               v);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    return r->results.front().result.off;
  }

  /// Pops (queue, partition) for `group`; the delivery of that partition
  /// (empty when none).
  actors::pop_reply pop(const std::string& queue, const std::string& partition,
                        const std::string& group, std::size_t batch = 100) {
    auto out = request<actors::queue_pop_reply>(
        broker, actors::pop_atom::value, queue,
        pop_request(group, partition, batch));
    REQUIRE(out);
    REQUIRE_FALSE(out->failure);
    if (out->claimed.empty()) {
      actors::pop_reply empty;
      empty.reason = out->reason;
      return empty;
    }
    return out->claimed.front().reply;
  }

  std::vector<offset> offsets(const actors::pop_reply& r) {
    std::vector<offset> out;
    for (auto& m : r.messages)
      out.push_back(m.frame.off);
    return out;
  }

  actors::ack_reply ack(const std::string& queue, const std::string& partition,
                        const std::string& group, const std::string& lease,
                        offset off, ack_status status = ack_status::completed) {
    ack_request a;
    a.lease_id = lease;
    a.off = off;
    a.status = status;
    auto out = ack_located(queue, partition, group, std::vector{a});
    REQUIRE(out);
    REQUIRE(out->size() == 1);
    return out->front();
  }

  /// Pops everything of (queue, partition) for `group` and acks it.
  void consume_all(const std::string& queue, const std::string& partition,
                   const std::string& group) {
    auto r = pop(queue, partition, group, 10'000);
    REQUIRE(r.lease);
    for (auto off : offsets(r))
      REQUIRE(ack(queue, partition, group, r.lease->id, off).error
              == ack_error::none);
  }

  actors::seek_reply seek(const std::string& queue, const std::string& group,
                          core::seek_target target,
                          std::optional<std::string> partition = {},
                          bool dry_run = false) {
    actors::seek_request req{group, std::move(partition), target, dry_run};
    auto r = request<actors::seek_reply>(broker, actors::seek_atom::value,
                                         queue, req);
    REQUIRE(r);
    return *r;
  }

  /// `failure` is `code` with `message`.
  static void check_failure(const std::optional<api_error>& failure, errc code,
                            const std::string& message) {
    REQUIRE(failure);
    CHECK(failure->code == code);
    CHECK(failure->message == message);
  }

  static core::seek_target to_end() {
    core::seek_target t;
    t.to_end = true;
    return t;
  }
  static core::seek_target to_start() {
    core::seek_target t;
    t.to_start = true;
    return t;
  }
  static core::seek_target at(storage::micros ts) {
    core::seek_target t;
    t.timestamp = ts;
    return t;
  }
  static core::seek_target to_offset(std::int64_t n) {
    core::seek_target t;
    t.offset = n;
    return t;
  }

  offset committed(const std::string& queue, const std::string& part,
                   const std::string& group) {
    auto c = cursor(queue, part, group);
    REQUIRE(c);
    return c->committed;
  }

  std::optional<storage::subscription_record>
  subscription(const std::string& queue, const std::string& group) {
    auto q = queue_id(queue);
    auto t = store.store->db().read();
    REQUIRE(t);
    auto s = storage::tables::get_subscription(*t, q, group);
    REQUIRE(s);
    return *s;
  }

  actors::sub_update_reply update_subscription(const std::string& group,
                                               storage::micros ts) {
    auto r = request<actors::sub_update_reply>(
        broker, actors::sub_update_atom::value, group, ts);
    REQUIRE(r);
    return *r;
  }
};

} // namespace

// -- the routes ---------------------------------------------------------------

TEST_CASE("The per-queue form applies to every partition of the queue in one "
          "durable write and answers with partitionsUpdated",
          "[sim][seek]") {
  seek_fixture fx;
  for (auto p : {"p1", "p2", "p3"})
    fx.push("q", p, 5);
  fx.consume_all("q", "p1", "g");
  auto before = fx.writes();
  fx.close_gate();
  auto answer = fx.request_later<actors::seek_reply>(
      fx.broker, actors::seek_atom::value, std::string{"q"},
      actors::seek_request{"g", std::nullopt, fx.to_start(), false});
  fx.run();
  CHECK_FALSE(*answer); // answered only once durable
  REQUIRE(fx.writes() == before + 1);
  auto& batch = fx.gate_st->seen.back();
  CHECK(count_of<storage::mut::put_cursor>(batch) == 3);
  fx.open_gate();
  REQUIRE(*answer);
  auto& r = **answer;
  REQUIRE_FALSE(r.failure);
  CHECK(r.partitions_updated == 3);
  REQUIRE(r.positions.size() == 3);
  CHECK(r.positions[0].partition == "p1");
  CHECK(r.positions[0].before == offset{4});
  CHECK(r.positions[0].after == offset{-1});
  CHECK(fx.writes() == before + 1); // nothing else was written
  for (auto p : {"p1", "p2", "p3"})
    CHECK(fx.committed("q", p, "g") == offset{-1});
}

TEST_CASE("A per-queue seek over more partitions than the fan-out window "
          "moves every partition in one durable write",
          "[sim][seek]") {
  seek_fixture fx;
  const auto n = 2 * actors::gather_window + 5;
  std::vector<actors::broker_push_item> items;
  for (std::size_t p = 0; p < n; ++p)
    for (int k = 0; k < 2; ++k)
      items.push_back({"q", {"p" + std::to_string(p), msg("m")}});
  auto pushed = fx.request<actors::queue_push_reply>(
      fx.broker, actors::push_atom::value, items);
  REQUIRE(pushed);
  REQUIRE_FALSE(pushed->failure);
  auto before = fx.writes();
  auto r = fx.seek("q", "g", fx.to_end());
  REQUIRE_FALSE(r.failure);
  CHECK(r.partitions_updated == n);
  REQUIRE(fx.writes() == before + 1);
  CHECK(count_of<storage::mut::put_cursor>(fx.gate_st->seen.back()) >= n);
  for (std::size_t p = 0; p < n; ++p)
    CHECK(fx.committed("q", "p" + std::to_string(p), "g") == offset{1});
}

TEST_CASE("A queue that does not exist, or that has no partitions yet, is "
          "reported as a failure (Queue not found or has no partitions) "
          "rather than as a successful no-op",
          "[sim][seek]") {
  seek_fixture fx;
  auto before = fx.writes();
  auto r = fx.seek("ghost", "g", fx.to_end());
  fx.check_failure(r.failure, errc::not_found,
                   "Queue not found or has no partitions");
  CHECK(r.partitions_updated == 0);
  // A queue actor without partitions answers the same.
  actors::queue_config qc;
  qc.node.store = fx.store.store.get();
  qc.node.writer = fx.writer;
  qc.node.wall = [&fx] { return fx.wall(); };
  qc.record.id = storage::queue_id{999};
  qc.record.name = "empty";
  auto q = actors::spawn_queue(fx.sys, qc);
  REQUIRE(q);
  auto e = fx.request<actors::seek_reply>(
      *q, actors::seek_atom::value,
      actors::seek_request{"g", std::nullopt, fx.to_end(), false});
  REQUIRE(e);
  fx.check_failure(e->failure, errc::not_found,
                   "Queue not found or has no partitions");
  caf::anon_send_exit(*q, caf::exit_reason::user_shutdown);
  fx.run();
  CHECK(fx.writes() == before);
}

TEST_CASE("The per-partition form answers with updated: true, or a not-found "
          "error",
          "[sim][seek]") {
  seek_fixture fx;
  fx.push("q", "p1", 3);
  fx.push("q", "p2", 3);
  fx.consume_all("q", "p1", "g");
  fx.consume_all("q", "p2", "g");
  auto r = fx.seek("q", "g", fx.to_start(), "p2");
  REQUIRE_FALSE(r.failure);
  CHECK(r.partitions_updated == 1); // updated: true
  CHECK(fx.committed("q", "p2", "g") == offset{-1});
  CHECK(fx.committed("q", "p1", "g") == offset{2}); // not named: untouched
  auto before = fx.writes();
  auto missing = fx.seek("q", "g", fx.to_start(), "nope");
  fx.check_failure(missing.failure, errc::not_found, "Partition not found");
  CHECK(fx.writes() == before);
}

TEST_CASE("A body with neither is rejected with Must specify toEnd=true or a "
          "timestamp",
          "[sim][seek]") {
  seek_fixture fx;
  fx.push("q", "Default", 3);
  auto before = fx.writes();
  auto r = fx.seek("q", "g", core::seek_target{});
  fx.check_failure(r.failure, errc::invalid_argument,
                   "Must specify toEnd=true or a timestamp");
  // Checked before the queue is looked up (a bad body is a 400, not a 404).
  auto ghost = fx.seek("ghost", "g", core::seek_target{});
  REQUIRE(ghost.failure);
  CHECK(ghost.failure->code == errc::invalid_argument);
  CHECK(fx.writes() == before);
  CHECK_FALSE(fx.cursor("q", "Default", "g"));
}

// -- targets ------------------------------------------------------------------

TEST_CASE("Skip a backlog you no longer care about: a seek with toEnd skips "
          "it, toEnd wins over a timestamp",
          "[sim][seek][recipe]") {
  seek_fixture fx;
  fx.push("q", "Default", 10);
  auto t = fx.to_end();
  t.timestamp = 0; // would replay everything
  auto r = fx.seek("q", "g", t);
  REQUIRE_FALSE(r.failure);
  CHECK(fx.committed("q", "Default", "g") == offset{9});
  CHECK(fx.pop("q", "Default", "g").messages.empty());
  fx.push("q", "Default", 1);
  CHECK(fx.offsets(fx.pop("q", "Default", "g")) == std::vector{offset{10}});
}

TEST_CASE("A timestamp seek is segment-granular: the cursor is set to "
          "base_offset - 1 of the first segment whose commit time is at or "
          "after the timestamp, moving backward too",
          "[sim][seek]") {
  seek_fixture fx;
  auto t0 = fx.wall();
  fx.push("q", "Default", 100); // base 0, created t0
  fx.advance(5min);
  auto t5 = fx.wall();
  fx.push("q", "Default", 100); // base 100, created t0 + 5 min
  fx.advance(5min);
  fx.push("q", "Default", 100); // base 200, created t0 + 10 min
  fx.consume_all("q", "Default", "g");
  REQUIRE(fx.committed("q", "Default", "g") == offset{299});
  REQUIRE_FALSE(fx.seek("q", "g", fx.at(t5)).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{99}); // backward
  CHECK(fx.pop("q", "Default", "g", 1).messages.front().frame.off
        == offset{100});
  // Between two stamps: the segment after it, never partway through one.
  REQUIRE_FALSE(fx.seek("q", "g", fx.at(t0 + 1)).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{99});
  REQUIRE_FALSE(fx.seek("q", "g", fx.at(t0)).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{-1});
  // Nothing that recent: lastOffset, a future-only cursor.
  REQUIRE_FALSE(fx.seek("q", "g", fx.at(fx.wall() + 1)).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{299});
}

TEST_CASE("A timestamp older than the oldest retained segment resolves to "
          "that oldest segment",
          "[sim][seek]") {
  seek_fixture fx;
  auto t0 = fx.wall();
  fx.push("q", "Default", 10);
  fx.advance(1min);
  fx.push("q", "Default", 10);
  fx.advance(1min);
  fx.push("q", "Default", 10);
  auto purged = fx.request<actors::purge_reply>(
      fx.broker, actors::purge_atom::value, std::string{"q"},
      actors::purge_request{std::nullopt, offset{10}});
  REQUIRE(purged);
  REQUIRE_FALSE(purged->failure);
  fx.consume_all("q", "Default", "g");
  REQUIRE_FALSE(fx.seek("q", "g", fx.at(t0 - 3'600'000'000)).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{9});
  auto r = fx.pop("q", "Default", "g");
  CHECK(r.messages.front().frame.off == offset{10});
  CHECK_FALSE(r.skipped);
}

TEST_CASE("Spool's additions: toStart, offset n (n - 1, clamped) and shiftBy "
          "from the current position",
          "[sim][seek]") {
  seek_fixture fx;
  fx.push("q", "Default", 20);
  fx.consume_all("q", "Default", "g");
  REQUIRE_FALSE(fx.seek("q", "g", fx.to_offset(7)).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{6});
  core::seek_target back;
  back.shift_by = -4;
  REQUIRE_FALSE(fx.seek("q", "g", back).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{2});
  REQUIRE_FALSE(fx.seek("q", "g", fx.to_offset(1000)).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{19});
  REQUIRE_FALSE(fx.seek("q", "g", fx.to_start()).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{-1});
}

// -- what every seek does -----------------------------------------------------

TEST_CASE("A seek releases any live lease, so a late ack of the abandoned "
          "batch fails with Invalid or expired lease, and resets the retry "
          "budget and the redelivery counters",
          "[sim][seek]") {
  seek_fixture fx;
  fx.push("q", "Default", 3);
  auto first = fx.pop("q", "Default", "g", 3);
  REQUIRE(first.lease);
  // A failure charges offset 0 (retry budget) and ends the lease.
  REQUIRE(fx.ack("q", "Default", "g", first.lease->id, offset{0},
                 ack_status::failed)
              .lease_released);
  auto second = fx.pop("q", "Default", "g", 3);
  REQUIRE(second.lease);
  CHECK(second.messages.front().delivery_count == 2);
  auto epoch = second.lease->epoch;
  REQUIRE_FALSE(fx.seek("q", "g", fx.to_start()).failure);
  auto rec = fx.cursor("q", "Default", "g");
  REQUIRE(rec);
  CHECK(rec->counters.empty()); // failures and delivery counts reset
  CHECK_FALSE(rec->leased);
  CHECK(rec->lease_epoch > epoch);
  CHECK(fx.ack("q", "Default", "g", second.lease->id, offset{0}).error
        == ack_error::invalid_lease);
  auto third = fx.pop("q", "Default", "g", 3);
  REQUIRE(third.lease);
  CHECK(third.messages.front().delivery_count == 1);
  CHECK(third.lease->epoch == rec->lease_epoch + 1);
}

TEST_CASE("Give up on a stuck batch: seeking abandons an in-flight claim "
          "without waiting for its expiry",
          "[sim][seek][recipe]") {
  seek_fixture fx;
  fx.push("q", "Default", 10);
  auto stuck = fx.pop("q", "Default", "g", 5);
  REQUIRE(stuck.lease);
  CHECK(fx.pop("q", "Default", "g").reason == empty_reason::lease_held);
  REQUIRE_FALSE(fx.seek("q", "g", fx.to_offset(5)).failure); // skip it
  auto next = fx.pop("q", "Default", "g", 5);
  CHECK(fx.offsets(next)
        == std::vector{offset{5}, offset{6}, offset{7}, offset{8}, offset{9}});
}

TEST_CASE("A seek creates the (partition, group) row if the group had never "
          "popped that partition",
          "[sim][seek]") {
  seek_fixture fx;
  fx.push("q", "p1", 5);
  fx.consume_all("q", "p1", "g"); // registers g: p2 does not exist yet
  fx.push("q", "p2", 5);
  REQUIRE_FALSE(fx.cursor("q", "p2", "g"));
  REQUIRE_FALSE(fx.seek("q", "g", fx.to_end()).failure);
  CHECK(fx.committed("q", "p2", "g") == offset{4});
  CHECK(fx.committed("q", "p1", "g") == offset{4});
}

TEST_CASE("A seek affects exactly one consumer group: every other group's "
          "cursor on the same partitions is untouched",
          "[sim][seek]") {
  seek_fixture fx;
  fx.push("q", "Default", 10);
  fx.consume_all("q", "Default", "a");
  auto held = fx.pop("q", "Default", "b", 4);
  REQUIRE(held.lease);
  auto b_before = fx.cursor("q", "Default", "b");
  REQUIRE_FALSE(fx.seek("q", "a", fx.to_start()).failure);
  CHECK(fx.committed("q", "Default", "a") == offset{-1});
  CHECK(fx.cursor("q", "Default", "b") == b_before);
  // b's lease is still live.
  CHECK(fx.ack("q", "Default", "b", held.lease->id, offset{0}).error
        == ack_error::none);
}

TEST_CASE("Replay begins on the next poll: a parked pop of the group is "
          "served at once by a backward seek",
          "[sim][seek][long-poll]") {
  seek_fixture fx;
  fx.push("q", "Default", 3);
  fx.consume_all("q", "Default", "g");
  fx.consume_all("q", "Default", "other");
  auto parked_req = fx.pop_request("g", std::nullopt, 100);
  parked_req.wait = true;
  parked_req.timeout = 60s;
  auto parked = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, parked_req);
  auto other_req = fx.pop_request("other", std::nullopt, 100);
  other_req.wait = true;
  other_req.timeout = 60s;
  auto other = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, other_req);
  fx.run();
  REQUIRE_FALSE(*parked);
  REQUIRE_FALSE(*other);
  REQUIRE_FALSE(fx.seek("q", "g", fx.to_start()).failure);
  REQUIRE(*parked);
  REQUIRE((*parked)->claimed.size() == 1);
  CHECK(fx.offsets((*parked)->claimed.front().reply)
        == std::vector{offset{0}, offset{1}, offset{2}});
  CHECK_FALSE(*other); // only the named group replays
  fx.advance(60s);
  REQUIRE(*other);
  CHECK((*other)->claimed.empty());
}

TEST_CASE("Replay begins on the next poll: a parked namespace pop of the "
          "group is served by a backward seek too",
          "[sim][seek][long-poll]") {
  seek_fixture fx;
  fx.push("ns.q", "Default", 2);
  fx.consume_all("ns.q", "Default", "g");
  actors::namespace_pop_request req;
  req.name_space = "ns";
  req.pop = fx.pop_request("g", std::nullopt, 100);
  req.pop.wait = true;
  req.pop.timeout = 60s;
  auto parked = fx.request_later<actors::namespace_pop_reply>(
      fx.broker, actors::pop_atom::value, req);
  fx.run();
  REQUIRE_FALSE(*parked);
  REQUIRE_FALSE(fx.seek("ns.q", "g", fx.to_start()).failure);
  REQUIRE(*parked);
  CHECK((*parked)->queue == "ns.q");
  REQUIRE((*parked)->reply.claimed.size() == 1);
  CHECK((*parked)->reply.claimed.front().reply.messages.size() == 2);
}

TEST_CASE("A dry run answers the positions and writes nothing", "[sim][seek]") {
  seek_fixture fx;
  fx.push("q", "p1", 5);
  fx.consume_all("q", "p1", "g"); // registers g: p2 does not exist yet
  fx.push("q", "p2", 5);
  fx.push("q", "p1", 2);
  auto live = fx.pop("q", "p1", "g", 1);
  REQUIRE(live.lease);
  auto rec = fx.cursor("q", "p1", "g");
  auto sub = fx.subscription("q", "g");
  auto before = fx.writes();
  auto r = fx.seek("q", "g", fx.to_start(), std::nullopt, true);
  REQUIRE_FALSE(r.failure);
  CHECK(r.partitions_updated == 0);
  REQUIRE(r.positions.size() == 2);
  CHECK(r.positions[0].partition == "p1");
  CHECK(r.positions[0].before == offset{4});
  CHECK(r.positions[0].after == offset{-1});
  CHECK(r.positions[1].partition == "p2");
  CHECK_FALSE(r.positions[1].before); // g never met p2
  CHECK(r.positions[1].after == offset{-1});
  CHECK(fx.writes() == before);
  CHECK(fx.cursor("q", "p1", "g") == rec);
  CHECK_FALSE(fx.cursor("q", "p2", "g"));
  CHECK(fx.subscription("q", "g") == sub);
  auto listed = fx.request<actors::groups_reply>(
      fx.broker, actors::groups_atom::value,
      actors::groups_request{std::string{"g"}, std::string{"q"}});
  REQUIRE(listed);
  CHECK(listed->cursors.size() == 1); // no cursor created on p2
  CHECK(fx.ack("q", "p1", "g", live.lease->id, offset{5}).error
        == ack_error::none);
}

TEST_CASE("A seek writes no subscription record: the group's first pop "
          "registers with its own mode and seeds only the partitions the "
          "seek did not touch",
          "[sim][seek][subscription]") {
  seek_fixture fx;
  fx.push("q", "p1", 3); // 0..2
  fx.push("q", "p2", 3); // 0..2
  // A fresh group seeks p1 to its end: p1's row is written, no record.
  REQUIRE_FALSE(fx.seek("q", "g", fx.to_end(), std::string{"p1"}).failure);
  CHECK_FALSE(fx.subscription("q", "g"));
  CHECK(fx.committed("q", "p1", "g") == offset{2});
  CHECK_FALSE(fx.cursor("q", "p2", "g"));
  // Its first pop says `all`: registered as all, p2 seeded from its
  // beginning (its backlog is delivered), p1 keeps the seek's position.
  auto first = fx.pop_request("g", std::string{"p2"}, 10);
  first.subscription = {"all", {}};
  auto r = fx.request<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, first);
  REQUIRE(r);
  REQUIRE(r->claimed.size() == 1);
  CHECK(fx.offsets(r->claimed.front().reply)
        == std::vector{offset{0}, offset{1}, offset{2}});
  auto s = fx.subscription("q", "g");
  REQUIRE(s);
  CHECK(s->mode == storage::subscription_mode::all);
  CHECK(fx.committed("q", "p1", "g") == offset{2});
  CHECK(fx.pop("q", "p1", "g", 10).messages.empty());
  // Seeking __QUEUE_MODE__ is allowed and writes no record either.
  REQUIRE_FALSE(fx.seek("q", "__QUEUE_MODE__", fx.to_end()).failure);
  CHECK(fx.committed("q", "p1", "__QUEUE_MODE__") == offset{2});
  CHECK_FALSE(fx.subscription("q", "__QUEUE_MODE__"));
}

// -- staging: nothing interleaves ---------------------------------------------

TEST_CASE("While a seek is pending on a cursor, the group's other requests "
          "there wait for it, other groups do not",
          "[sim][seek]") {
  seek_fixture fx;
  fx.push("q", "Default", 5);
  fx.consume_all("q", "Default", "g");
  fx.close_gate();
  auto sought = fx.request_later<actors::seek_reply>(
      fx.broker, actors::seek_atom::value, std::string{"q"},
      actors::seek_request{"g", std::nullopt, fx.to_start(), false});
  fx.run();
  auto popped = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"},
      fx.pop_request("g", std::string{"Default"}, 2));
  fx.run();
  CHECK_FALSE(*sought);
  CHECK_FALSE(*popped);       // waits for the seek to settle
  fx.gate_st->closed = false; // writes from now on pass
  auto other = fx.pop("q", "Default", "h", 1);
  CHECK(other.messages.size() == 1);
  fx.open_gate();
  REQUIRE(*sought);
  REQUIRE(*popped);
  REQUIRE((*popped)->claimed.size() == 1);
  CHECK(fx.offsets((*popped)->claimed.front().reply)
        == std::vector{offset{0}, offset{1}});
}

namespace {

/// g (registered, mode all) has no cursor on p2 (3 frames); a seek to the
/// end is staged behind the closed gate, then a pop of g on p2 arrives.
struct held_seek_run {
  std::shared_ptr<std::optional<actors::seek_reply>> sought;
  std::shared_ptr<std::optional<actors::queue_pop_reply>> popped;
};

held_seek_run seek_then_pop_behind_gate(seek_fixture& fx) {
  fx.push("q", "Default", 2);
  fx.consume_all("q", "Default", "g");
  fx.push("q", "p2", 3);
  fx.close_gate();
  held_seek_run out;
  out.sought = fx.request_later<actors::seek_reply>(
      fx.broker, actors::seek_atom::value, std::string{"q"},
      actors::seek_request{"g", std::nullopt, fx.to_end(), false});
  fx.run();
  REQUIRE(fx.gate_st->held.size() == 1);
  out.popped = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"},
      fx.pop_request("g", std::string{"p2"}, 10));
  fx.run();
  CHECK_FALSE(*out.sought);
  CHECK_FALSE(*out.popped); // the cursor it spawns holds the seek
  return out;
}

} // namespace

TEST_CASE("A seek for a group without a live cursor on a partition is "
          "staged there without one, a pop arriving before it is durable "
          "waits, then starts at the new position",
          "[sim][seek]") {
  seek_fixture fx;
  auto [sought, popped] = seek_then_pop_behind_gate(fx);
  fx.open_gate();
  REQUIRE(*sought);
  REQUIRE_FALSE((**sought).failure);
  REQUIRE(*popped);
  CHECK((*popped)->claimed.empty()); // toEnd: nothing before it is replayed
  CHECK(fx.committed("q", "p2", "g") == offset{2});
  fx.push("q", "p2", 1);
  CHECK(fx.offsets(fx.pop("q", "p2", "g")) == std::vector{offset{3}});
}

TEST_CASE("A seek staged for a group without a live cursor that fails to "
          "write leaves the group where it was",
          "[sim][seek]") {
  seek_fixture fx;
  auto [sought, popped] = seek_then_pop_behind_gate(fx);
  fx.gate_st->fail_held = true;
  fx.open_gate();
  fx.gate_st->fail_held = false;
  REQUIRE(*sought);
  REQUIRE((**sought).failure);
  REQUIRE(*popped);
  REQUIRE((*popped)->claimed.size() == 1);
  CHECK(fx.offsets((*popped)->claimed.front().reply)
        == std::vector{offset{0}, offset{1}, offset{2}});
  CHECK(fx.committed("q", "Default", "g") == offset{1});
}

TEST_CASE("A seek waits for a transaction staged on the cursor, and for a "
          "deletion of its group in progress",
          "[sim][seek][txn]") {
  seek_fixture fx;
  fx.push("q", "Default", 3);
  auto lease = fx.pop("q", "Default", "g", 3).lease;
  REQUIRE(lease);
  fx.close_gate();
  core::txn_request txn;
  ack_request a;
  a.lease_id = lease->id;
  a.off = offset{0};
  txn.ops.push_back(
      core::txn_ack_op{{}, fx.partition("q", "Default").uuid, "g", a});
  auto committed = fx.request_later<actors::txn_reply>(
      fx.broker, actors::txn_atom::value, txn);
  fx.run();
  REQUIRE(fx.gate_st->held.size() == 1); // the transaction's write
  auto sought = fx.request_later<actors::seek_reply>(
      fx.broker, actors::seek_atom::value, std::string{"q"},
      actors::seek_request{"g", std::nullopt, fx.to_end(), false});
  fx.run();
  CHECK(fx.gate_st->held.size() == 1); // the seek did not stage yet
  fx.open_gate();
  REQUIRE(*committed);
  CHECK((*committed)->result.success); // the lease was still live for it
  REQUIRE(*sought);
  REQUIRE_FALSE((**sought).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{2});

  // A deletion of the group is in progress: the seek waits for it, then
  // applies to the group afresh.
  fx.close_gate();
  auto deleted = fx.request_later<actors::delete_group_reply>(
      fx.broker, actors::delete_atom::value,
      actors::delete_group_request{"g", std::string{"q"}});
  fx.run();
  REQUIRE(fx.gate_st->held.size() == 1);
  auto before = fx.writes();
  auto later = fx.request_later<actors::seek_reply>(
      fx.broker, actors::seek_atom::value, std::string{"q"},
      actors::seek_request{"g", std::nullopt, fx.to_start(), false});
  fx.run();
  CHECK_FALSE(*later);
  CHECK(fx.writes() == before);
  fx.open_gate();
  REQUIRE(*deleted);
  REQUIRE_FALSE((**deleted).failure);
  REQUIRE(*later);
  REQUIRE_FALSE((**later).failure);
  CHECK(fx.committed("q", "Default", "g") == offset{-1});
}

TEST_CASE("Subscription records, seeded cursors and post-seek cursors "
          "survive a restart",
          "[sim][seek][subscription][restart]") {
  seek_fixture fx;
  fx.push("q", "Default", 5); // 0..4
  // "fresh" registers with subscriptionMode=new: seeded at 4.
  auto first = fx.pop_request("fresh", std::string{"Default"}, 10);
  first.subscription = {"new", {}};
  auto r = fx.request<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, first);
  REQUIRE(r);
  REQUIRE(r->claimed.empty());
  // "replayer" consumes everything, then seeks back to the start.
  fx.consume_all("q", "Default", "replayer");
  REQUIRE_FALSE(fx.seek("q", "replayer", fx.to_start()).failure);
  // "skipper" skips to offset 3 (committed 2).
  REQUIRE_FALSE(fx.seek("q", "skipper", fx.to_offset(3)).failure);
  auto sub = fx.subscription("q", "fresh");
  fx.start(); // restart: new actors over the same store
  CHECK(fx.subscription("q", "fresh") == sub);
  CHECK_FALSE(fx.subscription("q", "skipper")); // a seek registers nothing
  CHECK(fx.committed("q", "Default", "fresh") == offset{4});
  CHECK(fx.committed("q", "Default", "replayer") == offset{-1});
  CHECK(fx.committed("q", "Default", "skipper") == offset{2});
  CHECK(fx.offsets(fx.pop("q", "Default", "fresh", 10)).empty());
  CHECK(fx.offsets(fx.pop("q", "Default", "replayer", 10))
        == std::vector{offset{0}, offset{1}, offset{2}, offset{3}, offset{4}});
  CHECK(fx.offsets(fx.pop("q", "Default", "skipper", 10))
        == std::vector{offset{3}, offset{4}});
  // A partition created after the restart is seeded from fresh's record.
  fx.advance(1s);
  fx.push("q", "later", 2);
  CHECK(fx.offsets(fx.pop("q", "later", "fresh", 10))
        == std::vector{offset{0}, offset{1}});
}

// -- recipes ------------------------------------------------------------------

TEST_CASE("Reprocess the last hour for one group: seek that group's queue to "
          "a timestamp one hour back, other groups keep their positions",
          "[sim][seek][recipe]") {
  seek_fixture fx;
  for (int i = 0; i < 4; ++i) { // a segment every 30 minutes, per partition
    fx.push("q", "p1", 10);
    fx.push("q", "p2", 10);
    fx.advance(30min);
  }
  auto hour_ago = fx.wall() - 3'600'000'000;
  for (auto g : {"reporting", "billing"})
    for (auto p : {"p1", "p2"})
      fx.consume_all("q", p, g);
  auto r = fx.seek("q", "reporting", fx.at(hour_ago));
  REQUIRE_FALSE(r.failure);
  CHECK(r.partitions_updated == 2);
  for (auto p : {"p1", "p2"}) {
    // Pushed at 0, 30, 60, 90 min; now is 120: the last two segments.
    CHECK(fx.committed("q", p, "reporting") == offset{19});
    CHECK(fx.committed("q", p, "billing") == offset{39});
    CHECK(fx.pop("q", p, "reporting").messages.size() == 20);
    CHECK(fx.pop("q", p, "billing").messages.empty());
  }
}

TEST_CASE("A seek held for a group whose stored row records a lease lost to "
          "a restart starts it afresh: the late ack fails, the counters reset",
          "[sim][seek][restart]") {
  seek_fixture fx;
  fx.push("q", "p", 3);
  auto first = fx.pop("q", "p", "g", 3);
  REQUIRE(first.lease);
  REQUIRE(first.messages.size() == 3);
  {
    auto row = fx.cursor("q", "p", "g");
    REQUIRE(row);
    REQUIRE(row->leased); // the pop's write recorded its lease
  }
  fx.start(); // restart: the lease is lost, g has no live cursor
  auto r = fx.seek("q", "g", seek_fixture::to_start());
  REQUIRE_FALSE(r.failure);
  {
    auto row = fx.cursor("q", "p", "g");
    REQUIRE(row);
    CHECK(row->committed == offset{-1});
    CHECK_FALSE(row->leased);
    CHECK(row->counters.empty());
  }
  // The consumer's late ack for the lease lost to the restart changes
  // nothing.
  auto late = fx.ack("q", "p", "g", first.lease->id, offset{0});
  CHECK(late.error != ack_error::none);
  CHECK(fx.committed("q", "p", "g") == offset{-1});
  // The replay delivers everything as new: the lost lease charged nothing.
  auto again = fx.pop("q", "p", "g", 3);
  REQUIRE(again.messages.size() == 3);
  for (auto& m : again.messages)
    CHECK(m.delivery_count == 1);
}

// -- randomized ---------------------------------------------------------------

TEST_CASE("A timestamp seek always lands where the forward walk over the "
          "segments says, whatever the segment sizes and positions",
          "[sim][seek][random]") {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng{seed};
    seek_fixture fx;
    fx.segments.max_frames = 1 + rng() % 7;
    fx.start();
    auto start = fx.wall();
    std::vector<std::string> parts{"a", "b", "c"};
    for (auto& p : parts)
      fx.push("q", p, 1);
    for (int i = 0; i < 40; ++i) {
      fx.push("q", parts[rng() % parts.size()], 1 + rng() % 12);
      fx.advance(std::chrono::milliseconds{rng() % 3000});
    }
    if (rng() % 2 == 0) { // retention deleted the oldest segments somewhere
      auto p = parts[rng() % parts.size()];
      (void)fx.request<actors::purge_reply>(
          fx.broker, actors::purge_atom::value, std::string{"q"},
          actors::purge_request{p, offset{std::int64_t(rng() % 30)}});
    }
    auto end = fx.wall();
    for (int s = 0; s < 15; ++s) {
      if (rng() % 3 == 0) { // move the cursor somewhere first
        auto p = parts[rng() % parts.size()];
        (void)fx.seek("q", "g", fx.to_offset(rng() % 200), p);
      }
      auto span = end - start + 4'000'000;
      storage::micros ts
          = start - 2'000'000 + static_cast<storage::micros>(rng() % span);
      REQUIRE_FALSE(fx.seek("q", "g", fx.at(ts)).failure);
      for (auto& name : parts) {
        auto p = fx.partition("q", name);
        auto t = fx.store.store->db().read();
        REQUIRE(t);
        auto walked = storage::resolve_timestamp_by_walk(*t, p.queue, p.id, ts);
        REQUIRE(walked);
        INFO("partition " << name << " ts " << ts - start);
        CHECK(fx.committed("q", name, "g") == *walked);
      }
    }
  }
}

// -- subscription update ------------------------------------------------------

TEST_CASE("Changing the stored subscription updates the timestamp of every "
          "record of the group on every queue, moves no cursor and answers "
          "rowsUpdated",
          "[sim][subscription]") {
  seek_fixture fx;
  fx.push("q1", "Default", 5);
  fx.push("q2", "Default", 5);
  fx.push("q3", "Default", 5);
  // Records by registration: each group's first pop on a queue (a seek
  // writes none).
  auto reg = [&](const char* q, const char* g) {
    auto req = fx.pop_request(g, std::string{"Default"}, 1);
    req.subscription = {"new", {}};
    auto r = fx.request<actors::queue_pop_reply>(
        fx.broker, actors::pop_atom::value, std::string{q}, req);
    REQUIRE(r);
    REQUIRE(r->claimed.empty());
  };
  reg("q1", "g");
  reg("q1", "h");
  auto lease = fx.pop("q2", "Default", "g", 2).lease; // registers `all`
  REQUIRE(lease);
  auto g1 = *fx.subscription("q1", "g");
  auto h1 = *fx.subscription("q1", "h");
  auto c1 = fx.cursor("q1", "Default", "g");
  auto c2 = fx.cursor("q2", "Default", "g");
  auto before = fx.writes();
  auto ts = fx.wall() - 5'000'000;
  auto r = fx.update_subscription("g", ts);
  REQUIRE_FALSE(r.failure);
  CHECK(r.rows_updated == 2);
  CHECK(fx.writes() == before + 1); // one write for every record
  for (auto q : {"q1", "q2"}) {
    auto s = fx.subscription(q, "g");
    REQUIRE(s);
    CHECK(s->mode == storage::subscription_mode::timestamp);
    CHECK(s->timestamp == ts);
  }
  auto g1_after = *fx.subscription("q1", "g");
  CHECK(g1_after.registered_mode == g1.registered_mode);
  CHECK(g1_after.registered_at == g1.registered_at);
  CHECK_FALSE(fx.subscription("q3", "g")); // no record: none made
  CHECK(fx.subscription("q1", "h") == h1); // another group: untouched
  CHECK(fx.cursor("q1", "Default", "g") == c1);
  CHECK(fx.cursor("q2", "Default", "g") == c2);
  CHECK(fx.ack("q2", "Default", "g", lease->id, offset{0}).error
        == ack_error::none); // no lease touched
  auto none = fx.update_subscription("nobody", ts);
  REQUIRE_FALSE(none.failure);
  CHECK(none.rows_updated == 0);
}

TEST_CASE("The subscription update refuses queue mode (__QUEUE_MODE__)",
          "[sim][subscription]") {
  seek_fixture fx;
  fx.push("q", "Default", 1);
  fx.consume_all("q", "Default", "__QUEUE_MODE__"); // registers queue mode
  auto before = *fx.subscription("q", "__QUEUE_MODE__");
  auto r = fx.update_subscription("__QUEUE_MODE__", 1);
  fx.check_failure(r.failure, errc::invalid_argument,
                   "Queue mode has no subscription");
  CHECK(r.rows_updated == 0);
  CHECK(fx.subscription("q", "__QUEUE_MODE__") == before);
}

TEST_CASE("An empty report that had to write first does not hide a partition "
          "a seek brought back meanwhile",
          "[sim][seek][candidates]") {
  seek_fixture fx;
  fx.push("q", "p1", 1);
  fx.consume_all("q", "p1", "g"); // registers g (all)
  REQUIRE_FALSE(fx.update_subscription("g", fx.wall() + 3'600'000'000).failure);
  fx.push("q", "p2", 2); // met later: seeded at its end (the future ts)
  fx.close_gate();
  // g's first wildcard pop meets p2: its cursor writes the seed row first
  // (held here), then reports p2 empty at offset 1.
  auto wild = fx.pop_request("g", std::nullopt, 10);
  wild.partitions = 2;
  auto empty = fx.request_later<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, wild);
  fx.run();
  REQUIRE_FALSE(*empty);
  // Meanwhile a seek moves g back to p2's start.
  auto sought = fx.request_later<actors::seek_reply>(
      fx.broker, actors::seek_atom::value, std::string{"q"},
      actors::seek_request{"g", std::string{"p2"}, fx.to_start(), false});
  fx.run();
  fx.open_gate();
  REQUIRE(*empty);
  REQUIRE(*sought);
  REQUIRE_FALSE((*sought)->failure);
  CHECK(fx.committed("q", "p2", "g") == offset{-1});
  // The next wildcard pop is served from p2: the stale report is ignored.
  wild.lease_id = "after";
  auto next = fx.request<actors::queue_pop_reply>(
      fx.broker, actors::pop_atom::value, std::string{"q"}, wild);
  REQUIRE(next);
  REQUIRE(next->claimed.size() == 1);
  CHECK(next->claimed.front().partition == "p2");
  CHECK(fx.offsets(next->claimed.front().reply)
        == std::vector{offset{0}, offset{1}});
}

TEST_CASE("A subscription update crossing the group's deletion does not bring "
          "its record back, and one crossing a queue's deletion still updates "
          "the other queues",
          "[sim][subscription]") {
  seek_fixture fx;
  fx.push("q1", "Default", 1);
  fx.push("q2", "Default", 1);
  fx.consume_all("q1", "Default", "g"); // registers g on q1 and q2
  fx.consume_all("q2", "Default", "g");
  REQUIRE(fx.subscription("q1", "g"));
  fx.close_gate();
  // The deletion of g on q1 is written first, the update after it.
  auto deleted = fx.request_later<actors::delete_group_reply>(
      fx.broker, actors::delete_atom::value,
      actors::delete_group_request{"g", std::string{"q1"}});
  fx.run();
  auto ts = fx.wall() - 1'000'000;
  auto updated = fx.request_later<actors::sub_update_reply>(
      fx.broker, actors::sub_update_atom::value, std::string{"g"}, ts);
  fx.run();
  fx.open_gate();
  REQUIRE(*deleted);
  REQUIRE_FALSE((*deleted)->failure);
  REQUIRE(*updated);
  REQUIRE_FALSE((*updated)->failure);
  CHECK_FALSE(fx.subscription("q1", "g")); // the deletion wins
  auto s = fx.subscription("q2", "g");
  REQUIRE(s);
  CHECK(s->mode == storage::subscription_mode::timestamp);
  CHECK(s->timestamp == ts);
  // A queue deleted between the update's read and its write: the other
  // queue's record is still updated.
  fx.push("q1", "Default", 1);
  fx.consume_all("q1", "Default", "g"); // registers g on q1 again
  fx.close_gate();
  auto gone = fx.request_later<actors::delete_queue_reply>(
      fx.broker, actors::delete_atom::value, std::string{"q2"});
  fx.run();
  auto ts2 = ts + 1;
  auto again = fx.request_later<actors::sub_update_reply>(
      fx.broker, actors::sub_update_atom::value, std::string{"g"}, ts2);
  fx.run();
  fx.open_gate();
  REQUIRE(*gone);
  REQUIRE(*again);
  CHECK_FALSE((*again)->failure);
  auto s1 = fx.subscription("q1", "g");
  REQUIRE(s1);
  CHECK(s1->timestamp == ts2);
}

TEST_CASE("A per-queue seek stages a queue's cursors in partition uuid order "
          "(the order they were made), the order a transaction stages them "
          "in, whether all at once or one after the other behind a staged "
          "transaction",
          "[sim][seek][txn]") {
  for (bool behind_txn : {false, true}) {
    INFO("behind a staged transaction: " << behind_txn);
    seek_fixture fx;
    // Made in an order that is not their names' order.
    std::vector<std::string> made{"b", "a", "d", "c", "f", "e"};
    std::map<std::uint64_t, std::string> name_of; // partition id → name
    std::optional<lease_info> lease_c;
    for (auto& n : made) {
      fx.push("q", n, 2);
      auto got = fx.pop("q", n, "g", 1); // a live cursor
      REQUIRE(got.messages.size() == 1);
      if (n == "c")
        lease_c = got.lease;
      name_of[fx.partition("q", n).id.value] = n;
    }
    std::shared_ptr<std::optional<actors::txn_reply>> txn;
    if (behind_txn) { // c's cursor staged, its write held: the seek waits
      fx.close_gate();
      core::txn_request t;
      core::txn_ack_op op;
      op.partition_uuid = fx.partition("q", "c").uuid;
      op.group = "g";
      op.ack.lease_id = lease_c->id;
      op.ack.off = offset{0};
      t.ops.emplace_back(std::move(op));
      txn = fx.request_later<actors::txn_reply>(fx.broker,
                                                actors::txn_atom::value, t);
      fx.run();
    }
    auto sought = fx.request_later<actors::seek_reply>(
        fx.broker, actors::seek_atom::value, std::string{"q"},
        actors::seek_request{"g", std::nullopt, fx.to_end(), false});
    fx.run();
    if (behind_txn) {
      CHECK_FALSE(*sought); // waits for c
      fx.open_gate();
      REQUIRE(*txn);
      CHECK((*txn)->result.success);
    }
    REQUIRE(*sought);
    REQUIRE_FALSE((*sought)->failure);
    // The seek's batch holds its cursor records in staging order.
    std::vector<std::string> staged;
    for (auto& b : fx.gate_st->seen)
      if (count_of<storage::mut::put_cursor>(b) == made.size()) {
        staged.clear();
        for (auto& m : b.mutations)
          if (auto* c = std::get_if<storage::mut::put_cursor>(&m))
            staged.push_back(name_of.at(c->partition.value));
      }
    CHECK(staged == made);
    // The answer lists the partitions by name.
    std::vector<std::string> answered;
    for (auto& p : (*sought)->positions)
      answered.push_back(p.partition);
    CHECK(answered == std::vector<std::string>{"a", "b", "c", "d", "e", "f"});
  }
}
