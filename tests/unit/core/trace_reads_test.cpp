// Trace limits and the reads by name across queues (core/limits/traces.hpp,
// core/broker/trace_reads.hpp): a queue being deleted is left out, each hit
// names its queue and partition and carries its message within the page's
// byte budget, and the names page with an exact total.

#include "unit/storage/fixture.hpp"

#include "core/broker/trace_reads.hpp"
#include "core/limits/traces.hpp"

using namespace spool;
using namespace spool::test;
using namespace spool::storage;

namespace {

trace_record trace(std::string id, micros at, std::vector<std::string> names) {
  trace_record r;
  r.id = std::move(id);
  r.event_type = "info";
  r.data = "1";
  r.consumer_group = "__QUEUE_MODE__";
  r.created_at = at;
  r.names = std::move(names);
  return r;
}

void put(store_fixture& fx, const partition_record& p, offset off,
         trace_record r) {
  write_batch b;
  b.mutations.emplace_back(mut::put_trace{p.queue, p.id, off, std::move(r)});
  REQUIRE(fx.commit(std::move(b)));
}

} // namespace

TEST_CASE("a trace's limits: data required and at most 64 KiB, names 1..255 "
          "bytes of text, at most 32 after repeats are dropped",
          "[core][traces]") {
  auto ok = trace("a", 1, {"x", "y", "x"});
  REQUIRE(core::check_trace(ok));
  CHECK(ok.names == std::vector<std::string>{"x", "y"});
  auto empty = trace("a", 1, {});
  empty.data.clear();
  CHECK(core::check_trace(empty).err().message == "data is required");
  auto big = trace("a", 1, {});
  big.data = std::string(core::max_trace_data + 1, '1');
  CHECK(core::check_trace(big).err().code == errc::too_large);
  big.data.pop_back();
  CHECK(core::check_trace(big));
  auto blank = trace("a", 1, {"x", ""});
  CHECK(core::check_trace(blank).err().message
        == "traceNames[1] must not be empty");
  auto longer = trace("a", 1, {std::string(256, 'n')});
  CHECK(core::check_trace(longer).err().code == errc::invalid_argument);
  auto control = trace("a", 1, {"a\nb"});
  CHECK(core::check_trace(control).err().code == errc::invalid_argument);
  std::vector<std::string> many;
  for (int i = 0; i < 33; ++i)
    many.push_back("n" + std::to_string(i % 33));
  auto too_many = trace("a", 1, many);
  CHECK(core::check_trace(too_many).err().message
        == "a trace carries at most 32 traceNames");
  many.back() = "n0"; // a repeat: 32 distinct
  auto repeats = trace("a", 1, many);
  CHECK(core::check_trace(repeats));
  auto group = trace("a", 1, {});
  group.consumer_group = std::string(256, 'g');
  CHECK(core::check_trace(group).err().code == errc::invalid_argument);
}

TEST_CASE("traces by name name their queue and partition, carry their "
          "message, and leave out a queue being deleted",
          "[core][traces]") {
  store_fixture fx;
  auto p = fx.make_partition("p1");
  auto p2 = fx.make_partition("p2");
  partition_log log{p}, log2{p2};
  REQUIRE(fx.append(log, {msg(R"({"a":1})", "t0"), msg("2", "t1")}, 1'000));
  REQUIRE(fx.append(log2, {msg("3", "u0")}, 1'000));
  put(fx, p, offset{0}, trace("a", 10, {"order"}));
  put(fx, p, offset{1}, trace("b", 20, {"order", "other"}));
  put(fx, p2, offset{0}, trace("c", 30, {"order"}));
  std::vector<core::live_queue> qs{{p.queue, "orders"}};
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto r = core::traces_named(*t, qs, "order", 2, 0);
  REQUIRE(r);
  CHECK(r->total == 3);
  REQUIRE(r->hits.size() == 2);
  CHECK(r->hits[0].rec.id == "c"); // newest first
  CHECK(r->hits[0].queue == "orders");
  CHECK(r->hits[0].partition == "p2");
  CHECK(r->hits[0].partition_uuid == p2.uuid);
  REQUIRE(r->hits[0].message);
  CHECK(r->hits[0].message->data.payload == "3");
  CHECK(r->hits[1].rec.id == "b");
  CHECK(r->hits[1].message->data.transaction_id == "t1");
  auto rest = core::traces_named(*t, qs, "order", 2, 2);
  REQUIRE(rest);
  REQUIRE(rest->hits.size() == 1);
  CHECK(rest->hits[0].rec.id == "a");
  CHECK(rest->hits[0].message->data.payload == R"({"a":1})");
  auto names = core::trace_names(*t, qs, 1, 0);
  REQUIRE(names);
  CHECK(names->total == 2);
  REQUIRE(names->names.size() == 1);
  CHECK(names->names[0].name == "order");
  CHECK(names->names[0].traces == 3);
  CHECK(names->names[0].messages == 3);
  CHECK(names->names[0].last_seen == 30);
  auto second = core::trace_names(*t, qs, 5, 1);
  REQUIRE(second);
  REQUIRE(second->names.size() == 1);
  CHECK(second->names[0].name == "other");
  t->abort();
  // The queue deleted (its rows not swept yet): left out.
  write_batch del;
  del.mutations.emplace_back(mut::delete_queue{p.queue});
  REQUIRE(fx.commit(std::move(del)));
  auto t2 = fx.store->db().read();
  REQUIRE(t2);
  auto gone = core::traces_named(*t2, qs, "order", 10, 0);
  REQUIRE(gone);
  CHECK(gone->total == 0);
  CHECK(gone->hits.empty());
  CHECK(core::trace_names(*t2, qs, 10, 0)->total == 0);
}

TEST_CASE("a page by name carries messages up to its byte budget, the hits "
          "past it come without",
          "[core][traces]") {
  store_fixture fx;
  auto p = fx.make_partition();
  partition_log log{p};
  std::string big(core::max_trace_page_bytes * 3 / 8, 'x'); // 6 MiB
  REQUIRE(fx.append(log, {msg("\"" + big + "\"")}, 1'000));
  REQUIRE(fx.append(log, {msg("\"" + big + "\"")}, 2'000));
  REQUIRE(fx.append(log, {msg("\"" + big + "\"")}, 3'000));
  put(fx, p, offset{0}, trace("a", 30, {"n"}));
  put(fx, p, offset{1}, trace("b", 20, {"n"}));
  put(fx, p, offset{2}, trace("c", 10, {"n"}));
  std::vector<core::live_queue> qs{{p.queue, "orders"}};
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto r = core::traces_named(*t, qs, "n", 10, 0);
  REQUIRE(r);
  REQUIRE(r->hits.size() == 3);
  CHECK(r->hits[0].message);       // a: 6 of 16 MiB
  CHECK(r->hits[1].message);       // b: 12 of 16 MiB
  CHECK_FALSE(r->hits[2].message); // c: past the budget
}
