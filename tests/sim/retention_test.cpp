// Retention (semantics.md §7) on the partition's one timer, under the
// simulated clock: retentionSeconds, completedRetentionSeconds,
// maxWaitTimeSeconds, retentionEnabled, bounded steps, skipped reports.

#include "sim/broker_sim.hpp"

#include "storage/tables.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct retention_fixture : broker_sim {
  /// Creates (or changes) queue q with the named options.
  void configure(core::options_patch opts) {
    broker_sim::configure("q", std::move(opts));
  }

  /// Pushes `payloads` to partition p of q as one push (one segment); a
  /// payload is also the frame's transactionId.
  actors::queue_push_reply push(std::vector<std::string> payloads) {
    std::vector<actors::broker_push_item> v;
    for (auto& p : payloads)
      v.push_back({"q", {"p", msg(p, p)}});
    auto r = request<actors::queue_push_reply>(broker, actors::push_atom::value,
                                               v);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    return *r;
  }

  actors::pop_reply pop(const std::string& group, std::size_t batch = 10) {
    actors::queue_pop_request req;
    req.partition = "p";
    req.group = group;
    req.batch = batch;
    req.lease_id = "L" + std::to_string(++leases);
    auto r = request<actors::queue_pop_reply>(broker, actors::pop_atom::value,
                                              std::string{"q"}, req);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    if (r->claimed.empty()) {
      actors::pop_reply empty;
      empty.reason = r->reason;
      return empty;
    }
    return r->claimed.front().reply;
  }

  actors::ack_reply ack(const std::string& group, const actors::pop_reply& r,
                        std::int64_t off,
                        ack_status s = ack_status::completed) {
    ack_request a;
    REQUIRE(r.lease);
    a.lease_id = r.lease->id;
    a.off = offset{off};
    a.status = s;
    a.error = "boom";
    auto res = ack_located("q", "p", group, std::vector<ack_request>{a});
    REQUIRE(res);
    REQUIRE(res->size() == 1);
    REQUIRE_FALSE(res->front().failure);
    return res->front();
  }

  /// Pops everything there is for `group` and acks it.
  void consume(const std::string& group) {
    auto r = pop(group, 100);
    for (auto& m : r.messages)
      REQUIRE(ack(group, r, m.frame.off.value).error == ack_error::none);
  }

  actors::queue_info queue() {
    auto r = request<actors::queues_reply>(broker, actors::info_atom::value,
                                           std::optional<std::string>{"q"});
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    REQUIRE(r->queues.size() == 1);
    return {r->queues[0].record, r->queues[0].partitions};
  }

  storage::partition_record part() {
    for (auto& p : queue().partitions)
      if (p.name == "p")
        return p;
    FAIL("no partition p");
    return {};
  }

  offset watermark() {
    return part().watermark;
  }

  /// Writes a subscription record (mode all) for `group` on q, as a first
  /// pop will: the group is interested without a cursor on p.
  void subscribe(const std::string& group, storage::subscription_mode mode
                                           = storage::subscription_mode::all) {
    storage::subscription_record rec;
    rec.registered_at = wall();
    rec.mode = rec.registered_mode = mode;
    if (mode != storage::subscription_mode::all)
      rec.timestamp = wall();
    auto r = request<actors::write_result>(
        writer, actors::write_atom::value,
        storage::write_batch{
            {storage::mut::put_subscription{queue().record.id, group, rec}}});
    REQUIRE(r);
    REQUIRE(r->ok());
  }

  /// The group's DLQ entries on q, newest first.
  std::vector<core::dlq_item> dlq(const std::string& group) {
    return dlq_of("q", group);
  }

  std::vector<std::int64_t> offsets(const std::vector<core::dlq_item>& items) {
    std::vector<std::int64_t> out;
    for (auto& i : items)
      out.push_back(i.entry.message.off.value);
    std::sort(out.begin(), out.end());
    return out;
  }

  std::vector<std::int64_t> offsets(const actors::pop_reply& r) {
    std::vector<std::int64_t> out;
    for (auto& m : r.messages)
      out.push_back(m.frame.off.value);
    return out;
  }

  /// Pending timers in the simulated clock.
  std::size_t timers() {
    return sched.clock().schedule().size();
  }

  int leases = 0;
};

core::options_patch opts() {
  return {};
}

/// maxWaitTimeSeconds 60, leases (600 s) that outlive it, then frames 0..2
/// pushed at the current time.
/// Seeks `group` to the start with its write held at the gate, lets 60 s
/// of retention runs pass while it is staged, then lets the write go; the
/// seek must succeed.
void seek_to_start_while_retention_runs(retention_fixture& fx,
                                        const std::string& group) {
  fx.gate_st->closed = true; // the seek's write waits
  core::seek_target start;
  start.to_start = true;
  auto sought = fx.request_later<actors::seek_reply>(
      fx.broker, actors::seek_atom::value, std::string{"q"},
      actors::seek_request{group, std::nullopt, start, false});
  fx.run();
  fx.advance(60s); // retention runs while the seek is staged
  fx.gate_st->closed = false;
  caf::anon_send(fx.gated, actors::flush_atom::value);
  fx.run();
  REQUIRE(*sought);
  REQUIRE_FALSE((**sought).failure);
}

void push_under_max_wait(retention_fixture& fx) {
  auto o = opts();
  o.max_wait_time_s = 60;
  o.lease_time_s = 600;
  fx.configure(o);
  fx.push({"a", "b", "c"});
}

} // namespace

TEST_CASE("retentionSeconds deletes a segment older than it, consumed or not",
          "[sim][retention]") {
  retention_fixture fx;
  auto o = opts();
  o.retention_s = 60;
  fx.configure(o);
  fx.push({"a", "b"}); // segment 0..1 at T
  fx.consume("g");     // g consumed it; nobody consumes the next one
  fx.advance(30s);
  fx.push({"c", "d"}); // segment 2..3 at T + 30 s
  fx.advance(25s);
  CHECK(fx.watermark() == offset{0});
  fx.advance(10s); // T + 65 s: the first is older than 60 s, the second not
  CHECK(fx.watermark() == offset{2});
  fx.advance(30s); // T + 95 s: the unconsumed one goes too
  CHECK(fx.watermark() == offset{4});
  CHECK(fx.part().next_offset == offset{4}); // lastOffset does not go down
  CHECK(fx.metrics->retention_frames_deleted == 4);
}

TEST_CASE("retention deletes in bounded steps: more segments than one step "
          "take several writes",
          "[sim][retention]") {
  retention_fixture fx;
  fx.delete_step = 2;
  fx.start();
  auto o = opts();
  o.retention_s = 60;
  fx.configure(o);
  for (auto x : {"a", "b", "c", "d", "e"})
    fx.push({x}); // five segments
  fx.advance(75s);
  CHECK(fx.watermark() == offset{5});
  CHECK(fx.metrics->retention_frames_deleted == 5);
  CHECK(fx.metrics->retention_writes == 3); // 2 + 2 + 1 segments
}

TEST_CASE("completedRetentionSeconds deletes a segment once every interested "
          "group committed past it, one with only a subscription record "
          "included",
          "[sim][retention]") {
  retention_fixture fx;
  auto o = opts();
  o.completed_retention_s = 30;
  fx.configure(o);
  fx.push({"a", "b"});  // 0..1
  fx.push({"c", "d"});  // 2..3
  fx.subscribe("late"); // registered on q, never met p
  fx.consume("g1");     // g1 committed 3
  fx.advance(60s);
  // "late" would start at the watermark: nothing may go.
  CHECK(fx.watermark() == offset{0});
  // late meets p and consumes the first segment only.
  auto r = fx.pop("late", 2);
  REQUIRE(fx.offsets(r) == std::vector<std::int64_t>{0, 1});
  fx.ack("late", r, 0);
  fx.ack("late", r, 1);
  fx.advance(15s);
  CHECK(fx.watermark() == offset{2}); // the second waits for late
  fx.consume("late");
  fx.advance(15s);
  CHECK(fx.watermark() == offset{4});
}

TEST_CASE("completedRetentionSeconds counts a group registered new without a "
          "cursor here where its first contact would seed it",
          "[sim][retention][subscription]") {
  retention_fixture fx;
  auto o = opts();
  o.completed_retention_s = 30;
  fx.configure(o);
  fx.push({"a", "b"}); // 0..1, before the registration
  fx.advance(1s);
  fx.subscribe("newbie", storage::subscription_mode::new_only);
  fx.advance(1s);
  fx.push({"c"}); // 2, after it
  fx.consume("g1");
  fx.advance(60s);
  // newbie would start at 1: the first segment may go, the second not.
  CHECK(fx.watermark() == offset{2});
  auto r = fx.pop("newbie", 10);
  CHECK(fx.offsets(r) == std::vector<std::int64_t>{2});
}

TEST_CASE("completedRetentionSeconds keeps the data of a partition no group "
          "is interested in",
          "[sim][retention]") {
  retention_fixture fx;
  auto o = opts();
  o.completed_retention_s = 30;
  fx.configure(o);
  fx.push({"a", "b"});
  fx.advance(1h);
  CHECK(fx.watermark() == offset{0});
  CHECK(fx.metrics->retention_frames_deleted == 0);
}

TEST_CASE("maxWaitTimeSeconds sends what a lagging group has not consumed to "
          "its DLQ, and a leased frame when its lease ends",
          "[sim][retention][max-wait]") {
  retention_fixture fx;
  push_under_max_wait(fx); // 0..2 at T, overdue at T + 60 s
  fx.consume("fast");
  auto slow = fx.pop("slow", 1); // slow leases 0 and holds it
  REQUIRE(fx.offsets(slow) == std::vector<std::int64_t>{0});
  fx.advance(50s);
  CHECK(fx.dlq("slow").empty()); // not overdue yet
  fx.advance(25s);               // T + 75 s
  auto dead = fx.dlq("slow");
  CHECK(fx.offsets(dead) == std::vector<std::int64_t>{1, 2});
  for (auto& d : dead) {
    CHECK(d.entry.error == "maxWaitTimeSeconds exceeded");
    CHECK(d.entry.message.data.payload.size() == 1); // the message is kept
  }
  CHECK(fx.dlq("fast").empty()); // consumed in time
  CHECK(fx.metrics->max_wait_dead_letters == 2);
  // The leased frame is judged when its lease ends: a retry ends it.
  fx.ack("slow", slow, 0, ack_status::retry);
  CHECK(fx.offsets(fx.dlq("slow")) == std::vector<std::int64_t>{0, 1, 2});
  // Nothing is left to deliver to slow.
  CHECK(fx.pop("slow").messages.empty());
  // A group that meets the partition later: everything overdue goes to its
  // DLQ at once instead of being delivered.
  CHECK(fx.pop("newcomer").messages.empty());
  CHECK(fx.offsets(fx.dlq("newcomer")) == std::vector<std::int64_t>{0, 1, 2});
}

TEST_CASE("A seek exempts from maxWaitTimeSeconds what was overdue when it "
          "was made, also for a group that never met the partition",
          "[sim][retention][max-wait][seek]") {
  retention_fixture fx;
  push_under_max_wait(fx); // 0..2 at T, overdue at T + 60 s
  fx.advance(75s);         // overdue for every group now
  fx.subscribe("late");    // interested since, no cursor on p
  core::seek_target start;
  start.to_start = true;
  auto r = fx.request<actors::seek_reply>(
      fx.broker, actors::seek_atom::value, std::string{"q"},
      actors::seek_request{"late", std::nullopt, start, false});
  REQUIRE(r);
  REQUIRE_FALSE(r->failure);
  fx.advance(1s);
  // The replay delivers what the group asked for instead of dead-lettering
  // it (docs/operations.md, maxWait and seek). (Meeting the partition, the
  // group's cursor was judged first: those DLQ entries stay.)
  CHECK(fx.offsets(fx.pop("late")) == std::vector<std::int64_t>{0, 1, 2});
}

TEST_CASE("A seek's maxWaitTimeSeconds exemption survives a restart: the "
          "replay still delivers what was overdue when the group sought",
          "[sim][retention][max-wait][seek]") {
  retention_fixture fx;
  push_under_max_wait(fx); // 0..2 at T, overdue at T + 60 s
  fx.consume("g");         // committed 2, before they are overdue
  fx.advance(75s);         // overdue now
  core::seek_target start;
  start.to_start = true;
  auto r = fx.request<actors::seek_reply>(
      fx.broker, actors::seek_atom::value, std::string{"q"},
      actors::seek_request{"g", std::nullopt, start, false});
  REQUIRE(r);
  REQUIRE_FALSE(r->failure);
  fx.start();      // a restart: the cursor comes back from its row
  fx.pop("other"); // the partition and g's cursor are spawned again
  fx.advance(30s); // retention runs: maxWait judges what is overdue
  CHECK(fx.offsets(fx.pop("g")) == std::vector<std::int64_t>{0, 1, 2});
}

TEST_CASE("completedRetentionSeconds deletes nothing a seek staged for a "
          "group without a cursor here may still move back to",
          "[sim][retention][seek]") {
  retention_fixture fx;
  auto o = opts();
  o.completed_retention_s = 30;
  fx.configure(o);
  fx.push({"a", "b"}); // 0..1
  fx.advance(1s);
  fx.subscribe("h", storage::subscription_mode::new_only); // counts at 1
  fx.consume("g1");                                        // committed 1
  seek_to_start_while_retention_runs(fx, "h");
  CHECK(fx.watermark() == offset{0});
  CHECK(fx.offsets(fx.pop("h")) == std::vector<std::int64_t>{0, 1});
}

TEST_CASE("completedRetentionSeconds deletes nothing a live cursor's staged "
          "seek may still move back to",
          "[sim][retention][seek]") {
  retention_fixture fx;
  auto o = opts();
  o.completed_retention_s = 30;
  fx.configure(o);
  fx.push({"a", "b"}); // 0..1
  fx.advance(1s);
  fx.consume("g1"); // committed 1, its cursor live
  fx.consume("h");  // committed 1, its cursor live
  seek_to_start_while_retention_runs(fx, "h");
  CHECK(fx.watermark() == offset{0});
  auto again = fx.pop("h");
  CHECK(fx.offsets(again) == std::vector<std::int64_t>{0, 1});
  // Settled: once h consumed again, retention deletes (nothing is left
  // holding it back).
  for (auto& m : again.messages)
    REQUIRE(fx.ack("h", again, m.frame.off.value).error == ack_error::none);
  fx.advance(60s);
  CHECK(fx.watermark() == offset{2});
}

TEST_CASE("configure refuses delayedProcessing >= maxWaitTimeSeconds",
          "[sim][retention][max-wait]") {
  retention_fixture fx;
  actors::configure_request c;
  c.queue = "q";
  c.options.max_wait_time_s = 30;
  c.options.delayed_processing_s = 30;
  auto r = fx.request<actors::configure_reply>(
      fx.broker, actors::configure_atom::value, c);
  REQUIRE(r);
  REQUIRE(r->failure);
  CHECK(r->failure->message
        == "option delayedProcessing must be below maxWaitTimeSeconds (30), "
           "got 30");
}

TEST_CASE("retentionEnabled=false disables retentionSeconds, "
          "completedRetentionSeconds and maxWaitTimeSeconds",
          "[sim][retention]") {
  retention_fixture fx;
  auto o = opts();
  o.retention_enabled = false;
  o.retention_s = 60;
  o.completed_retention_s = 30;
  o.max_wait_time_s = 20;
  fx.configure(o);
  fx.push({"a", "b"});
  fx.consume("g");
  fx.pop("lagging", 1);
  fx.advance(1h);
  CHECK(fx.watermark() == offset{0});
  CHECK(fx.dlq("lagging").empty());
  // Purge still works.
  auto purged = fx.request<actors::purge_reply>(
      fx.broker, actors::purge_atom::value, std::string{"q"},
      actors::purge_request{std::string{"p"}, std::nullopt});
  REQUIRE(purged);
  CHECK(purged->partitions == 1);
  CHECK(fx.watermark() == offset{2});
  // Switching it on applies the rules at once.
  auto on = opts();
  on.retention_enabled = true;
  fx.configure(on);
  fx.push({"c"});
  fx.advance(61s + 10s);
  CHECK(fx.watermark() == offset{3});
}

TEST_CASE("a cursor below the watermark resumes at the oldest retained "
          "offset, the pop reports and counts the skipped messages",
          "[sim][retention]") {
  retention_fixture fx;
  auto o = opts();
  o.retention_s = 60;
  fx.configure(o);
  fx.push({"a", "b"}); // 0..1 at T
  auto first = fx.pop("g", 1);
  fx.ack("g", first, 0); // g committed 0
  fx.advance(30s);
  fx.push({"c", "d"}); // 2..3 at T + 30 s
  fx.advance(45s);     // the first segment is gone
  REQUIRE(fx.watermark() == offset{2});
  auto r = fx.pop("g");
  CHECK(fx.offsets(r) == std::vector<std::int64_t>{2, 3});
  REQUIRE(r.skipped);
  CHECK(*r.skipped == offset_range{offset{1}, offset{1}});
  CHECK(fx.metrics->retention_skipped == 1);
  // Deleted data cannot be replayed: browsing reports the gap.
  actors::browse_request b;
  b.partition = "p";
  b.from = offset{0};
  auto browsed = fx.request<actors::browse_reply>(
      fx.broker, actors::browse_atom::value, std::string{"q"}, b);
  REQUIRE(browsed);
  REQUIRE(browsed->skipped);
  CHECK(browsed->frames.front().off == offset{2});
  // Dedup ids of deleted frames are forgotten; retained ones are not.
  auto again = fx.push({"a", "c"});
  CHECK(again.results[0].result.status == storage::frame_result::queued);
  CHECK(again.results[1].result.status == storage::frame_result::duplicate);
}

TEST_CASE("frames deleted under a live lease count as acked when the lease "
          "ends",
          "[sim][retention]") {
  retention_fixture fx;
  auto o = opts();
  o.retention_s = 60;
  o.lease_time_s = 120;
  fx.configure(o);
  fx.push({"a", "b"}); // 0..1
  auto r = fx.pop("g");
  REQUIRE(fx.offsets(r) == std::vector<std::int64_t>{0, 1});
  fx.advance(75s); // deleted while leased
  REQUIRE(fx.watermark() == offset{2});
  fx.advance(60s); // the lease expires
  fx.push({"c"});
  auto next = fx.pop("g");
  CHECK(fx.offsets(next) == std::vector<std::int64_t>{2});
  CHECK_FALSE(next.skipped);  // acked, not skipped
  CHECK(fx.dlq("g").empty()); // nor charged to the DLQ
  CHECK(fx.metrics->retention_skipped == 0);
}

TEST_CASE("retention keeps one timer per partition, none per message, and "
          "none where no rule applies",
          "[sim][retention]") {
  retention_fixture fx;
  fx.push({"x"}); // q without retention rules
  fx.run();
  auto before = fx.timers();
  for (int i = 0; i < 20; ++i)
    fx.push({"n" + std::to_string(i)});
  CHECK(fx.timers() == before); // no rule: no timer at all
  auto o = opts();
  o.retention_s = 3600;
  o.completed_retention_s = 60;
  o.max_wait_time_s = 600;
  fx.configure(o);
  for (int i = 0; i < 50; ++i) {
    fx.push({"m" + std::to_string(i)});
    fx.consume("g");
    fx.advance(1s);
  }
  // The queue's and the partitions' (p and Default) timers at most, plus
  // the cursor's lease timer: never one per message.
  CHECK(fx.timers() <= before + 4);
  fx.advance(2h);
  CHECK(fx.timers() <= before + 4);
  CHECK(fx.watermark() == fx.part().next_offset); // all consumed and deleted
}
