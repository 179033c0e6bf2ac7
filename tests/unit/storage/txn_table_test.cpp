// The stored answers of transactions (semantics.md §10): by home queue and
// transaction id, with a time index per queue for retention.

#include "unit/storage/fixture.hpp"

#include <memory>

using namespace spool::test;
using namespace spool::storage;

namespace {

std::optional<txn_record> stored_txn(store_fixture& fx, queue_id q,
                                     const std::string& id) {
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto r = tables::get_txn(*t, q, id);
  REQUIRE(r);
  return *r;
}

std::vector<std::string> before(store_fixture& fx, queue_id q, micros ts,
                                std::size_t limit = 100) {
  auto t = fx.store->db().read();
  REQUIRE(t);
  auto r = tables::txns_before(*t, q, ts, limit);
  REQUIRE(r);
  return *r;
}

/// A second queue beside the fixture's.
queue_id other_queue(store_fixture& fx) {
  queue_record rec;
  rec.name = "other";
  rec.id = fx.store->next_queue_id(rec.name);
  REQUIRE(fx.commit(write_batch{{mut::create_queue{rec}}}));
  return rec.id;
}

} // namespace

TEST_CASE("a transaction's answer is stored by its id and indexed by time",
          "[storage][txn]") {
  store_fixture fx;
  auto q = fx.make_partition().queue;
  write_batch b;
  b.mutations.emplace_back(mut::put_txn{q, "b", {200, "second"}});
  b.mutations.emplace_back(mut::put_txn{q, "a", {100, "first"}});
  REQUIRE(fx.commit(b));
  CHECK(stored_txn(fx, q, "a") == txn_record{100, "first"});
  CHECK(!stored_txn(fx, q, "c"));
  CHECK(before(fx, q, 150) == std::vector<std::string>{"a"});
  CHECK(before(fx, q, 1000) == std::vector<std::string>{"a", "b"});
  CHECK(before(fx, q, 1000, 1) == std::vector<std::string>{"a"});
  // Storing an id again replaces it and its index entry.
  REQUIRE(fx.commit(write_batch{{mut::put_txn{q, "a", {300, "again"}}}}));
  CHECK(before(fx, q, 1000) == std::vector<std::string>{"b", "a"});
  // Deleting is idempotent and removes the index entry.
  REQUIRE(
      fx.commit(write_batch{{mut::delete_txn{q, "a"}, mut::delete_txn{q, "a"},
                             mut::delete_txn{q, "never"}}}));
  CHECK(!stored_txn(fx, q, "a"));
  CHECK(before(fx, q, 1000) == std::vector<std::string>{"b"});
  fx.reopen();
  CHECK(stored_txn(fx, q, "b") == txn_record{200, "second"});
}

TEST_CASE("a transaction id must be 1..255 bytes", "[storage][txn]") {
  store_fixture fx;
  auto q = fx.make_partition().queue;
  CHECK(!fx.commit(write_batch{{mut::put_txn{q, "", {1, "x"}}}}));
  CHECK(!fx.commit(
      write_batch{{mut::put_txn{q, std::string(256, 'x'), {1, "x"}}}}));
}

TEST_CASE("retention deletes a transaction id only while it is still expired",
          "[storage][txn]") {
  store_fixture fx;
  auto q = fx.make_partition().queue;
  REQUIRE(fx.commit(write_batch{{mut::put_txn{q, "x", {100, "old"}}}}));
  // Stored again (it ran again after expiring) before the sweep applied.
  REQUIRE(fx.commit(write_batch{{mut::put_txn{q, "x", {500, "new"}}}}));
  REQUIRE(fx.commit(write_batch{{mut::delete_txn{q, "x", 200}}}));
  CHECK(stored_txn(fx, q, "x") == txn_record{500, "new"});
  REQUIRE(fx.commit(write_batch{{mut::delete_txn{q, "x", 501}}}));
  CHECK(!stored_txn(fx, q, "x"));
}

TEST_CASE("a transaction's answer is its home queue's: another queue neither "
          "finds nor expires it, and deleting the queue forgets it",
          "[storage][txn]") {
  store_fixture fx;
  auto q = fx.make_partition().queue;
  auto other = other_queue(fx);
  REQUIRE(fx.commit(write_batch{{mut::put_txn{q, "t", {100, "mine"}},
                                 mut::put_txn{other, "t", {300, "theirs"}}}}));
  CHECK(stored_txn(fx, q, "t") == txn_record{100, "mine"});
  CHECK(stored_txn(fx, other, "t") == txn_record{300, "theirs"});
  CHECK(before(fx, other, 1000) == std::vector<std::string>{"t"});
  REQUIRE(fx.commit(write_batch{{mut::delete_txn{other, "t", 1000}}}));
  CHECK(stored_txn(fx, q, "t") == txn_record{100, "mine"});
  CHECK(before(fx, q, 1000) == std::vector<std::string>{"t"});
  // Kept only by a live queue: a deleted one's answers go with its sweep.
  REQUIRE(fx.commit(write_batch{
      {mut::put_txn{other, "u", {400, "kept"}}, mut::delete_queue{q}}}));
  auto refused = fx.commit(write_batch{{mut::put_txn{q, "u", {1, "late"}}}});
  REQUIRE(!refused);
  CHECK(refused.err().code == ec::unknown_queue);
  REQUIRE(fx.commit(write_batch{{mut::sweep_queue{q, 1000}}}));
  CHECK(!stored_txn(fx, q, "t"));
  CHECK(before(fx, q, 1000).empty());
  CHECK(stored_txn(fx, other, "u") == txn_record{400, "kept"});
}

TEST_CASE("opening a store written before answers were kept by queue drops "
          "the old node-wide tables",
          "[storage][txn]") {
  store_fixture fx;
  auto q = fx.make_partition().queue;
  REQUIRE(fx.commit(write_batch{{mut::put_txn{q, "kept", {1, "new"}}}}));
  fx.store.reset();
  // The old layout, written with LMDB itself: `txns` keyed by the bare id.
  auto raw = [&](auto&& body) {
    MDB_env* e = nullptr;
    REQUIRE(mdb_env_create(&e) == 0);
    std::unique_ptr<MDB_env, void (*)(MDB_env*)> env_guard{e, mdb_env_close};
    REQUIRE(mdb_env_set_maxdbs(e, 16) == 0);
    REQUIRE(mdb_env_set_mapsize(e, fx.opts.env.initial_map_bytes) == 0);
    REQUIRE(mdb_env_open(e, fx.opts.env.dir.c_str(), MDB_NOTLS, 0644) == 0);
    MDB_txn* t = nullptr;
    REQUIRE(mdb_txn_begin(e, nullptr, 0, &t) == 0);
    std::unique_ptr<MDB_txn, void (*)(MDB_txn*)> txn_guard{t, mdb_txn_abort};
    body(t);
    REQUIRE(mdb_txn_commit(txn_guard.release()) == 0);
  };
  raw([](MDB_txn* t) {
    for (const char* name : {"txns", "txn_time"}) {
      MDB_dbi dbi = 0;
      REQUIRE(mdb_dbi_open(t, name, MDB_CREATE, &dbi) == 0);
      std::string k = "old-id";
      std::string v = "old answer";
      MDB_val key{k.size(), k.data()};
      MDB_val val{v.size(), v.data()};
      REQUIRE(mdb_put(t, dbi, &key, &val, 0) == 0);
    }
  });
  fx.open();
  CHECK(stored_txn(fx, q, "kept") == txn_record{1, "new"});
  fx.store.reset();
  raw([](MDB_txn* t) {
    for (const char* name : {"txns", "txn_time"}) {
      MDB_dbi dbi = 0;
      CHECK(mdb_dbi_open(t, name, 0, &dbi) == MDB_NOTFOUND);
    }
  });
  fx.open();
}
