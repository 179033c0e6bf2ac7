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
  CHECK((*failed)->failure->code == errc::not_found);
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

namespace {

/// A committer whose commits hang until the test lets them go (a hung
/// fsync).
struct stalled_commits : actors::committer {
  storage::env& env;
  std::vector<const storage::write_batch*> batches;
  std::function<void(actors::commit_report)> done;
  explicit stalled_commits(storage::env& e) : env(e) {
  }
  void start(std::vector<const storage::write_batch*> b,
             std::function<void(actors::commit_report)> d) override {
    batches = std::move(b);
    done = std::move(d);
  }
  void run(std::function<void()> job) override {
    job();
  }
  void wait_idle() override {
    release();
  }
  void set_hook(std::shared_ptr<actors::commit_hook>) override {
  }
  actors::commit_hook* hook() const noexcept override {
    return nullptr;
  }
  bool running() const {
    return static_cast<bool>(done);
  }
  void release() {
    if (!done)
      return;
    auto d = std::move(done);
    done = nullptr;
    d(actors::commit_now(env, batches, nullptr));
  }
};

struct stalled_writer : sim_fixture {
  store_fixture store;
  std::shared_ptr<stalled_commits> commits
      = std::make_shared<stalled_commits>(store.store->db());
  actors::writer_actor writer;
  storage::partition_record p = store.make_partition();
  storage::partition_log log{p};

  explicit stalled_writer(std::size_t max_pending = 8192) {
    actors::writer_config cfg;
    cfg.env = &store.store->db();
    cfg.max_pending = max_pending;
    cfg.stall_timeout = std::chrono::seconds{10};
    cfg.commits = commits;
    auto w = actors::spawn_writer(sys, cfg, false);
    REQUIRE(w);
    writer = *w;
  }
  ~stalled_writer() {
    commits->release();
    drain();
  }
  std::shared_ptr<std::optional<actors::write_result>> write(std::size_t n) {
    return request_later<actors::write_result>(
        writer, actors::write_atom::value, store.seal_next(log, n));
  }
};

} // namespace

TEST_CASE("a write past the writer's queue bound is refused at once and "
          "stores nothing",
          "[sim][writer][limits]") {
  stalled_writer fx{2};
  auto first = fx.write(1); // being committed (hung)
  fx.run();
  REQUIRE(fx.commits->running());
  auto a = fx.write(1);
  auto b = fx.write(1);
  auto refused = fx.write(1);
  fx.run();
  REQUIRE(*refused);
  REQUIRE((*refused)->failure);
  CHECK((*refused)->failure->code == errc::unavailable);
  CHECK_THAT((*refused)->failure->message, Catch::Contains("write queue full"));
  CHECK_FALSE(*a); // still waiting, not refused
  fx.commits->release();
  fx.run();
  fx.commits->release(); // the second group: a and b
  fx.run();
  REQUIRE(*first);
  CHECK((*first)->ok());
  REQUIRE(*a);
  CHECK((*a)->ok());
  REQUIRE(*b);
  CHECK((*b)->ok());
  CHECK(fx.store.stored(fx.p).next_offset == storage::offset{3});
}

TEST_CASE("a write that waits the stall timeout behind a hung commit fails "
          "with a clear error and stores nothing",
          "[sim][writer][stall]") {
  stalled_writer fx;
  auto hung = fx.write(1);
  fx.run();
  auto waiting = fx.write(1);
  fx.run();
  fx.advance(std::chrono::seconds{9});
  CHECK_FALSE(*waiting);
  fx.advance(std::chrono::seconds{2});
  REQUIRE(*waiting);
  REQUIRE((*waiting)->failure);
  CHECK((*waiting)->failure->code == errc::unavailable);
  CHECK_THAT((*waiting)->failure->message,
             Catch::Contains("storage stalled")
                 && Catch::Contains("not started"));
  // While the commit keeps hanging, a new write is refused at once.
  auto late = fx.write(1);
  fx.run();
  REQUIRE(*late);
  REQUIRE((*late)->failure);
  CHECK_THAT((*late)->failure->message,
             Catch::Contains("the commit in progress has run for"));
  // The hung commit is answered when it ends; only it was stored.
  CHECK_FALSE(*hung);
  fx.commits->release();
  fx.run();
  REQUIRE(*hung);
  CHECK((*hung)->ok());
  CHECK(fx.store.stored(fx.p).next_offset == storage::offset{1});
}

TEST_CASE("a writer stopped during a commit answers it, then commits and "
          "answers what waited behind it",
          "[sim][writer][shutdown]") {
  stalled_writer fx;
  auto running = fx.write(1);
  fx.run();
  REQUIRE(fx.commits->running());
  auto waiting = fx.write(2);
  fx.run();
  CHECK_FALSE(*waiting);
  caf::anon_send_exit(fx.writer, caf::exit_reason::user_shutdown);
  fx.run(); // the exit handler ends the running commit (wait_idle)
  REQUIRE(*running);
  CHECK((*running)->ok());
  REQUIRE(*waiting);
  CHECK((*waiting)->ok());
  CHECK_FALSE(fx.commits->running()); // no group was started after the stop
  CHECK(fx.store.stored(fx.p).next_offset == storage::offset{3});
}

TEST_CASE("a barrier (an empty batch) is never refused or timed out: it is "
          "answered after every batch sent before it",
          "[sim][writer][limits]") {
  stalled_writer fx{1};
  auto hung = fx.write(1);
  fx.run();
  auto waiting = fx.write(1); // fills the queue (max_pending 1)
  fx.run();
  auto barrier = fx.request_later<actors::write_result>(
      fx.writer, actors::write_atom::value, storage::write_batch{});
  fx.run();
  fx.advance(std::chrono::seconds{11}); // past the stall timeout
  CHECK_FALSE(*barrier);                // neither refused nor failed
  REQUIRE(*waiting);                    // the real batch did fail
  CHECK((*waiting)->failure);
  fx.commits->release();
  fx.run();
  fx.commits->release();
  fx.run();
  REQUIRE(*hung);
  CHECK((*hung)->ok());
  REQUIRE(*barrier);
  CHECK((*barrier)->ok());
}
