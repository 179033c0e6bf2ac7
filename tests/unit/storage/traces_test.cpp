// Traces: stored beside their message, read by message and by name, the
// names listed, and gone with their message (retention, queue deletion).

#include "unit/storage/fixture.hpp"

#include "storage/traces.hpp"

using namespace spool::test;
using namespace spool::storage;

namespace {

trace_record trace(std::string id, micros at, std::vector<std::string> names,
                   std::string data = R"({"step":1})") {
  trace_record r;
  r.id = std::move(id);
  r.event_type = "info";
  r.data = std::move(data);
  r.consumer_group = "__QUEUE_MODE__";
  r.created_at = at;
  r.names = std::move(names);
  return r;
}

expected<void> put(store_fixture& fx, const partition_record& p, offset off,
                   trace_record r) {
  write_batch b;
  b.mutations.emplace_back(mut::put_trace{p.queue, p.id, off, std::move(r)});
  return fx.commit(std::move(b));
}

std::vector<trace_record> of(store_fixture& fx, const partition_record& p,
                             offset off) {
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto r = traces::of_message(*t, p.queue, p.id, off, 1000);
  REQUIRE(r);
  return *r;
}

traces::named_page named(store_fixture& fx, std::vector<queue_id> qs,
                         std::string name, std::size_t limit = 100,
                         std::size_t skip = 0) {
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto r = traces::named(*t, qs, name, limit, skip, 1000);
  REQUIRE(r);
  return *r;
}

} // namespace

TEST_CASE("traces of a message are read back oldest first, with every field",
          "[storage][traces]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, msgs(3), 1'000'000));
  auto late = trace("b", 2'000'002, {"order-1"});
  late.worker_id = "w1";
  late.transaction_id = "tx";
  REQUIRE(put(fx, p, offset{1}, late));
  REQUIRE(put(fx, p, offset{1}, trace("a", 2'000'001, {})));
  REQUIRE(put(fx, p, offset{2}, trace("c", 2'000'000, {})));
  auto got = of(fx, p, offset{1});
  REQUIRE(got.size() == 2);
  CHECK(got[0].id == "a");
  CHECK(got[1] == late);
  CHECK(of(fx, p, offset{0}).empty());
}

TEST_CASE("a trace of a message not stored is refused and stores nothing",
          "[storage][traces]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, msgs(2), 1'000'000));
  auto beyond = put(fx, p, offset{2}, trace("x", 1, {"n"}));
  REQUIRE_FALSE(beyond);
  CHECK(beyond.err().code == ec::not_found);
  auto long_name
      = put(fx, p, offset{0}, trace("y", 1, {std::string(256, 'n')}));
  REQUIRE_FALSE(long_name);
  CHECK(long_name.err().code == ec::invalid_argument);
  CHECK(named(fx, {p.queue}, "n").total == 0);
  CHECK(of(fx, p, offset{0}).empty());
}

TEST_CASE("traces by name come newest first across queues, paginated, with "
          "an exact total",
          "[storage][traces]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, msgs(3), 1'000'000));
  for (int i = 0; i < 5; ++i)
    REQUIRE(put(fx, p, offset{i % 3},
                trace("t" + std::to_string(i), 2'000'000 + i,
                      {"order-7", i % 2 ? "odd" : "even"})));
  // A name that extends another is a different name.
  REQUIRE(put(fx, p, offset{0}, trace("u", 3'000'000, {"order-77"})));
  auto page = named(fx, {p.queue}, "order-7", 2, 1);
  CHECK(page.total == 5);
  REQUIRE(page.hits.size() == 2);
  CHECK(page.hits[0].rec.id == "t3");
  CHECK(page.hits[1].rec.id == "t2");
  CHECK(page.hits[1].off == offset{2});
  CHECK(page.hits[1].partition == p.id);
  CHECK(named(fx, {p.queue}, "odd").total == 2);
  // Queues not asked for are not read.
  CHECK(named(fx, {queue_id{p.queue.value + 1}}, "order-7").total == 0);
  auto t = fx.store->db().read();
  REQUIRE(t);
  std::vector<queue_id> qs{p.queue};
  auto over = traces::named(*t, qs, "order-7", 10, 0, 4);
  REQUIRE_FALSE(over);
  CHECK(over.err().code == ec::invalid_argument);
}

TEST_CASE("the trace names list counts traces and messages, most recent first",
          "[storage][traces]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, msgs(3), 1'000'000));
  REQUIRE(put(fx, p, offset{0}, trace("a", 10, {"old", "both"})));
  REQUIRE(put(fx, p, offset{0}, trace("b", 20, {"both"})));
  REQUIRE(put(fx, p, offset{1}, trace("c", 30, {"both", "new"})));
  auto t = fx.store->db().read();
  REQUIRE(t);
  std::vector<queue_id> qs{p.queue};
  auto names = traces::names(*t, qs, 1000);
  REQUIRE(names);
  REQUIRE(names->size() == 3);
  // "both" and "new" were last seen at 30: by name then.
  CHECK((*names)[0].name == "both");
  CHECK((*names)[0].traces == 3);
  CHECK((*names)[0].messages == 2);
  CHECK((*names)[0].last_seen == 30);
  CHECK((*names)[1].name == "new");
  CHECK((*names)[2].name == "old");
  CHECK((*names)[2].messages == 1);
  auto over = traces::names(*t, qs, 4);
  REQUIRE_FALSE(over);
}

TEST_CASE("traces are deleted with their message's segment",
          "[storage][traces][retention]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 2, .max_bytes = 1 << 20}};
  REQUIRE(fx.append(log, msgs(2), 1'000'000)); // offsets 0-1
  REQUIRE(fx.append(log, msgs(2), 2'000'000)); // offsets 2-3
  REQUIRE(put(fx, p, offset{1}, trace("gone", 5, {"n"})));
  REQUIRE(put(fx, p, offset{2}, trace("kept", 6, {"n"})));
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto m = plan_retention(*t, p.queue, p.id, {.created_before = 1'500'000});
  t->abort();
  REQUIRE(m);
  REQUIRE(*m);
  REQUIRE(fx.commit(write_batch{{**m}}));
  CHECK(of(fx, p, offset{1}).empty());
  CHECK(of(fx, p, offset{2}).size() == 1);
  auto page = named(fx, {p.queue}, "n");
  CHECK(page.total == 1);
  REQUIRE(page.hits.size() == 1);
  CHECK(page.hits[0].rec.id == "kept");
  // A trace of the deleted message is refused now.
  auto late = put(fx, p, offset{1}, trace("late", 7, {"n"}));
  REQUIRE_FALSE(late);
  CHECK(late.err().code == ec::not_found);
}

TEST_CASE("a retention step deletes a bounded number of traces: it stops "
          "before the segment whose traces pass the budget, but always takes "
          "one segment",
          "[storage][traces][retention]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p, {.max_frames = 2, .max_bytes = 1 << 20}};
  for (int i = 0; i < 3; ++i) // offsets 0-1, 2-3, 4-5
    REQUIRE(fx.append(log, msgs(2), 1'000'000 + i));
  // Segment i holds i + 1 traces on its first message: 1, 2, 3.
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k <= i; ++k)
      REQUIRE(put(fx, p, offset{2 * i},
                  trace("t" + std::to_string(i) + std::to_string(k), 10 + k,
                        {"a", "b"})));
  auto plan = [&](std::size_t traces) {
    auto t = fx.store->db().read();
    REQUIRE(t);
    auto m = plan_retention(*t, p.queue, p.id, {.max_traces = traces});
    REQUIRE(m);
    REQUIRE(*m);
    return (*m)->new_watermark;
  };
  CHECK(plan(100) == offset{6}); // all fit
  CHECK(plan(6) == offset{6});   // exactly
  CHECK(plan(5) == offset{4});   // the third segment's pass it
  CHECK(plan(3) == offset{4});   // two segments' traces: 3
  CHECK(plan(2) == offset{2});   // the second's pass it
  CHECK(plan(0) == offset{2});   // the first segment regardless
  // The step taken deletes its traces; the next goes on.
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto m = plan_retention(*t, p.queue, p.id, {.max_traces = 1});
  t->abort();
  REQUIRE(fx.commit(write_batch{{**m}}));
  CHECK(of(fx, p, offset{0}).empty());
  CHECK(of(fx, p, offset{2}).size() == 2);
  CHECK(named(fx, {p.queue}, "a").total == 5);
}

TEST_CASE("a message holds at most 100 traces", "[storage][traces]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, msgs(1), 1'000'000));
  for (std::size_t i = 0; i < traces::max_per_message; ++i)
    REQUIRE(put(fx, p, offset{0}, trace("t" + std::to_string(i), 1, {})));
  auto over = put(fx, p, offset{0}, trace("over", 2, {"n"}));
  REQUIRE_FALSE(over);
  CHECK(over.err().code == ec::invalid_argument);
  CHECK(of(fx, p, offset{0}).size() == traces::max_per_message);
}

TEST_CASE("a deleted queue's traces are swept with its rows",
          "[storage][traces]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  REQUIRE(fx.append(log, msgs(2), 1'000'000));
  REQUIRE(put(fx, p, offset{0}, trace("a", 5, {"n", "m"})));
  write_batch del;
  del.mutations.emplace_back(mut::delete_queue{p.queue});
  REQUIRE(fx.commit(std::move(del)));
  // Refused at once: the queue is gone.
  REQUIRE_FALSE(put(fx, p, offset{1}, trace("b", 6, {"n"})));
  for (int i = 0; i < 10; ++i) {
    write_batch step;
    step.mutations.emplace_back(mut::sweep_queue{p.queue, 2});
    REQUIRE(fx.commit(std::move(step)));
  }
  auto t = fx.store->db().read();
  REQUIRE(t);
  CHECK(rows_under(*t, p.queue) == 0);
}
