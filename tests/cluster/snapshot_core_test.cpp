// Snapshots in pieces (docs/cluster.md, "Snapshots"), step by step over the
// simulation's disk: a leader's copy goes out a few pieces at a time, the
// follower stages them and installs them only with the last one.

#include <catch2/catch.hpp>

#include <deque>
#include <functional>
#include <map>

#include "replica_harness.hpp"

using namespace spool::cluster;
using namespace spool::cluster::test;

namespace {

/// One entry per piece (an entry takes its payload and 33 bytes), two in
/// flight.
replica_config pieced(node_id self) {
  auto c = replica::config(self);
  c.snapshot_piece_bytes = 40;
  c.snapshot_pieces_in_flight = 2;
  return c;
}

/// Replicas and the messages between them, delivered in order.
struct net {
  explicit net(std::map<node_id, replica*> n) : nodes(std::move(n)) {
  }
  std::map<node_id, replica*> nodes;
  std::deque<envelope> flight;
  millis now = 1000;
  /// The pieces sent to each follower, and the highest count it took.
  std::map<node_id, std::vector<std::uint32_t>> pieces;
  std::map<node_id, std::uint32_t> taken;
  std::size_t most_ahead = 0;
  std::size_t restarts_asked = 0;

  void collect(const ready& out) {
    for (auto* list : {&out.send, &out.after_sync})
      for (auto& e : *list) {
        if (!nodes.count(e.to))
          continue;
        if (auto* s = std::get_if<snapshot_req>(&e.msg)) {
          pieces[e.to].push_back(s->piece.index);
          std::size_t ahead = s->piece.index + 1 - taken[e.to];
          most_ahead = std::max(most_ahead, ahead);
        }
        flight.push_back(e);
      }
  }
  /// Delivers what is in flight until nothing is, losing what `drop` picks.
  void pump(std::function<bool(const envelope&)> drop = {}) {
    for (int n = 0; !flight.empty() && n < 10'000; ++n) {
      auto e = flight.front();
      flight.pop_front();
      if (drop && drop(e))
        continue;
      if (auto* r = std::get_if<snapshot_rep>(&e.msg)) {
        taken[e.from] = std::max(taken[e.from], r->taken);
        restarts_asked += r->taken == 0;
      }
      collect(nodes.at(e.to)->in(e.from, e.msg, now));
    }
  }
  void tick(replica& r, millis at) {
    now = at;
    collect(r.run(r.core.tick(at)));
  }
};

/// A leader of epoch 2 over five entries and its epoch start (six pieces).
void lead(replica& l) {
  l.write(1, {"a", "b", "c", "d", "e"});
  l.make_leader(2);
  l.run(l.core.synced(6, 1));
}

/// `f` tells the leader it needs a snapshot.
void needs_snapshot(net& w, replica& l, node_id f) {
  w.collect(l.in(f, append_rep{2, refusal::needs_snapshot, 0, {}}, w.now));
}

void check_same(replica& f, replica& l) {
  CHECK(f.disk.last() == l.disk.last());
  CHECK(f.disk.history() == l.disk.history());
  CHECK_FALSE(f.disk.hard().damaged);
}

} // namespace

TEST_CASE("a snapshot goes in pieces, at most snapshot_pieces_in_flight "
          "ahead of what the follower took, and the follower keeps its log "
          "until it installs them all with the last one",
          "[cluster][replica][snapshot]") {
  replica l(pieced(n1)), f(pieced(n2));
  f.write(1, {"x"}); // its own, older log
  lead(l);
  net w({{n1, &l}, {n2, &f}});
  needs_snapshot(w, l, n2);
  REQUIRE(w.flight.size() == 2);
  // The first piece is staged: its log and its standing are as they were.
  auto first = w.flight.front();
  w.flight.pop_front();
  auto out = f.in(n1, first.msg, w.now);
  CHECK(out.write.stage);
  CHECK_FALSE(out.write.install);
  auto* rep = sent<snapshot_rep>(out.send, n1);
  REQUIRE(rep);
  CHECK(rep->taken == 1);
  CHECK(f.disk.last() == log_pos{1, 1});
  CHECK(f.disk.history().front().payload == "x");
  CHECK_FALSE(f.disk.hard().damaged);
  w.collect(out);
  w.pump();
  check_same(f, l);
  CHECK(w.pieces[n2] == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5});
  CHECK(w.most_ahead <= 2);
  CHECK(l.disk.copies_open() == 0); // closed once installed
  CHECK(l.core.peers().at(n2).match == 6);
}

TEST_CASE("a piece lost on the way is sent again from what the follower "
          "took, after a silence of a quarter of snapshot_idle",
          "[cluster][replica][snapshot]") {
  replica l(pieced(n1)), f(pieced(n2));
  lead(l);
  net w({{n1, &l}, {n2, &f}});
  needs_snapshot(w, l, n2);
  bool lost = false;
  w.pump([&](const envelope& e) {
    auto* s = std::get_if<snapshot_req>(&e.msg);
    if (s && s->piece.index == 2 && !lost)
      return lost = true;
    return false;
  });
  CHECK(f.disk.last().seq == 0); // stalled: piece 3 came before piece 2
  w.tick(l, 3400);
  CHECK(w.flight.empty()); // not yet
  w.tick(l, 3500);
  w.pump();
  check_same(f, l);
  CHECK(l.disk.copies_opened == 1); // the same copy, resumed
}

TEST_CASE("a follower that restarts in the middle of a snapshot asks for "
          "it from the start, and gets it",
          "[cluster][replica][snapshot]") {
  replica l(pieced(n1)), f(pieced(n2));
  lead(l);
  net w({{n1, &l}, {n2, &f}});
  needs_snapshot(w, l, n2);
  // Pieces 0 and 1 staged; their answers wait while it restarts.
  for (int i = 0; i < 2; ++i) {
    auto e = w.flight.front();
    w.flight.pop_front();
    w.collect(f.in(n1, e.msg, w.now));
  }
  f.restart();
  w.pump();
  CHECK(w.restarts_asked > 0);
  check_same(f, l);
}

TEST_CASE("a copy the store ends (a growth of the map) is opened again at "
          "the next retry, and the follower takes the new one from its "
          "start",
          "[cluster][replica][snapshot]") {
  replica l(pieced(n1)), f(pieced(n2));
  lead(l);
  net w({{n1, &l}, {n2, &f}});
  needs_snapshot(w, l, n2);
  l.disk.end_copies();
  w.pump();
  CHECK(f.disk.last().seq == 0);
  w.tick(l, 1600);
  w.pump();
  check_same(f, l);
  CHECK(l.disk.copies_opened == 2);
}

TEST_CASE("a leader keeps to the node's bound on open copies: a second "
          "follower gets its snapshot once the first one's is done",
          "[cluster][replica][snapshot]") {
  replica l(pieced(n1), 1000, 1), f2(pieced(n2)), f3(pieced(n3));
  lead(l);
  net w({{n1, &l}, {n2, &f2}, {n3, &f3}});
  needs_snapshot(w, l, n2);
  needs_snapshot(w, l, n3);
  CHECK(l.disk.copies_open() == 1);
  CHECK(l.disk.copies_refused == 1);
  CHECK(w.pieces[n3].empty());
  w.pump();
  check_same(f2, l);
  CHECK(f3.disk.last().seq == 0);
  w.tick(l, 1600);
  w.pump();
  check_same(f3, l);
  CHECK(l.disk.copies_open() == 0);
}

TEST_CASE("a copy the follower takes nothing of is sent again less and less "
          "often, closed after snapshot_idle, and opened again only as long "
          "after",
          "[cluster][replica][snapshot]") {
  replica l(pieced(n1)), f(pieced(n2));
  lead(l);
  net w({{n1, &l}, {n2, &f}});
  needs_snapshot(w, l, n2);
  auto lose_all = [](const envelope&) { return true; };
  for (millis t = 1500; t < 11'000; t += 100) {
    w.tick(l, t);
    w.pump(lose_all);
  }
  // Two at first, then the same two again at 3.5 s and 8.5 s.
  CHECK(w.pieces[n2].size() == 6);
  CHECK(l.disk.copies_open() == 1);
  w.tick(l, 11'000);
  CHECK(l.disk.copies_open() == 0);
  for (millis t = 11'100; t < 21'000; t += 100) {
    w.tick(l, t);
    w.pump(lose_all);
  }
  CHECK(l.disk.copies_opened == 1);
  w.tick(l, 21'000);
  CHECK(l.disk.copies_opened == 2);
  w.pump();
  check_same(f, l);
}

TEST_CASE("a piece the follower's disk refuses leaves nothing staged of it: "
          "the same piece is taken once the disk has room",
          "[cluster][replica][snapshot]") {
  replica l(pieced(n1)), f(pieced(n2));
  lead(l);
  net w({{n1, &l}, {n2, &f}});
  needs_snapshot(w, l, n2);
  auto p0 = w.flight[0], p1 = w.flight[1];
  w.flight.clear();
  f.in(n1, p0.msg, w.now);
  f.disk.full = true;
  auto out = f.core.on_message({n1, n2, p1.msg}, w.now);
  REQUIRE(f.disk.write(out.write) == write_result::disk_full);
  out = f.core.write_failed(write_result::disk_full, w.now);
  CHECK(sent<append_rep>(out.send, n1)->refused == refusal::disk_full);
  f.disk.full = false;
  out = f.in(n1, p1.msg, w.now);
  REQUIRE(sent<snapshot_rep>(out.send, n1));
  CHECK(sent<snapshot_rep>(out.send, n1)->taken == 2);
  CHECK(out.write.stage);
  w.collect(out);
  w.pump();
  check_same(f, l);
}

TEST_CASE("a slow follower that keeps taking pieces is sent none twice",
          "[cluster][replica][snapshot]") {
  replica l(pieced(n1)), f(pieced(n2));
  lead(l);
  net w({{n1, &l}, {n2, &f}});
  needs_snapshot(w, l, n2);
  // One message through every second, then every 1.4 s: a piece taken
  // every 2 s, then every 2.8 s (past a quarter of snapshot_idle, but at
  // the pace seen).
  for (millis t = 1000; !w.flight.empty() && t < 100'000;
       t += t < 5000 ? 1000 : 1400) {
    w.tick(l, t);
    auto e = w.flight.front();
    w.flight.pop_front();
    w.collect(w.nodes.at(e.to)->in(e.from, e.msg, w.now));
    if (auto* r = std::get_if<snapshot_rep>(&e.msg))
      w.taken[e.from] = std::max(w.taken[e.from], r->taken);
  }
  check_same(f, l);
  CHECK(w.pieces[n2] == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("a leader that steps down closes its copies",
          "[cluster][replica][snapshot]") {
  replica l(pieced(n1)), f(pieced(n2));
  lead(l);
  net w({{n1, &l}, {n2, &f}});
  needs_snapshot(w, l, n2);
  REQUIRE(l.disk.copies_open() == 1);
  l.in(n3, fence_req{3, std::nullopt}, w.now);
  CHECK(l.core.current_role() != role::leader);
  CHECK(l.disk.copies_open() == 0);
}

TEST_CASE("a follower that says it took fewer pieces than before gets the "
          "copy again from there, and takes it up where it was",
          "[cluster][replica][snapshot]") {
  replica l(pieced(n1)), f(pieced(n2));
  lead(l);
  net w({{n1, &l}, {n2, &f}});
  needs_snapshot(w, l, n2);
  for (int i = 0; i < 2; ++i) { // pieces 0 and 1 taken; 2 and 3 sent
    auto e = w.flight.front();
    w.flight.pop_front();
    w.collect(f.in(n1, e.msg, w.now));
  }
  w.pump([](const envelope& e) {
    return std::holds_alternative<snapshot_req>(e.msg); // 2 and 3 lost
  });
  auto id = l.core.peers().at(n2).copy->id;
  w.collect(l.in(n2, snapshot_rep{2, id, 1}, w.now));
  REQUIRE_FALSE(w.flight.empty());
  CHECK(std::get<snapshot_req>(w.flight.front().msg).piece.index == 1);
  w.pump();
  check_same(f, l);
  CHECK(l.disk.copies_opened == 1);
}
