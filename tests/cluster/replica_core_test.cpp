// One replica's rules, step by step (docs/cluster.md, "Protocol"), over the
// simulation's disk: what each input writes, sends and commits.

#include <catch2/catch.hpp>

#include "replica_harness.hpp"

using namespace spool::cluster;
using namespace spool::cluster::test;
using spool::cluster::sim::sim_disk;

TEST_CASE("a fence is answered only once its epoch is written and synced, "
          "with the replica's log end",
          "[cluster][replica]") {
  replica r(n2);
  r.write(1, {"a", "b"});
  auto out = r.core.on_message({n1, n2, fence_req{4, std::nullopt}}, 1);
  REQUIRE(out.write.hard);
  CHECK(out.write.hard->epoch == 4);
  CHECK_FALSE(out.write.hard->leader);
  CHECK(out.send.empty()); // nothing leaves before the sync
  auto* rep = sent<fence_rep>(out.after_sync, n1);
  REQUIRE(rep);
  CHECK(rep->granted);
  CHECK(rep->log_end == log_pos{1, 2});
}

TEST_CASE("a replica grants an epoch once: a second fence for it is refused",
          "[cluster][replica]") {
  replica r(n2);
  r.in(n1, fence_req{3, std::nullopt});
  auto out = r.in(n3, fence_req{3, std::nullopt});
  auto* rep = sent<fence_rep>(out.send, n3);
  REQUIRE(rep);
  CHECK_FALSE(rep->granted);
  CHECK(rep->epoch == 3);
  CHECK(r.disk.hard().epoch == 3);
}

TEST_CASE("a fenced replica takes no entry from the deposed leader's epoch",
          "[cluster][replica]") {
  replica r(n2);
  r.in(n1, append_req{1, {0, 0}, {make_entry(1, 1, entry_kind::data, "a")}, 0});
  r.in(n3, fence_req{2, std::nullopt});
  auto out = r.in(
      n1, append_req{1, {1, 1}, {make_entry(1, 2, entry_kind::data, "b")}, 1});
  auto* rep = sent<append_rep>(out.send, n1);
  REQUIRE(rep);
  CHECK(rep->refused == refusal::stale_epoch);
  CHECK(rep->epoch == 2);
  CHECK(r.disk.last().seq == 1);
}

TEST_CASE("a follower refuses entries whose previous one does not match, and "
          "hints where its epoch began",
          "[cluster][replica]") {
  replica r(n2);
  r.write(1, {"a", "b", "c"});
  r.in(n1, fence_req{2, std::nullopt});
  auto out = r.in(
      n1, append_req{2, {2, 3}, {make_entry(2, 4, entry_kind::data, "x")}, 0});
  auto* rep = sent<append_rep>(out.after_sync, n1);
  REQUIRE(rep);
  CHECK(rep->refused == refusal::mismatch);
  CHECK(rep->hint == log_pos{1, 1});
  CHECK(rep->asked == 3);
  CHECK(r.disk.last().seq == 3);
}

TEST_CASE("a follower truncates a divergent tail before it takes the leader's "
          "entries, and answers only after the sync",
          "[cluster][replica]") {
  replica r(n2);
  r.write(1, {"a", "b"});
  r.write(2, {"stale"}); // seq 3, from a leader of epoch 2 that lost
  auto out = r.core.on_message(
      {n3, n2,
       append_req{3,
                  {1, 2},
                  {make_entry(3, 3, entry_kind::epoch_start, ""),
                   make_entry(3, 4, entry_kind::data, "d")},
                  0}},
      1);
  REQUIRE(out.write.truncate_after);
  CHECK(*out.write.truncate_after == 2);
  CHECK(out.write.append.size() == 2);
  CHECK(sent<append_rep>(out.send, n3) == nullptr);
  r.run(out);
  auto* rep = sent<append_rep>(out.after_sync, n3);
  REQUIRE(rep);
  CHECK(rep->refused == refusal::none);
  CHECK(rep->match == 4);
  CHECK(r.disk.at(3)->epoch == 3);
  CHECK(r.core.leader() == n3);
}

TEST_CASE("a follower never truncates below its commit point",
          "[cluster][replica]") {
  replica r(n2);
  r.in(n1, append_req{1,
                      {0, 0},
                      {make_entry(1, 1, entry_kind::data, "a"),
                       make_entry(1, 2, entry_kind::data, "b")},
                      2});
  CHECK(r.core.commit() == 2);
  auto out = r.in(
      n3, append_req{2, {1, 1}, {make_entry(2, 2, entry_kind::data, "x")}, 0});
  CHECK_FALSE(out.write.truncate_after);
  CHECK(r.disk.hard().damaged);
  CHECK(r.disk.at(2)->payload == "b");
}

TEST_CASE("a bad checksum marks the follower damaged: it refuses entries until "
          "a snapshot, and votes as damaged",
          "[cluster][replica]") {
  replica r(n2);
  auto e = make_entry(1, 1, entry_kind::data, "a");
  e.payload = "rotted";
  auto out = r.in(n1, append_req{1, {0, 0}, {e}, 0});
  CHECK(r.disk.hard().damaged);
  CHECK(r.disk.last().seq == 0);
  auto* rep = sent<append_rep>(out.after_sync, n1);
  REQUIRE(rep);
  CHECK(rep->refused == refusal::damaged);
  out = r.in(
      n1, append_req{1, {0, 0}, {make_entry(1, 1, entry_kind::data, "a")}, 0});
  CHECK(sent<append_rep>(out.after_sync, n1)->refused == refusal::damaged);
  out = r.in(n3, fence_req{2, std::nullopt});
  CHECK(sent<fence_rep>(out.after_sync, n3)->damaged);
  sim_disk leader(1000);
  writes w;
  w.append = {make_entry(1, 1, entry_kind::data, "a"),
              make_entry(1, 2, entry_kind::data, "b")};
  leader.write(w);
  out = r.in(n3, snapshot_req{2, one_piece(leader), 2});
  CHECK_FALSE(r.disk.hard().damaged);
  CHECK(r.disk.last() == log_pos{1, 2});
  CHECK(sent<append_rep>(out.after_sync, n3)->match == 2);
}

TEST_CASE("a follower whose disk is full refuses entries and says so",
          "[cluster][replica]") {
  replica r(n2);
  r.disk.full = true;
  auto out = r.core.on_message(
      {n1, n2,
       append_req{1, {0, 0}, {make_entry(1, 1, entry_kind::data, "a")}, 0}},
      1);
  REQUIRE(r.disk.write(out.write) == write_result::disk_full);
  out = r.core.write_failed(write_result::disk_full, 1);
  auto* rep = sent<append_rep>(out.send, n1);
  REQUIRE(rep);
  CHECK(rep->refused == refusal::disk_full);
  CHECK(r.disk.last().seq == 0);
}

TEST_CASE("a new leader writes its epoch and an epoch_start entry, and serves "
          "once a majority synced that entry",
          "[cluster][replica][leader]") {
  replica r(n1);
  r.write(1, {"a"});
  r.make_leader(2);
  CHECK(r.core.current_role() == role::leader);
  CHECK(r.disk.hard() == hard_state{2, n1, false});
  CHECK(r.disk.at(2)->kind == entry_kind::epoch_start);
  CHECK(r.core.write_epoch() == 2u);
  r.run(r.core.synced(2, 1));
  CHECK_FALSE(r.core.serving());
  CHECK(r.core.commit() == 0);
  auto out = r.in(n2, append_rep{2, refusal::none, 2, {}});
  CHECK(out.committed == 2u);
  CHECK(r.core.serving());
}

TEST_CASE("a leader commits an older epoch's entry only under one of its own "
          "epoch",
          "[cluster][replica][leader]") {
  replica r(n1);
  r.write(1, {"a", "b"});
  r.make_leader(3);
  r.run(r.core.synced(3, 1));
  // n2 has seq 2 (epoch 1) but not yet the epoch_start at seq 3: a majority
  // holds seq 2, which commits nothing while it is epoch 1's.
  auto out = r.in(n2, append_rep{3, refusal::none, 2, {}});
  CHECK_FALSE(out.committed);
  CHECK(r.core.commit() == 0);
  out = r.in(n2, append_rep{3, refusal::none, 3, {}});
  CHECK(out.committed == 3u);
}

TEST_CASE("a leader counts no acknowledgement sent in an older epoch",
          "[cluster][replica][leader]") {
  replica r(n1);
  r.make_leader(2);
  r.run(r.core.synced(1, 1));
  auto out = r.in(n2, append_rep{1, refusal::none, 1, {}});
  CHECK_FALSE(out.committed);
  CHECK(r.core.peers().at(n2).match == 0);
}

TEST_CASE("a leader that hears of a newer epoch steps down and keeps its "
          "promise",
          "[cluster][replica][leader]") {
  replica r(n1);
  r.make_leader(2);
  auto out = r.in(n2, append_rep{5, refusal::stale_epoch, 0, {}});
  CHECK(r.core.current_role() != role::leader);
  CHECK_FALSE(r.core.write_epoch());
  CHECK(r.disk.hard().epoch == 5);
  bool deposed = false;
  for (auto& n : out.notices)
    deposed |= n.kind == notice_kind::deposed;
  CHECK(deposed);
}

TEST_CASE("a leader back from a restart never leads its old epoch again: it "
          "asks for an election that expects that epoch",
          "[cluster][replica][restart]") {
  sim_disk disk(1000);
  writes w;
  w.hard = hard_state{4, n1, false};
  disk.write(w);
  replica_core core(replica::config(n1), disk);
  auto out = core.start(0);
  CHECK(core.current_role() == role::fenced);
  CHECK_FALSE(core.write_epoch());
  REQUIRE(out.notices.size() == 1);
  CHECK(out.notices[0].kind == notice_kind::restart_election);
  CHECK(out.notices[0].epoch == 4);
}

TEST_CASE("a restarted leader's fence moves no replica that follows another "
          "leader or a newer epoch",
          "[cluster][replica][restart]") {
  replica follows_n1(n2);
  follows_n1.in(n1, append_req{4, {0, 0}, {}, 0});
  auto out = follows_n1.in(n1, fence_req{5, 4});
  CHECK(sent<fence_rep>(out.after_sync, n1)->granted);

  replica follows_n3(n2);
  follows_n3.in(n3, append_req{4, {0, 0}, {}, 0});
  out = follows_n3.in(n1, fence_req{5, 4});
  auto* no = sent<fence_rep>(out.send, n1);
  REQUIRE(no);
  CHECK_FALSE(no->granted);
  CHECK(no->leader == n3);
}

TEST_CASE("a new leader sends nothing of its epoch before its office is "
          "synced, so a crash before that leaves no trace of the reign",
          "[cluster][replica][leader]") {
  replica r(n1);
  r.in(n3, fence_req{2, std::nullopt});
  auto out = r.core.on_message({n3, n1, lead_req{2}}, 1);
  CHECK(out.send.empty());
  CHECK(out.after_sync.empty());
  REQUIRE(r.disk.write(out.write) == write_result::ok);
  out = r.core.local_appended(2);
  CHECK(out.send.empty());
  out = r.core.synced(r.disk.last().seq, 3);
  CHECK(sent<append_req>(out.send, n2));
  CHECK(sent<append_req>(out.send, n3));
}

TEST_CASE("a follower never installs a snapshot older than its log, damaged "
          "or not",
          "[cluster][replica]") {
  replica r(n2);
  r.in(n1, append_req{1,
                      {0, 0},
                      {make_entry(1, 1, entry_kind::data, "a"),
                       make_entry(1, 2, entry_kind::data, "b"),
                       make_entry(1, 3, entry_kind::data, "c")},
                      0});
  sim_disk older(1000);
  writes w;
  w.append = {make_entry(1, 1, entry_kind::data, "a")};
  older.write(w);
  auto snap = one_piece(older);
  r.disk.fail_next = true;
  auto out = r.core.on_message(
      {n1, n2,
       append_req{1, {1, 3}, {make_entry(1, 4, entry_kind::data, "d")}, 0}},
      1);
  REQUIRE(r.disk.write(out.write) == write_result::failed);
  r.run(r.core.write_failed(write_result::failed, 1));
  REQUIRE(r.disk.hard().damaged);
  out = r.in(n1, snapshot_req{1, snap, 0});
  CHECK(out.write.empty());
  CHECK(r.disk.last() == log_pos{1, 3});
  CHECK(r.disk.hard().damaged);
}

TEST_CASE("a snapshot whose checksum does not match is refused and the "
          "follower turns damaged",
          "[cluster][replica]") {
  replica r(n2);
  sim_disk leader(1000);
  writes w;
  w.append = {make_entry(1, 1, entry_kind::data, "a")};
  leader.write(w);
  auto snap = one_piece(leader);
  snap.data += "!";
  auto out = r.in(n1, snapshot_req{1, snap, 1});
  CHECK(r.disk.last().seq == 0);
  CHECK(r.disk.hard().damaged);
  CHECK(sent<append_rep>(out.after_sync, n1)->refused == refusal::damaged);
}

TEST_CASE("a leader whose step-down write fails is still told it no longer "
          "leads, and memory follows the disk",
          "[cluster][replica][leader]") {
  replica r(n1);
  r.make_leader(2);
  r.disk.full = true;
  auto out = r.core.on_message(
      {n2, n1, append_rep{5, refusal::stale_epoch, 0, {}}}, 1);
  REQUIRE(r.disk.write(out.write) == write_result::disk_full);
  out = r.core.write_failed(write_result::disk_full, 1);
  CHECK(r.core.current_role() != role::leader);
  bool deposed = false;
  for (auto& n : out.notices)
    deposed |= n.kind == notice_kind::deposed;
  CHECK(deposed);
  CHECK(r.disk.hard().epoch == 2);
}

TEST_CASE("a fence whose write fails leaves the replica undamaged and "
          "unanswered",
          "[cluster][replica]") {
  replica r(n2);
  r.disk.fail_next = true;
  auto out = r.core.on_message({n3, n2, fence_req{4, std::nullopt}}, 1);
  REQUIRE(r.disk.write(out.write) == write_result::failed);
  out = r.run(r.core.write_failed(write_result::failed, 1));
  CHECK_FALSE(r.disk.hard().damaged);
  CHECK(r.disk.hard().epoch == 0);
  CHECK(out.send.empty());
  CHECK(out.after_sync.empty());
}

TEST_CASE("a follower whose disk refuses a newer leader's entries answers that "
          "leader in its epoch, and a leader whose epoch_start fails to be "
          "written is not damaged",
          "[cluster][replica]") {
  replica f(n2);
  f.in(n1, append_req{1, {0, 0}, {}, 0});
  f.disk.full = true;
  auto out = f.core.on_message(
      {n3, n2,
       append_req{4, {0, 0}, {make_entry(4, 1, entry_kind::data, "a")}, 0}},
      1);
  REQUIRE(f.disk.write(out.write) == write_result::disk_full);
  out = f.core.write_failed(write_result::disk_full, 1);
  auto* rep = sent<append_rep>(out.send, n3);
  REQUIRE(rep);
  CHECK(rep->epoch == 4);
  CHECK(rep->refused == refusal::disk_full);
  CHECK(sent<append_rep>(out.send, n1) == nullptr);

  replica l(n1);
  l.in(n2, append_req{1, {0, 0}, {}, 0}); // it followed n2 once
  l.in(n3, fence_req{2, std::nullopt});
  l.disk.fail_next = true;
  out = l.core.on_message({n3, n1, lead_req{2}}, 1);
  REQUIRE(l.disk.write(out.write) == write_result::failed);
  out = l.run(l.core.write_failed(write_result::failed, 1));
  CHECK_FALSE(l.disk.hard().damaged);
  CHECK(out.send.empty());
  CHECK(l.core.current_role() != role::leader);
}
