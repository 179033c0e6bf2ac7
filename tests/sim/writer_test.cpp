// The store writer actor: group commit as messages, deterministic.

#include "sim/sim_fixture.hpp"

#include "actors/writer/writer_actor.hpp"
#include "unit/storage/fixture.hpp"

using namespace spool;
using namespace spool::test;

namespace {

struct writer_fixture : sim_fixture {
  ~writer_fixture() {
    drain(); // before `store` is destroyed
  }

  store_fixture store;
  actors::writer_actor writer;

  writer_fixture() {
    auto w = actors::spawn_writer(sys, {.env = &store.store->db()}, false);
    REQUIRE(w);
    writer = *w;
  }

  storage::write_batch segment_batch(storage::partition_log& log,
                                     std::size_t n) {
    auto t = store.store->db().read();
    REQUIRE(t);
    auto sealed = log.seal(*t, msgs(n), 1'000'000, store.enc);
    REQUIRE(sealed);
    return storage::write_batch{sealed->mutations};
  }
};

} // namespace

TEST_CASE("the writer replies after the batch is durable", "[sim][writer]") {
  writer_fixture fx;
  auto p = fx.store.make_partition();
  storage::partition_log log{p};
  auto r = fx.request<actors::write_result>(
      fx.writer, actors::write_atom::value, fx.segment_batch(log, 3));
  REQUIRE(r);
  CHECK(r->ok());
  CHECK(fx.store.stored(p).next_offset == storage::offset{3});
}

TEST_CASE("batches queued while a commit runs are committed together",
          "[sim][writer][group-commit]") {
  writer_fixture fx;
  auto p = fx.store.make_partition();
  storage::partition_log log{p};
  std::vector<std::shared_ptr<std::optional<actors::write_result>>> replies;
  for (int i = 0; i < 10; ++i)
    replies.push_back(fx.request_later<actors::write_result>(
        fx.writer, actors::write_atom::value, fx.segment_batch(log, 2)));
  fx.run();
  for (auto& r : replies) {
    REQUIRE(*r);
    CHECK((*r)->ok());
  }
  CHECK(fx.store.stored(p).next_offset == storage::offset{20});
}

TEST_CASE("a failing batch is answered with its error and the others commit",
          "[sim][writer]") {
  writer_fixture fx;
  auto p = fx.store.make_partition();
  storage::partition_log log{p};
  auto good = fx.request_later<actors::write_result>(
      fx.writer, actors::write_atom::value, fx.segment_batch(log, 1));
  storage::write_batch bad{
      {storage::mut::put_cursor{p.queue, storage::partition_id{999}, "g", {}}}};
  auto failed = fx.request_later<actors::write_result>(
      fx.writer, actors::write_atom::value, bad);
  fx.run();
  REQUIRE(*good);
  CHECK((*good)->ok());
  REQUIRE(*failed);
  REQUIRE(!(*failed)->ok());
  CHECK((*failed)->failure->code == storage::ec::unknown_partition);
}

TEST_CASE("a stopped writer commits and answers every batch sent before the "
          "stop",
          "[sim][writer][shutdown]") {
  writer_fixture fx;
  auto p = fx.store.make_partition();
  storage::partition_log log{p};
  std::vector<std::shared_ptr<std::optional<actors::write_result>>> replies;
  for (int i = 0; i < 3; ++i)
    replies.push_back(fx.request_later<actors::write_result>(
        fx.writer, actors::write_atom::value, fx.segment_batch(log, 2)));
  // The batches reach the writer's mailbox, then the stop does.
  auto* w = dynamic_cast<caf::resumable*>(
      caf::actor_cast<caf::abstract_actor*>(fx.writer));
  fx.sched.run_jobs_filtered([w](caf::resumable* r) { return r != w; });
  caf::anon_send_exit(fx.writer, caf::exit_reason::user_shutdown);
  fx.run();
  for (auto& r : replies) {
    REQUIRE(*r);
    CHECK((*r)->ok());
  }
  CHECK(fx.store.stored(p).next_offset == storage::offset{6});
}
