// The stored answers of transactions (semantics.md §10): by transaction id,
// with a time index for retention.

#include "unit/storage/fixture.hpp"

using namespace spool::test;
using namespace spool::storage;

namespace {

std::optional<txn_record> stored_txn(store_fixture& fx, const std::string& id) {
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto r = tables::get_txn(*t, id);
  REQUIRE(r);
  return *r;
}

std::vector<std::string> before(store_fixture& fx, micros ts,
                                std::size_t limit = 100) {
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto r = tables::txns_before(*t, ts, limit);
  REQUIRE(r);
  return *r;
}

} // namespace

TEST_CASE("a transaction's answer is stored by its id and indexed by time",
          "[storage][txn]") {
  store_fixture fx;
  write_batch b;
  b.mutations.emplace_back(mut::put_txn{"b", {200, "second"}});
  b.mutations.emplace_back(mut::put_txn{"a", {100, "first"}});
  REQUIRE(fx.commit(b));
  CHECK(stored_txn(fx, "a") == txn_record{100, "first"});
  CHECK(!stored_txn(fx, "c"));
  CHECK(before(fx, 150) == std::vector<std::string>{"a"});
  CHECK(before(fx, 1000) == std::vector<std::string>{"a", "b"});
  CHECK(before(fx, 1000, 1) == std::vector<std::string>{"a"});
  // Storing an id again replaces it and its index entry.
  REQUIRE(fx.commit(write_batch{{mut::put_txn{"a", {300, "again"}}}}));
  CHECK(before(fx, 1000) == std::vector<std::string>{"b", "a"});
  // Deleting is idempotent and removes the index entry.
  REQUIRE(fx.commit(write_batch{
      {mut::delete_txn{"a"}, mut::delete_txn{"a"}, mut::delete_txn{"never"}}}));
  CHECK(!stored_txn(fx, "a"));
  CHECK(before(fx, 1000) == std::vector<std::string>{"b"});
  fx.reopen();
  CHECK(stored_txn(fx, "b") == txn_record{200, "second"});
}

TEST_CASE("a transaction id must be 1..255 bytes", "[storage][txn]") {
  store_fixture fx;
  CHECK(!fx.commit(write_batch{{mut::put_txn{"", {1, "x"}}}}));
  CHECK(
      !fx.commit(write_batch{{mut::put_txn{std::string(256, 'x'), {1, "x"}}}}));
}

TEST_CASE("retention deletes a transaction id only while it is still expired",
          "[storage][txn]") {
  store_fixture fx;
  REQUIRE(fx.commit(write_batch{{mut::put_txn{"x", {100, "old"}}}}));
  // Stored again (it ran again after expiring) before the sweep applied.
  REQUIRE(fx.commit(write_batch{{mut::put_txn{"x", {500, "new"}}}}));
  REQUIRE(fx.commit(write_batch{{mut::delete_txn{"x", 200}}}));
  CHECK(stored_txn(fx, "x") == txn_record{500, "new"});
  REQUIRE(fx.commit(write_batch{{mut::delete_txn{"x", 501}}}));
  CHECK(!stored_txn(fx, "x"));
}
