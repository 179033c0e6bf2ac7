// A cursor's pop as one rule (core::plan_pop, semantics.md §3–4, §7):
// plan, requeued dead letters, read, cut, grant or autoAck; with reads
// given as functions and explicit time.

#include <catch2/catch.hpp>

#include "core/cursor/pop_plan.hpp"

using namespace spool;
using namespace spool::core;
using namespace std::chrono_literals;

namespace {

const mono_time t0 = mono_time{} + 1000h;
constexpr storage::micros wall0 = 1'785'000'000'000'000;

/// A cursor over a partition holding offsets 0..last, each frame `size`
/// bytes of payload, created at wall0; reads count what they were asked.
struct pop_fixture {
  cursor_core cur;
  offset last{9};
  std::size_t size = 10;
  /// Offsets the store no longer has (deleted meanwhile).
  std::vector<std::int64_t> missing;
  std::optional<storage::dlq_entry> entry; ///< the DLQ entry a requeue reads
  /// Set: reading the DLQ entry fails so (its key is not configured).
  std::optional<api_error> entry_failure;
  std::size_t reads = 0;

  explicit pop_fixture(storage::cursor_record rec = {}) :
      cur(std::move(rec), [] {
        cursor_policy p;
        p.lease_time = 30s;
        p.retry_limit = 3;
        return p;
      }()) {
  }

  partition_view view() const {
    return {offset{0}, offset{last.value + 1}, wall0};
  }

  pop_outcome pop(std::size_t batch, bool auto_ack = false,
                  std::size_t max_bytes = SIZE_MAX, bool needs_seed = false) {
    pop_request req;
    req.group = "g";
    req.batch = batch;
    req.max_bytes = max_bytes;
    req.lease_id = "L1";
    req.auto_ack = auto_ack;
    pop_inputs in;
    in.now = t0;
    in.wall = wall0 + 1'000'000;
    in.needs_seed = needs_seed;
    in.load = [this](const std::vector<offset>& offs,
                     std::size_t) -> expected<frame_list> {
      ++reads;
      frame_list out;
      for (auto o : offs)
        if (std::find(missing.begin(), missing.end(), o.value)
            == missing.end()) {
          storage::stored_frame f;
          f.off = o;
          f.created_at = wall0;
          f.data.payload = std::string(size, 'x');
          f.data.transaction_id = "tx" + std::to_string(o.value);
          out.push_back(std::move(f));
        }
      return out;
    };
    in.load_entry
        = [this](std::uint64_t) -> expected<std::optional<storage::dlq_entry>> {
      if (entry_failure)
        return *entry_failure;
      return entry;
    };
    return plan_pop(cur, req, view(), std::move(in));
  }
};

/// Committed through 4, with DLQ entry 7 (offset 2) requeued to the group.
storage::cursor_record with_requeued() {
  storage::cursor_record rec;
  rec.committed = offset{4};
  rec.requeued.push_back({7, offset{2}, 3, 3, false});
  return rec;
}

std::vector<std::int64_t> offsets_of(const pop_reply& r) {
  std::vector<std::int64_t> out;
  for (auto& m : r.messages)
    out.push_back(m.frame.off.value);
  return out;
}

} // namespace

TEST_CASE("a pop delivers up to its batch after the committed offset under "
          "one lease, and its change is written",
          "[unit][core][pop]") {
  pop_fixture fx;
  auto out = fx.pop(3);
  CHECK(offsets_of(out.reply) == std::vector<std::int64_t>{0, 1, 2});
  REQUIRE(out.reply.lease);
  CHECK(out.reply.lease->id == "L1");
  CHECK(out.reply.lease->range.first == offset{0});
  CHECK(out.reply.lease->range.last == offset{2});
  CHECK(out.reply.messages[0].delivery_count == 1);
  CHECK(out.write);
  CHECK_FALSE(out.reply.failure);
  // The lease is held: the next pop finds nothing to take.
  auto next = fx.pop(3);
  CHECK(next.reply.messages.empty());
  CHECK(next.reply.reason == empty_reason::lease_held);
  CHECK(next.reply.retry_at);
}

TEST_CASE("a pop with nothing after the committed offset answers empty with "
          "the partition's last offset and writes nothing",
          "[unit][core][pop]") {
  storage::cursor_record rec;
  rec.committed = offset{9};
  pop_fixture fx{rec};
  auto out = fx.pop(5);
  CHECK(out.reply.messages.empty());
  CHECK(out.reply.reason == empty_reason::empty);
  REQUIRE(out.reply.empty_at);
  CHECK(*out.reply.empty_at == offset{9});
  CHECK_FALSE(out.write);
  CHECK(fx.reads == 0);
}

TEST_CASE("a first-contact pop writes its seed row even when it delivers "
          "nothing",
          "[unit][core][pop]") {
  storage::cursor_record rec;
  rec.committed = offset{9};
  pop_fixture fx{rec};
  auto out = fx.pop(5, false, SIZE_MAX, true);
  CHECK(out.reply.messages.empty());
  CHECK(out.write);
}

TEST_CASE("a pop's delivered run ends at the first frame the read misses",
          "[unit][core][pop]") {
  pop_fixture fx;
  fx.missing = {2};
  auto out = fx.pop(5);
  CHECK(offsets_of(out.reply) == std::vector<std::int64_t>{0, 1});
  REQUIRE(out.reply.lease);
  CHECK(out.reply.lease->range.last == offset{1});
}

TEST_CASE("a pop's byte cap ends the delivered run, and its first frame "
          "always goes",
          "[unit][core][pop]") {
  pop_fixture fx;
  auto out = fx.pop(5, false, 25); // 10 bytes each: two fit
  CHECK(offsets_of(out.reply) == std::vector<std::int64_t>{0, 1});
  pop_fixture small;
  auto one = small.pop(5, false, 1); // none fits: the first goes anyway
  CHECK(offsets_of(one.reply) == std::vector<std::int64_t>{0});
}

TEST_CASE("an autoAck pop commits what it delivers and takes no lease",
          "[unit][core][pop]") {
  pop_fixture fx;
  auto out = fx.pop(3, true);
  CHECK(offsets_of(out.reply) == std::vector<std::int64_t>{0, 1, 2});
  CHECK_FALSE(out.reply.lease);
  CHECK(out.write);
  CHECK(fx.cur.committed() == offset{2});
  auto next = fx.pop(3, true);
  CHECK(offsets_of(next.reply) == std::vector<std::int64_t>{3, 4, 5});
}

TEST_CASE("a requeued dead letter is delivered from its DLQ entry, alone, "
          "under a lease",
          "[unit][core][pop][requeue]") {
  pop_fixture fx{with_requeued()};
  fx.entry = storage::dlq_entry{};
  fx.entry->id = 7;
  fx.entry->message.off = offset{2};
  fx.entry->message.data.payload = "dead";
  auto out = fx.pop(5);
  REQUIRE(out.reply.messages.size() == 1);
  CHECK(out.requeued);
  CHECK(out.reply.messages[0].requeued == std::uint64_t{7});
  CHECK(out.reply.messages[0].frame.data.payload == "dead");
  CHECK(out.reply.lease);
  CHECK(out.write);
  CHECK(fx.reads == 0); // its segment is not read
}

TEST_CASE("a requeued dead letter that cannot be delivered now fails the "
          "pop, which grants nothing, counts no delivery and commits nothing",
          "[unit][core][pop][requeue]") {
  pop_fixture fx{with_requeued()};
  fx.entry = storage::dlq_entry{};
  fx.entry->id = 7;
  fx.entry_failure = make_error(errc::internal, "dead letter 7 (its key is "
                                                "not configured)");
  auto before = fx.cur.record();
  auto out = fx.pop(5, true); // autoAck
  REQUIRE(out.reply.failure);
  CHECK(out.reply.failure->message
        == "dead letter 7 (its key is not "
           "configured)");
  CHECK(out.reply.messages.empty());
  CHECK_FALSE(out.reply.lease);
  CHECK_FALSE(out.write);
  CHECK(out.changes.done.empty());
  CHECK(fx.cur.record() == before);
  // Once it can be read, it is delivered, first.
  fx.entry_failure.reset();
  fx.entry->message.off = offset{2};
  fx.entry->message.data.payload = "dead";
  auto later = fx.pop(5);
  REQUIRE(later.reply.messages.size() == 1);
  CHECK(later.reply.messages[0].frame.data.payload == "dead");
}

TEST_CASE("a requeued dead letter whose DLQ entry is gone is forgotten and "
          "the pop goes on after the committed offset",
          "[unit][core][pop][requeue]") {
  pop_fixture fx{with_requeued()};
  auto out = fx.pop(2); // fx.entry: none (deleted or expired)
  CHECK_FALSE(out.requeued);
  CHECK(offsets_of(out.reply) == std::vector<std::int64_t>{5, 6});
  CHECK(out.write);
  CHECK(fx.cur.record().requeued.empty());
}

TEST_CASE("a pop whose read fails answers the failure and delivers nothing",
          "[unit][core][pop]") {
  pop_fixture fx;
  pop_request req;
  req.group = "g";
  req.batch = 3;
  req.lease_id = "L1";
  pop_inputs in;
  in.now = t0;
  in.wall = wall0;
  in.load
      = [](const std::vector<offset>&, std::size_t) -> expected<frame_list> {
    return storage::make_error(storage::ec::io_error, "disk gone");
  };
  in.load_entry
      = [](std::uint64_t) { return std::optional<storage::dlq_entry>{}; };
  auto out = plan_pop(fx.cur, req, fx.view(), std::move(in));
  REQUIRE(out.reply.failure);
  CHECK(out.reply.messages.empty());
  CHECK_FALSE(out.reply.lease);
  CHECK_FALSE(out.write);
}
