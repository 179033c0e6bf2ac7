// The writer's committer thread: `wait_idle` covers every commit it was
// given, including one started from the previous commit's `done` (the
// writer answers a group and starts the next before the thread resumes).

#include "unit/storage/fixture.hpp"

#include <atomic>

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
    first_ok = r.results.size() == 1 && r.results[0] && r.numbers.size() == 1
               && r.numbers[0].size() == 1;
    // As the writer actor does: start the next group at once.
    commits->start({&second}, [&](spool::actors::commit_report r2) {
      second_ok = r2.results.size() == 1 && r2.results[0];
      second_done = true;
    });
  });
  commits->wait_idle();
  CHECK(first_ok);
  CHECK(second_done);
  CHECK(second_ok);
}
