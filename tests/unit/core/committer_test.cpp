// The writer's committer: `wait_idle` covers every commit it was given,
// including one started from the previous commit's `done` (the writer
// answers a group and starts the next before the thread resumes); jobs run
// in order with the commits; a commit hook refuses batches before LMDB
// sees them and stamps each mark with its epoch.

#include "unit/storage/fixture.hpp"

#include <atomic>
#include <future>
#include <thread>

#include "core/writer/committer.hpp"

using namespace spool::test;
using namespace spool::storage;

TEST_CASE("wait_idle waits for a commit started from the previous commit's "
          "done",
          "[writer][committer]") {
  store_fixture fx;
  auto part = fx.make_partition();
  auto commits = spool::actors::thread_committer(fx.store->db());
  // Two real groups, each a commit with its sync: a segment, then a
  // partition of its own (independent of the first).
  partition_log log{part};
  auto t = fx.store->db().read();
  auto sealed = log.seal(*t, msgs(3), 2'000'000, fx.enc);
  t->abort();
  REQUIRE(sealed);
  write_batch first{sealed->mutations};
  partition_record p2 = part;
  p2.id = fx.store->next_partition_id(part.queue);
  p2.name = "second";
  p2.uuid = fx.store->make_partition_uuid(part.queue, p2.id);
  write_batch second;
  second.mutations.emplace_back(mut::create_partition{p2});
  // (No Catch macros on the committer's thread.)
  std::atomic<bool> first_ok{false};
  std::atomic<bool> second_done{false};
  std::atomic<bool> second_ok{false};
  commits->start({&first}, [&](spool::actors::commit_report r) {
    first_ok = r.failures.size() == 1 && !r.failures[0] && r.numbers.size() == 1
               && r.numbers[0].size() == 1;
    // As the writer actor does: start the next group at once.
    commits->start({&second}, [&](spool::actors::commit_report r2) {
      second_ok = r2.failures.size() == 1 && !r2.failures[0];
      second_done = true;
    });
  });
  commits->wait_idle();
  CHECK(first_ok);
  CHECK(second_done);
  CHECK(second_ok);
}

TEST_CASE("a committer runs jobs and commits on its one thread in the order "
          "they were given",
          "[writer][committer]") {
  store_fixture fx;
  auto part = fx.make_partition();
  auto commits = spool::actors::thread_committer(fx.store->db());
  partition_log log{part};
  auto batch = fx.seal_next(log, 1);
  std::vector<int> order; // touched on the committer's thread only
  std::atomic<bool> same_thread{true};
  std::thread::id runner;
  commits->run([&] {
    runner = std::this_thread::get_id();
    order.push_back(1);
  });
  commits->start({&batch}, [&](spool::actors::commit_report) {
    same_thread = same_thread && std::this_thread::get_id() == runner;
    order.push_back(2);
  });
  std::promise<void> last;
  commits->run([&] {
    same_thread = same_thread && std::this_thread::get_id() == runner;
    order.push_back(3);
    last.set_value();
  });
  // wait_idle counts commits only: the last job is waited for itself.
  commits->wait_idle();
  last.get_future().wait();
  CHECK(order == std::vector<int>{1, 2, 3});
  CHECK(same_thread);
  CHECK(runner != std::this_thread::get_id());
}

namespace {

/// Refuses batches of every slot but `allowed`; stamps epoch 7.
struct one_slot_hook final : spool::actors::commit_hook {
  slot_t allowed = 0;
  std::vector<slot_seq> seen;
  std::optional<spool::api_error> admit(const write_batch& b) override {
    for (auto& m : b.mutations)
      if (slot_of(m) != allowed)
        return spool::make_error(spool::errc::unavailable, "not here");
    return std::nullopt;
  }
  std::vector<std::uint64_t>
  committed(const std::vector<slot_seq>& marks) override {
    seen = marks;
    return std::vector<std::uint64_t>(marks.size(), 7);
  }
};

} // namespace

TEST_CASE("a commit hook refuses a batch before LMDB sees it, and stamps the "
          "marks of the rest with their epoch",
          "[writer][committer]") {
  store_fixture fx;
  auto a = fx.make_partition();
  partition_log log{a};
  auto mine = fx.seal_next(log, 1);
  auto hook = std::make_shared<one_slot_hook>();
  hook->allowed = static_cast<slot_t>(spool::slot_of_id(a.queue.value) + 1);
  auto before = [&] {
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto m = slot_log::meta(*t, spool::slot_of_id(a.queue.value));
    REQUIRE(m);
    return m->last_seq;
  }();
  auto refused = spool::actors::commit_now(fx.store->db(), {&mine}, hook.get());
  REQUIRE(refused.failures.size() == 1);
  REQUIRE(refused.failures[0]);
  CHECK(refused.failures[0]->message == "not here");
  CHECK(refused.numbers[0].empty());
  CHECK(refused.epochs.empty());
  CHECK(hook->seen.empty());
  {
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto m = slot_log::meta(*t, spool::slot_of_id(a.queue.value));
    REQUIRE(m);
    CHECK(m->last_seq == before); // nothing numbered, nothing stored
  }
  hook->allowed = spool::slot_of_id(a.queue.value);
  auto taken = spool::actors::commit_now(fx.store->db(), {&mine}, hook.get());
  REQUIRE(taken.failures.size() == 1);
  CHECK_FALSE(taken.failures[0]);
  REQUIRE(taken.marks().size() == 1);
  CHECK(taken.marks()[0].seq == before + 1);
  CHECK(hook->seen == taken.marks());
  CHECK(taken.epochs == std::vector<std::uint64_t>{7});
}
