// The DLQ's pure rules: filters, newest-first pagination with a stable
// `after` cursor and an exact total, and the retention sweep.

#include <catch2/catch.hpp>

#include "core/dlq/dlq_core.hpp"

using namespace spool;
using namespace spool::core;
using spool::storage::dlq_entry;

namespace {

dlq_item item(std::uint64_t id, spool::storage::micros failed_at = 0,
              std::string group = "g") {
  dlq_item x;
  x.queue = "q";
  x.group = std::move(group);
  x.partition = "p";
  x.entry.id = id;
  x.entry.failed_at = failed_at;
  return x;
}

std::vector<std::uint64_t> ids(const dlq_page& p) {
  std::vector<std::uint64_t> out;
  for (auto& x : p.items)
    out.push_back(x.entry.id);
  return out;
}

std::vector<dlq_item> ten() {
  std::vector<dlq_item> v;
  for (std::uint64_t i = 1; i <= 10; ++i)
    v.push_back(item(i));
  return v;
}

} // namespace

TEST_CASE("a DLQ page is newest first with limit, offset and an exact total",
          "[dlq][list]") {
  dlq_query q;
  q.limit = 3;
  auto p = paginate(ten(), q);
  CHECK(p.total == 10);
  CHECK(ids(p) == std::vector<std::uint64_t>{10, 9, 8});
  q.offset = 8;
  p = paginate(ten(), q);
  CHECK(ids(p) == std::vector<std::uint64_t>{2, 1});
  CHECK(p.total == 10);
  q.offset = 20;
  CHECK(paginate(ten(), q).items.empty());
}

TEST_CASE("the after cursor is stable when entries are deleted meanwhile",
          "[dlq][list]") {
  dlq_query q;
  q.limit = 3;
  q.after = 8;
  CHECK(ids(paginate(ten(), q)) == std::vector<std::uint64_t>{7, 6, 5});
  // Entry 8 itself and a newer one are gone: the next page is the same.
  auto fewer = ten();
  std::erase_if(fewer,
                [](auto& x) { return x.entry.id == 8 || x.entry.id == 10; });
  auto p = paginate(fewer, q);
  CHECK(ids(p) == std::vector<std::uint64_t>{7, 6, 5});
  CHECK(p.total == 8);
  q.offset = 1;
  CHECK(ids(paginate(ten(), q)) == std::vector<std::uint64_t>{6, 5, 4});
}

TEST_CASE("a DLQ filter narrows by names, failure time and ids",
          "[dlq][filter]") {
  dlq_entry e;
  e.id = 4;
  e.failed_at = 100;
  dlq_filter f;
  CHECK(matches(f, "q", "g", "p", e));
  f.queue = "q";
  f.group = "g";
  f.partition = "p";
  f.from = 100;
  f.to = 100;
  CHECK(matches(f, "q", "g", "p", e));
  CHECK(!matches(f, "q", "h", "p", e));
  CHECK(!matches(f, "r", "g", "p", e));
  CHECK(!matches(f, "q", "g", "x", e));
  f.from = 101;
  CHECK(!matches(f, "q", "g", "p", e));
  f.from.reset();
  f.to = 99;
  CHECK(!matches(f, "q", "g", "p", e));
  f.to.reset();
  f.ids = {3, 4};
  CHECK(matches(f, "q", "g", "p", e));
  f.ids = {3};
  CHECK(!matches(f, "q", "g", "p", e));
}

TEST_CASE("a bad DLQ filter is refused with the reason", "[dlq][filter]") {
  dlq_query q;
  CHECK(check(q));
  q.filter.from = 10;
  q.filter.to = 5;
  auto bad = check(q);
  REQUIRE(!bad);
  CHECK(bad.err().message == "Invalid DLQ filter: from is after to");
  q.filter.to.reset();
  q.limit = 0;
  REQUIRE(!check(q));
  CHECK(check(q).err().message.find("limit") != std::string::npos);
  q.limit = 1;
  q.filter.group = "";
  CHECK(!check(q));
}

TEST_CASE("DLQ entries expire after dlqRetentionSeconds, a pending requeue "
          "never",
          "[dlq][retention]") {
  dlq_entry e;
  e.failed_at = 1'000'000;
  CHECK(!expired(e, 1'000'000 + 9'999'999, 10));
  CHECK(expired(e, 1'000'000 + 10'000'000, 10));
  CHECK(!expired(e, 1'000'000'000'000, 0)); // 0 keeps forever
  e.requeued = true;
  CHECK(!expired(e, 1'000'000'000'000, 10));
}

TEST_CASE("the DLQ sweep deletes in bounded steps and arms at the next "
          "expiry",
          "[dlq][retention]") {
  const spool::storage::micros s = 1'000'000;
  dlq_sweeper sw(100 * s, 10, 2, 5 * s);
  dlq_entry e;
  for (std::uint64_t i = 1; i <= 3; ++i) {
    e.id = i;
    e.failed_at = 80 * s; // expired
    sw.see("g", e);
  }
  e.id = 4;
  e.failed_at = 95 * s; // expires at 105 s
  sw.see("g", e);
  REQUIRE(sw.expired().size() == 2);
  CHECK(sw.expired()[0] == std::pair<std::string, std::uint64_t>{"g", 1});
  CHECK(sw.next() == 100 * s); // a full step: again at once

  dlq_sweeper calm(100 * s, 10, 10, 1 * s);
  calm.see("g", e);
  CHECK(calm.expired().empty());
  CHECK(calm.next() == 105 * s);

  dlq_sweeper gap(100 * s, 10, 10, 60 * s);
  gap.see("g", e);
  CHECK(gap.next() == 160 * s); // not sooner than the gap

  dlq_sweeper none(100 * s, 10, 10, 1 * s);
  e.requeued = true;
  none.see("g", e);
  CHECK(!none.next());
}
