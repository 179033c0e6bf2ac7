// The partition and cursor actors under the test coordinator: push, pop,
// ack, lease expiry on the simulated clock, autoAck, restart.

#include "sim/sim_fixture.hpp"

#include "actors/partition/partition_actor.hpp"
#include "actors/writer/writer_actor.hpp"
#include "sim/write_gate.hpp"
#include "unit/storage/fixture.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct partition_fixture : sim_fixture {
  ~partition_fixture() {
    drain(); // before `store` is destroyed
  }

  store_fixture store;
  actors::writer_actor writer;
  std::shared_ptr<gate_state> gate_st = std::make_shared<gate_state>();
  actors::writer_actor gated;
  storage::partition_record rec;
  storage::queue_options options;
  actors::partition_actor part;
  storage::micros wall_base = 1'785'000'000'000'000;
  caf::actor_clock::time_point start;

  partition_fixture() {
    start = now();
    rec = store.make_partition(); // before the writer reads its marks
    auto w = actors::spawn_writer(sys, {.env = &store.store->db()}, false);
    REQUIRE(w);
    writer = *w;
    gate_st->keep = false;
    gated = sys.spawn(gate, gate_st, writer); // faults for the tests that ask
    options.lease_time_s = 30;
    options.retry_limit = 2;
    spawn();
  }

  /// Wall clock that moves with the simulated clock.
  std::function<storage::micros()> wall() {
    return [this] {
      return wall_base
             + std::chrono::duration_cast<std::chrono::microseconds>(now()
                                                                     - start)
                   .count();
    };
  }

  /// (Re)spawns the partition actor: a restart of the actors over the same
  /// store (the old one is told to quit).
  void spawn() {
    if (part)
      caf::anon_send_exit(part, caf::exit_reason::user_shutdown);
    run();
    actors::partition_config cfg;
    cfg.node.store = store.store.get();
    cfg.node.writer = gated;
    cfg.record = store.stored(rec);
    cfg.options = options;
    cfg.node.wall = wall();
    auto p = actors::spawn_partition(sys, cfg);
    REQUIRE(p);
    part = *p;
  }

  /// A push as the queue makes it: the seal, then its batch with the seal
  /// as its part; the sealed results once durable.
  storage::sealed_append push(std::vector<storage::frame> frames) {
    auto r = request<actors::seal_reply>(part, actors::seal_atom::value,
                                         std::move(frames));
    REQUIRE(r);
    REQUIRE(!r->failure);
    actors::submission s;
    s.batch.mutations = std::move(r->sealed.mutations);
    if (r->part)
      s.parts.push_back(actors::part_ref{part.address(), *r->part});
    auto w = request<actors::write_result>(gated, actors::propose_atom::value,
                                           std::move(s));
    REQUIRE(w);
    REQUIRE(w->ok());
    return std::move(r->sealed);
  }

  actors::pop_reply pop(std::size_t batch, std::string group = "g",
                        bool auto_ack = false) {
    actors::pop_request req;
    req.group = std::move(group);
    req.batch = batch;
    req.lease_id = "lease-" + std::to_string(++leases);
    req.auto_ack = auto_ack;
    auto r = request<actors::pop_reply>(part, actors::pop_atom::value, req);
    REQUIRE(r);
    REQUIRE(!r->failure);
    return *r;
  }

  actors::ack_reply ack(const actors::pop_reply& p, std::int64_t off,
                        ack_status status = ack_status::completed,
                        std::string group = "g") {
    ack_request a;
    a.lease_id = p.lease ? std::optional{p.lease->id} : std::nullopt;
    a.off = offset{off};
    a.status = status;
    a.error = "handler failed";
    auto r = request<std::vector<actors::ack_reply>>(
        part, actors::ack_atom::value, group, std::vector{a});
    REQUIRE(r);
    REQUIRE(r->size() == 1);
    REQUIRE(!r->front().failure);
    return r->front();
  }

  storage::cursor_record stored_cursor(const std::string& group = "g") {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto c = storage::tables::get_cursor(*t, rec.queue, rec.id, group);
    REQUIRE(c);
    REQUIRE(*c);
    return **c;
  }

  int leases = 0;
};

std::vector<std::int64_t> offsets(const actors::pop_reply& r) {
  std::vector<std::int64_t> out;
  for (auto& m : r.messages)
    out.push_back(m.frame.off.value);
  return out;
}

} // namespace

TEST_CASE("a push is answered when durable and pops deliver it in order",
          "[sim][partition]") {
  partition_fixture fx;
  auto pushed = fx.push(msgs(5));
  REQUIRE(pushed.results.size() == 5);
  CHECK(pushed.results[4].off == offset{4});
  CHECK(fx.store.stored(fx.rec).next_offset == offset{5});
  auto p = fx.pop(3);
  CHECK(offsets(p) == std::vector<std::int64_t>{0, 1, 2});
  REQUIRE(p.lease);
  CHECK(p.lease->epoch == 1);
  CHECK(p.messages[0].delivery_count == 1);
  CHECK(p.messages[1].frame.data.payload == "m1");
  // The delivery counts were durable before the answer.
  CHECK(fx.stored_cursor().leased);
}

TEST_CASE("a pop while the group's lease is live answers lease_held and "
          "other groups are independent",
          "[sim][partition]") {
  partition_fixture fx;
  fx.push(msgs(3));
  fx.pop(1);
  auto again = fx.pop(1);
  CHECK(again.messages.empty());
  CHECK(again.reason == empty_reason::lease_held);
  auto other = fx.pop(3, "other");
  CHECK(offsets(other) == std::vector<std::int64_t>{0, 1, 2});
}

TEST_CASE("a lease expires at exactly leaseTime on the actor clock",
          "[sim][partition][expiry]") {
  partition_fixture fx;
  fx.push(msgs(2));
  auto first = fx.pop(1);
  fx.advance(30s - 1ms);
  CHECK(fx.pop(1).reason == empty_reason::lease_held);
  fx.advance(1ms); // the cursor's one timer fires
  CHECK(fx.stored_cursor().counters.at(0).failures == 1);
  auto again = fx.pop(1);
  CHECK(offsets(again) == std::vector<std::int64_t>{0});
  CHECK(again.messages[0].delivery_count == 2);
  CHECK(again.lease->epoch == first.lease->epoch + 1);
}

TEST_CASE("acks commit the contiguous prefix durably before answering",
          "[sim][partition][ack]") {
  partition_fixture fx;
  fx.push(msgs(4));
  auto p = fx.pop(4);
  CHECK(fx.ack(p, 1).error == ack_error::none);
  CHECK(fx.stored_cursor().committed == offset{-1});
  fx.ack(p, 0);
  CHECK(fx.stored_cursor().committed == offset{1});
  fx.ack(p, 2);
  auto last = fx.ack(p, 3);
  CHECK(last.lease_released);
  CHECK(fx.stored_cursor().committed == offset{3});
  CHECK(!fx.stored_cursor().leased);
  CHECK(fx.ack(actors::pop_reply{}, 9).error == ack_error::not_found);
}

TEST_CASE("autoAck commits what the pop returns, durably, before answering",
          "[sim][partition][autoack]") {
  partition_fixture fx;
  fx.push(msgs(3));
  auto p = fx.pop(2, "g", true);
  CHECK(offsets(p) == std::vector<std::int64_t>{0, 1});
  CHECK(!p.lease);
  CHECK(fx.stored_cursor().committed == offset{1});
  CHECK(offsets(fx.pop(5, "g", true)) == std::vector<std::int64_t>{2});
}

TEST_CASE("autoAck obeys a lease held by another pop of the group",
          "[sim][partition][autoack]") {
  partition_fixture fx;
  fx.push(msgs(3));
  fx.pop(1);
  auto p = fx.pop(2, "g", true);
  CHECK(p.messages.empty());
  CHECK(p.reason == empty_reason::lease_held);
}

TEST_CASE("a failed ack past retryLimit stores the message in the group's "
          "dead-letter queue",
          "[sim][partition][dlq]") {
  partition_fixture fx; // retryLimit 2
  fx.push({msg(R"({"poison":true})"), msg("ok")});
  for (int i = 0; i < 3; ++i) {
    auto p = fx.pop(2);
    REQUIRE(offsets(p).front() == 0);
    auto r = fx.ack(p, 0, ack_status::failed);
    CHECK(r.dead_lettered == (i == 2));
  }
  std::vector<storage::dlq_entry> dlq;
  auto t = fx.store.store->db().read();
  REQUIRE(storage::tables::scan_dlq(*t, fx.rec.queue, "g",
                                    [&](const storage::dlq_entry& e) {
                                      dlq.push_back(e);
                                      return true;
                                    }));
  REQUIRE(dlq.size() == 1);
  CHECK(dlq[0].message.data.payload == R"({"poison":true})");
  CHECK(dlq[0].error == "handler failed");
  CHECK(dlq[0].deliveries == 3);
  t->abort();
  CHECK(offsets(fx.pop(2)) == std::vector<std::int64_t>{1});
}

TEST_CASE("after a restart every lease is gone and its batch is delivered "
          "again",
          "[sim][partition][restart]") {
  partition_fixture fx;
  fx.push(msgs(3));
  auto before = fx.pop(3);
  fx.spawn(); // the actors restart over the same store
  // A multi-frame lease lost to a restart isolates its frames.
  auto p = fx.pop(3);
  CHECK(offsets(p) == std::vector<std::int64_t>{0});
  CHECK(p.messages[0].delivery_count == 2);
  CHECK(p.lease->epoch > before.lease->epoch);
  // The old lease is gone for good.
  CHECK(fx.ack(before, 1).error == ack_error::invalid_lease);
}

TEST_CASE("a failed ack redelivers the unsettled remainder after retryDelay",
          "[sim][partition][retry]") {
  partition_fixture fx;
  fx.options.retry_delay_ms = 500;
  fx.spawn();
  fx.push(msgs(3));
  auto p = fx.pop(3);
  fx.ack(p, 0);
  fx.ack(p, 1, ack_status::failed);
  CHECK(fx.pop(3).reason == empty_reason::delayed);
  fx.advance(500ms);
  CHECK(offsets(fx.pop(3)) == std::vector<std::int64_t>{1, 2});
}

TEST_CASE("delayedProcessing keeps frames invisible until they are old enough",
          "[sim][partition][delayed]") {
  partition_fixture fx;
  fx.options.delayed_processing_s = 10;
  fx.spawn();
  fx.push(msgs(2));
  CHECK(fx.pop(2).reason == empty_reason::delayed);
  fx.advance(10s);
  CHECK(offsets(fx.pop(2)) == std::vector<std::int64_t>{0, 1});
}

TEST_CASE("a lease extend keeps the lease past leaseTime",
          "[sim][partition][extend]") {
  partition_fixture fx;
  fx.push(msgs(1));
  auto p = fx.pop(1);
  fx.advance(20s);
  auto r = fx.request<actors::extend_reply>(fx.part, actors::extend_atom::value,
                                            std::string{"g"}, p.lease->id,
                                            std::chrono::milliseconds{60'000});
  REQUIRE(r);
  CHECK(r->error == extend_error::none);
  fx.advance(30s); // past the original expiry
  CHECK(fx.pop(1).reason == empty_reason::lease_held);
  CHECK(fx.ack(p, 0).error == ack_error::none);
}

TEST_CASE("a lease extend is written: the group's activity survives a restart",
          "[sim][partition][extend]") {
  partition_fixture fx;
  fx.push(msgs(1));
  auto p = fx.pop(1);
  auto popped_at = fx.stored_cursor().last_activity;
  fx.advance(20s);
  auto r = fx.request<actors::extend_reply>(fx.part, actors::extend_atom::value,
                                            std::string{"g"}, p.lease->id,
                                            std::chrono::milliseconds{60'000});
  REQUIRE(r);
  REQUIRE(r->error == extend_error::none);
  REQUIRE_FALSE(r->failure);
  CHECK(fx.stored_cursor().last_activity == popped_at + 20'000'000);
}

TEST_CASE("a failed extend write changes nothing: the lease ends at its old "
          "expiry and the caller gets the error",
          "[sim][partition][extend][failure]") {
  partition_fixture fx;
  fx.push(msgs(1));
  auto p = fx.pop(1);
  auto stored = fx.stored_cursor();
  fx.advance(20s);
  fault_plan f;
  f.nth = 1;
  f.times = 1;
  fx.gate_st->inject(f);
  auto r = fx.request<actors::extend_reply>(fx.part, actors::extend_atom::value,
                                            std::string{"g"}, p.lease->id,
                                            std::chrono::milliseconds{60'000});
  REQUIRE(r);
  REQUIRE(r->failure);
  CHECK(r->failure->code == errc::internal);
  CHECK_FALSE(r->expires);
  CHECK(fx.stored_cursor() == stored);
  fx.advance(10s); // the original expiry (30 s) passed
  auto again = fx.pop(1);
  REQUIRE(again.messages.size() == 1);
  CHECK(again.messages[0].delivery_count == 2);
}

TEST_CASE("a list of acks is settled with one write and one reply per item",
          "[sim][partition][ack]") {
  partition_fixture fx;
  fx.push(msgs(3));
  auto p = fx.pop(3);
  std::vector<ack_request> acks(4);
  for (std::int64_t i = 0; i < 4; ++i) {
    acks[i].lease_id = p.lease->id;
    acks[i].off = offset{i < 3 ? i : 7};
  }
  auto r = fx.request<std::vector<actors::ack_reply>>(
      fx.part, actors::ack_atom::value, std::string{"g"}, acks);
  REQUIRE(r);
  REQUIRE(r->size() == 4);
  CHECK((*r)[0].error == ack_error::none);
  CHECK((*r)[2].lease_released);
  CHECK((*r)[3].error == ack_error::invalid_lease); // lease ended at [2]
  CHECK(fx.stored_cursor().committed == offset{2});
}

TEST_CASE("a group deletion's second phase spares a cursor created after its "
          "first",
          "[sim][partition][admin]") {
  partition_fixture fx;
  fx.push({msg("a")});
  // First phase: the group has nothing here, so no cursor is stopped (no
  // part to settle).
  auto vote = fx.request<actors::vote_reply>(fx.part, actors::vote_atom::value,
                                             std::string{"g"},
                                             storage::micros{INT64_MAX});
  REQUIRE(vote);
  CHECK(!vote->vote.had);
  CHECK(!vote->part);
  // The group's first pop arrives in between and takes a lease.
  auto r = fx.pop(10);
  REQUIRE(offsets(r) == std::vector<std::int64_t>{0});
  // Second phase, the deletion durable: must not end the new cursor (nor
  // lose its lease).
  caf::anon_send(fx.part, actors::settled_atom::value,
                 core::part_key{fx.rec.queue.value, fx.rec.id.value, "g",
                                core::part_key::delete_part},
                 core::part_outcome::durable);
  fx.run();
  CHECK(fx.ack(r, 0).error == ack_error::none);
  CHECK(fx.stored_cursor().committed == offset{0});
}

TEST_CASE("a group deletion guarded by an idle cutoff is refused by a cursor "
          "used after it",
          "[sim][partition][admin]") {
  partition_fixture fx;
  fx.push({msg("a"), msg("b"), msg("c")});
  fx.ack(fx.pop(1), 0);
  auto seen = fx.wall()(); // what the idle sweep saw
  fx.advance(1s);
  fx.ack(fx.pop(1), 1); // used after the sweep looked; no lease left
  auto vote = fx.request<actors::vote_reply>(fx.part, actors::vote_atom::value,
                                             std::string{"g"}, seen);
  REQUIRE(vote);
  CHECK(vote->vote.active);
  // The deletion is abandoned: the writer settles the part failed.
  REQUIRE(vote->part);
  caf::anon_send(fx.part, actors::settled_atom::value, vote->part->key,
                 core::part_outcome::failed);
  fx.run();
  // The cursor still serves and its records stay.
  CHECK(fx.stored_cursor().committed == offset{1});
  auto r = fx.pop(1);
  REQUIRE(offsets(r) == std::vector<std::int64_t>{2});
  CHECK(fx.ack(r, 2).error == ack_error::none);
  // Without activity since the cutoff, the same guard lets it go.
  fx.advance(1s);
  auto later = fx.request<actors::vote_reply>(fx.part, actors::vote_atom::value,
                                              std::string{"g"}, fx.wall()());
  REQUIRE(later);
  CHECK(!later->vote.active);
  CHECK(later->vote.had);
}

TEST_CASE("a registration seeds a partition whose cursor was spawned but never "
          "stored",
          "[sim][partition][subscription]") {
  partition_fixture fx;
  fx.push({msg("a"), msg("b")});
  // A late ack (e.g. after the group was deleted) spawns the cursor; its
  // lease is unknown, so nothing is stored.
  ack_request a;
  a.lease_id = "gone";
  a.off = offset{0};
  auto acked = fx.request<std::vector<actors::ack_reply>>(
      fx.part, actors::ack_atom::value, std::string{"g"}, std::vector{a});
  REQUIRE(acked);
  REQUIRE(acked->front().error != ack_error::none);
  // The group registers with `new`: the seed is this partition's last
  // offset, and the queue writes it.
  storage::subscription_record rec;
  rec.mode = rec.registered_mode = storage::subscription_mode::new_only;
  rec.timestamp = rec.registered_at = fx.wall()();
  auto seed = fx.request<std::optional<offset>>(
      fx.part, actors::seed_atom::value, std::string{"g"}, rec);
  REQUIRE(seed);
  REQUIRE(*seed);
  CHECK(**seed == offset{1});
  storage::cursor_record c;
  c.committed = **seed;
  auto w = fx.request<actors::write_result>(
      fx.writer, actors::write_atom::value,
      storage::write_batch{
          {storage::mut::put_subscription{fx.rec.queue, "g", rec},
           storage::mut::put_cursor{fx.rec.queue, fx.rec.id, "g", c}}});
  REQUIRE(w);
  REQUIRE(w->ok());
  // The group's next pop starts at the seed, not at the old cursor's `all`.
  CHECK(offsets(fx.pop(10)).empty());
  fx.push({msg("c")});
  CHECK(offsets(fx.pop(10)) == std::vector<std::int64_t>{2});
}

TEST_CASE("a cursor that dies with a transaction staged comes back only "
          "after its settle, which settles nothing of the new cursor",
          "[sim][txn][supervision]") {
  partition_fixture fx;
  fx.push({msg("a"), msg("b")});
  // A transaction's stage: its batch and its parts (the cursor's, the
  // partition's mark), as the broker submits them.
  auto stage = [&](const actors::pop_reply& p) {
    ack_request a;
    a.lease_id = p.lease->id;
    a.off = offset{0};
    auto r = fx.request<actors::stage_reply>(fx.part, actors::stage_atom::value,
                                             std::string{"g"}, std::vector{a});
    REQUIRE(r);
    REQUIRE(r->parts.size() == 2);
    return actors::submission{std::move(r->batch), std::move(r->parts)};
  };
  auto committed_in_memory = [&] {
    auto r = fx.request<std::vector<actors::cursor_info>>(
        fx.part, actors::groups_atom::value, std::optional<std::string>{"g"});
    REQUIRE(r);
    REQUIRE(r->size() == 1);
    return r->front().committed;
  };
  auto abort = [&](const actors::submission& s) {
    for (auto& p : s.parts)
      caf::anon_send(caf::actor_cast<actors::part_holder>(p.holder),
                     actors::settled_atom::value, p.key,
                     core::part_outcome::failed);
    caf::anon_send(fx.writer, actors::abort_atom::value, s.parts);
    fx.run();
  };
  auto first = stage(fx.pop(1));
  // The cursor dies (a bug) with its stage open.
  auto late = fx.request_later<std::vector<actors::cursor_info>>(
      fx.part, actors::groups_atom::value, std::optional<std::string>{"g"});
  REQUIRE(fx.kill_next("spool.cursor"));
  fx.run();
  // Until the transaction settles, its batch may still be written: no
  // cursor is spawned from the row it may replace.
  actors::pop_request req;
  req.group = "g";
  req.batch = 1;
  req.lease_id = "early";
  auto early
      = fx.request<actors::pop_reply>(fx.part, actors::pop_atom::value, req);
  REQUIRE(early);
  REQUIRE(early->failure);
  CHECK(early->failure->code == errc::unavailable);
  // Its settle (an abort: the batch was not written) lets the group back.
  abort(first);
  auto again = fx.pop(1);
  REQUIRE(offsets(again) == std::vector<std::int64_t>{0});
  auto second = stage(again);
  CHECK(second.parts.front().holder != first.parts.front().holder);
  // The first stage submitted again settles nothing of the second: its
  // parts are not open any more, so the writer refuses it whole.
  auto stale = fx.request<actors::write_result>(
      fx.writer, actors::propose_atom::value, first);
  REQUIRE(stale);
  CHECK(!stale->ok());
  abort(second);
  CHECK(committed_in_memory() == offset{-1});
  CHECK(fx.stored_cursor().committed == offset{-1});
}
