// One slot's log in LMDB as replication reads and writes it
// (core/replica/slot_port.hpp): a follower applying the leader's entries
// through the port ends with the leader's rows byte for byte; truncation,
// snapshots, the hard state and an epoch_start entry go through it too.

#include "core/replica/slot_port.hpp"
#include "storage/slot_log.hpp"
#include "unit/storage/fixture.hpp"
#include "unit/storage/replay.hpp"

using namespace spool;
using namespace spool::storage;
using namespace spool::test;
namespace cl = spool::cluster;

namespace {

cursor_record at(std::int64_t committed) {
  cursor_record c;
  c.committed = offset{committed};
  return c;
}

/// A leader store with a partition, its messages and cursor moves, each a
/// batch of its own; and a follower store beside it.
struct pair_of_stores {
  store_fixture leader;
  temp_dir follower_dir;
  std::unique_ptr<store> follower;
  partition_record p;
  slot_t s = 0;

  explicit pair_of_stores(log_window window = {}) {
    leader.store.reset();
    leader.opts.env.slot_log = window;
    leader.open();
    p = leader.make_partition();
    s = slot_of_id(p.queue.value);
    partition_log log{p};
    for (int i = 0; i < 4; ++i) {
      REQUIRE(
          leader.append(log, {msg("m" + std::to_string(i))}, 1'000'000 + i));
      REQUIRE(leader.commit(
          write_batch{{mut::put_cursor{p.queue, p.id, "g", at(i)}}}));
    }
    follower = fresh_like(*leader.store, follower_dir);
  }
  core::slot_port leader_port() {
    return core::slot_port{leader.store->db(), s};
  }
  core::slot_port follower_port() {
    return core::slot_port{follower->db(), s};
  }
};

/// Copies the slot from `from` to `to` in pieces of about `piece` bytes, as
/// a leader and its follower do; installs it unless `install` is false.
/// Returns how many pieces it took.
std::size_t copy_in_pieces(const core::slot_port& from, core::slot_port& to,
                           std::size_t piece, bool install = true) {
  auto at = from.open_copy(100);
  REQUIRE(at);
  std::string next;
  std::uint32_t i = 0;
  for (;;) {
    auto r = from.read_copy(100, next, piece);
    REQUIRE(r);
    cl::writes w;
    w.stage = cl::make_piece(100, *at, i, r->last, r->data);
    if (r->last && install)
      w.install = *at;
    REQUIRE(to.write(w) == cl::write_result::ok);
    ++i;
    if (r->last)
      break;
    next = r->next;
  }
  from.close_copy(100);
  return i;
}

/// The rows staged in `st`, every slot's.
std::size_t staged_rows(store& st) {
  auto t = st.db().read();
  REQUIRE(t);
  auto cur = t->open_cursor(t->db().slot_staging);
  REQUIRE(cur);
  std::size_t n = 0;
  for (auto found = cur->first(); found && *found; found = cur->next())
    ++n;
  return n;
}

} // namespace

TEST_CASE("a follower applying the leader's entries through the slot port ends "
          "with the leader's rows byte for byte",
          "[replica][slot_port]") {
  pair_of_stores ps;
  auto from = ps.leader_port();
  auto to = ps.follower_port();
  auto last = from.last();
  CHECK(last.seq == 9); // the queue and partition, then 4 × (push, cursor)
  CHECK(last.epoch == 1);
  auto entries = from.read(1, 100, 1 << 20);
  REQUIRE(entries.size() == 9);
  for (auto& e : entries) {
    CHECK(cl::checksum_ok(e));
    CHECK(e.kind == cl::entry_kind::data);
  }
  cl::writes w;
  w.append = entries;
  REQUIRE(to.write(w) == cl::write_result::ok);
  CHECK(to.last() == last);
  CHECK(rows_diff(slot_rows(*ps.leader.store, ps.s),
                  slot_rows(*ps.follower, ps.s))
        == "");
  CHECK_FALSE(from.take_error());
  CHECK_FALSE(to.take_error());
}

TEST_CASE("a read through the slot port stops at its count and byte bounds, "
          "and always returns one entry when there is one",
          "[replica][slot_port]") {
  pair_of_stores ps;
  auto from = ps.leader_port();
  CHECK(from.read(3, 2, 1 << 20).size() == 2);
  CHECK(from.read(3, 100, 1).size() == 1);
  CHECK(from.read(10, 100, 1 << 20).empty());
}

TEST_CASE("a truncation through the slot port leaves the follower as if it "
          "never applied the tail",
          "[replica][slot_port]") {
  pair_of_stores ps;
  auto from = ps.leader_port();
  auto to = ps.follower_port();
  cl::writes all;
  all.append = from.read(1, 100, 1 << 20);
  REQUIRE(to.write(all) == cl::write_result::ok);
  cl::writes cut;
  cut.truncate_after = 5;
  REQUIRE(to.write(cut) == cl::write_result::ok);
  CHECK(to.last().seq == 5);

  temp_dir other_dir;
  auto other = fresh_like(*ps.leader.store, other_dir);
  core::slot_port other_port{other->db(), ps.s};
  cl::writes five;
  five.append = from.read(1, 5, 1 << 20);
  REQUIRE(other_port.write(five) == cl::write_result::ok);
  CHECK(rows_diff(slot_rows(*other, ps.s), slot_rows(*ps.follower, ps.s))
        == "");
}

TEST_CASE("a follower behind the leader's trimmed log takes a snapshot of the "
          "slot's key range through the port, in pieces, then entries after "
          "it",
          "[replica][slot_port][snapshot]") {
  pair_of_stores ps(log_window{3, std::uint64_t{1} << 30});
  auto from = ps.leader_port();
  auto base = from.base();
  CHECK(base.seq >= 1);
  CHECK(base.epoch == 1);
  CHECK(from.epoch_at(base.seq) == 1u);
  CHECK_FALSE(from.epoch_at(base.seq - 1));
  auto to = ps.follower_port();
  auto pieces = copy_in_pieces(from, to, 64);
  CHECK(pieces > 3); // a few rows each
  CHECK(to.last() == from.last());
  CHECK(to.base() == from.last());
  CHECK(rows_diff(slot_rows(*ps.leader.store, ps.s),
                  slot_rows(*ps.follower, ps.s))
        == "");
  CHECK(staged_rows(*ps.follower) == 0);
  CHECK(ps.leader.store->db().held_count() == 0);

  REQUIRE(ps.leader.commit(
      write_batch{{mut::put_cursor{ps.p.queue, ps.p.id, "g", at(9)}}}));
  cl::writes next;
  next.append = from.read(to.last().seq + 1, 100, 1 << 20);
  REQUIRE(next.append.size() == 1);
  REQUIRE(to.write(next) == cl::write_result::ok);
  CHECK(rows_diff(slot_rows(*ps.leader.store, ps.s),
                  slot_rows(*ps.follower, ps.s))
        == "");
}

TEST_CASE("a copy reads the slot as it was when it was opened, and staged "
          "pieces change none of the follower's rows before the last one",
          "[replica][slot_port][snapshot]") {
  pair_of_stores ps;
  auto from = ps.leader_port();
  auto to = ps.follower_port();
  auto leader_then = slot_rows(*ps.leader.store, ps.s);
  auto follower_then = slot_rows(*ps.follower, ps.s);
  auto then = from.last();
  auto pos = from.open_copy(7);
  REQUIRE(pos);
  CHECK(*pos == then);
  // Written after the copy was opened: not in it.
  REQUIRE(ps.leader.commit(
      write_batch{{mut::put_cursor{ps.p.queue, ps.p.id, "g", at(9)}}}));
  std::string next;
  std::uint32_t i = 0;
  for (;; ++i) {
    auto r = from.read_copy(7, next, 64);
    REQUIRE(r);
    // The same piece when read again.
    CHECK(from.read_copy(7, next, 64)->data == r->data);
    cl::writes w;
    w.stage = cl::make_piece(7, *pos, i, r->last, r->data);
    if (r->last) {
      CHECK(rows_diff(follower_then, slot_rows(*ps.follower, ps.s)) == "");
      CHECK(staged_rows(*ps.follower) > 0);
      w.install = *pos;
    }
    REQUIRE(to.write(w) == cl::write_result::ok);
    if (r->last)
      break;
    next = r->next;
  }
  from.close_copy(7);
  CHECK_FALSE(from.read_copy(7, "", 64)); // closed
  CHECK(to.last() == then);
  CHECK(rows_diff(leader_then, slot_rows(*ps.follower, ps.s)) == "");
}

TEST_CASE("open copies are bounded node-wide, a growth of the map ends them, "
          "and a restart drops what a follower staged",
          "[replica][slot_port][snapshot]") {
  pair_of_stores ps;
  core::slot_port one{ps.leader.store->db(), ps.s, 1};
  core::slot_port other{ps.leader.store->db(), static_cast<slot_t>(ps.s + 1),
                        1};
  REQUIRE(one.open_copy(1));
  CHECK_FALSE(other.open_copy(1)); // the node's bound, every slot's
  CHECK_FALSE(other.take_error());
  REQUIRE(ps.leader.store->db().grow());
  CHECK_FALSE(one.read_copy(1, "", 64)); // ended: open another
  CHECK(ps.leader.store->db().held_count() == 0);
  REQUIRE(one.open_copy(3));
  CHECK(one.read_copy(3, "", 64));
  one.close_copy(3);

  auto to = ps.follower_port();
  copy_in_pieces(one, to, 64, false);
  CHECK(staged_rows(*ps.follower) > 0);
  ps.follower.reset();
  ps.follower = fresh_like(*ps.leader.store, ps.follower_dir); // reopened
  CHECK(staged_rows(*ps.follower) == 0);
}

TEST_CASE("a truncation below what the slot log keeps fails through the port "
          "and changes nothing",
          "[replica][slot_port]") {
  pair_of_stores ps(log_window{3, std::uint64_t{1} << 30});
  auto port = ps.leader_port();
  auto before = slot_rows(*ps.leader.store, ps.s);
  cl::writes w;
  w.hard = cl::hard_state{7, std::nullopt, false};
  w.truncate_after = 1;
  CHECK(port.write(w) == cl::write_result::failed);
  REQUIRE(port.take_error());
  CHECK_FALSE(port.take_error());
  CHECK(port.hard().epoch == 0); // all or nothing: the hard state too
  CHECK(rows_diff(before, slot_rows(*ps.leader.store, ps.s)) == "");
}

TEST_CASE("the hard state written through the slot port survives a restart",
          "[replica][slot_port]") {
  store_fixture fx;
  auto p = fx.make_partition();
  auto s = slot_of_id(p.queue.value);
  {
    core::slot_port port{fx.store->db(), s};
    CHECK(port.hard() == cl::hard_state{});
    cl::writes w;
    w.hard = cl::hard_state{5, cl::node_id{2}, true};
    REQUIRE(port.write(w) == cl::write_result::ok);
  }
  fx.reopen();
  core::slot_port port{fx.store->db(), s};
  CHECK(port.hard() == cl::hard_state{5, cl::node_id{2}, true});
}

TEST_CASE("an epoch_start entry goes through the slot port with no mutation "
          "and an empty payload",
          "[replica][slot_port]") {
  pair_of_stores ps;
  auto port = ps.leader_port();
  auto next = port.last().seq + 1;
  cl::writes w;
  w.append.push_back(cl::make_entry(3, next, cl::entry_kind::epoch_start, {}));
  REQUIRE(port.write(w) == cl::write_result::ok);
  CHECK(port.last() == cl::log_pos{3, next});
  auto got = port.read(next, 1, 1 << 20);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == w.append[0]);
}

TEST_CASE("a growth refused at the map's bound ends no open copy",
          "[replica][slot_port][snapshot]") {
  store_fixture fx;
  fx.store.reset();
  fx.opts.env.max_map_bytes = fx.opts.env.initial_map_bytes;
  fx.open();
  auto p = fx.make_partition();
  core::slot_port port{fx.store->db(), slot_of_id(p.queue.value)};
  REQUIRE(port.open_copy(1));
  auto grown = fx.store->db().grow();
  REQUIRE_FALSE(grown);
  CHECK(grown.err().code == ec::storage_full);
  CHECK(fx.store->db().held_count() == 1);
  CHECK(port.read_copy(1, "", 1 << 20));
}
