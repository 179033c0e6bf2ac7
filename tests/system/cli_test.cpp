// The `spool` CLI against the real spoold: the product document's five
// recipes (replay-and-subscription-modes.md, "Practical recipes") through
// its commands, with their output and exit codes checked; a big NDJSON
// push; the exit codes of docs/cli.md.

#include <catch2/catch.hpp>

#include "system/cli_fixture.hpp"
#include "system/mp_fixture.hpp"
#include "vocab/options.hpp"

namespace spool::test {

namespace {

/// Runs `spool <args>` against `srv` (stdin from `input`), its stdout and
/// exit code.
cli_result spool(spoold_server& srv, const std::string& args,
                 const std::string& input = "") {
  temp_dir d;
  auto in = d.path / "stdin";
  {
    std::ofstream f{in};
    f << input;
  }
  return run_cli(mp_address(srv), args, in.string(), false);
}

/// Offsets a group's pop answers (JSON), all of them acked.
std::vector<std::int64_t> consume(spoold_server& srv, const std::string& q,
                                  const std::string& group,
                                  const std::string& extra = "") {
  auto r = spool(srv, "--json pop " + q + " -g " + group + " -n 100 " + extra);
  REQUIRE(r.code == 0);
  std::vector<std::int64_t> offsets;
  auto j = r.j();
  if (j["messages"].empty())
    return offsets;
  std::string txids;
  for (auto& m : j["messages"]) {
    offsets.push_back(m["offset"]);
    txids += " " + m["transactionId"].get<std::string>();
  }
  auto pid = j["messages"][0]["partitionId"].get<std::string>();
  auto acked = spool(srv, "ack " + pid + txids + " -g " + group + " --lease "
                              + j["leaseId"].get<std::string>());
  REQUIRE(acked.code == 0);
  return offsets;
}

using offsets = std::vector<std::int64_t>;

} // namespace

TEST_CASE("recipe: reprocess the last hour for one group with spool seek "
          "--by 1h, other groups keep their positions",
          "[system][cli][recipe]") {
  spoold_server srv;
  REQUIRE(spool(srv, "push q 1 2 3").code == 0);
  CHECK(consume(srv, "q", "a") == offsets{0, 1, 2});
  CHECK(consume(srv, "q", "b") == offsets{0, 1, 2});
  auto dry = spool(srv, "seek a q --by 1h --dry-run");
  CHECK(dry.code == 0);
  CHECK_THAT(dry.out, Catch::Contains("PARTITION  COMMITTED BEFORE      AFTER\n"
                                      "Default    2                 ->  -\n"
                                      "dry run: nothing moved"));
  CHECK(consume(srv, "q", "a").empty()); // the dry run moved nothing
  auto moved = spool(srv, "--json seek a q --by 1h");
  REQUIRE(moved.code == 0);
  CHECK(moved.j()["positions"][0]["before"] == 2);
  CHECK(moved.j()["positions"][0]["after"] == -1);
  CHECK(consume(srv, "q", "a") == offsets{0, 1, 2});
  CHECK(consume(srv, "q", "b").empty());
}

TEST_CASE("recipe: skip a backlog with spool seek --to-end",
          "[system][cli][recipe]") {
  spoold_server srv;
  REQUIRE(spool(srv, "push q 1 2 3 4 5").code == 0);
  REQUIRE(spool(srv, "seek g q --to-end").code == 0);
  CHECK(consume(srv, "q", "g").empty());
  REQUIRE(spool(srv, "push q 6").code == 0);
  CHECK(consume(srv, "q", "g") == offsets{5});
}

TEST_CASE("recipe: a new consumer that must not see history pops with "
          "--mode new",
          "[system][cli][recipe]") {
  spoold_server srv;
  REQUIRE(spool(srv, "push q 1 2 3").code == 0);
  CHECK(consume(srv, "q", "fresh", "--mode new").empty());
  REQUIRE(spool(srv, "push q 4").code == 0);
  CHECK(consume(srv, "q", "fresh") == offsets{3});
}

TEST_CASE("recipe: re-run a pipeline from scratch as a new group with "
          "--mode all, the old group is not disturbed",
          "[system][cli][recipe]") {
  spoold_server srv;
  REQUIRE(spool(srv, "push q 1 2 3").code == 0);
  CHECK(consume(srv, "q", "old") == offsets{0, 1, 2});
  CHECK(consume(srv, "q", "rerun", "--mode all") == offsets{0, 1, 2});
  auto old = spool(srv, "--json groups describe old");
  REQUIRE(old.code == 0);
  CHECK(old.j()[0]["committed"] == 2);
  CHECK(old.j()[0]["lag"] == 0);
  auto human = spool(srv, "groups describe old");
  CHECK_THAT(human.out, Catch::StartsWith("QUEUE  PARTITION  COMMITTED  LAST  "
                                          "LAG  LEASE\nq      Default    2"));
}

TEST_CASE("recipe: give up on a stuck batch by seeking, the lease is "
          "released at once",
          "[system][cli][recipe]") {
  spoold_server srv;
  REQUIRE(spool(srv, "push q 1 2 3").code == 0);
  auto stuck = spool(srv, "--json pop q -g g -n 2");
  REQUIRE(stuck.code == 0);
  REQUIRE(stuck.j()["messages"].size() == 2);
  auto held = spool(srv, "--json pop q -g g");
  CHECK(held.j()["empty"] == "lease_held");
  auto leased = spool(srv, "--json groups describe g");
  CHECK(!leased.j()[0]["lease"].is_null());
  REQUIRE(spool(srv, "seek g q --offset 0").code == 0);
  auto free = spool(srv, "--json groups describe g");
  CHECK(free.j()[0]["lease"].is_null());
  CHECK(consume(srv, "q", "g") == offsets{0, 1, 2});
}

TEST_CASE("spool push reads NDJSON from stdin in batches, exit codes say "
          "what went wrong",
          "[system][cli]") {
  spoold_server srv;
  std::string lines;
  for (int i = 0; i < 5000; ++i)
    lines += "{\"n\":" + std::to_string(i) + "}\n";
  auto pushed = spool(srv, "--json push big --batch 1000", lines);
  REQUIRE(pushed.code == 0);
  CHECK(pushed.j()["pushed"] == 5000);
  auto env = spool(
      srv, "--json push q --envelope",
      R"({"payload":{"x":1},"partition":"p1","transactionId":"t1","headers":{"k":"v"}})"
      "\n");
  REQUIRE(env.code == 0);
  auto b = spool(srv, "--json browse q -p p1");
  CHECK(b.j()["messages"][0]["transactionId"] == "t1");
  CHECK(b.j()["messages"][0]["headers"]["k"] == "v");
  CHECK(b.j()["messages"][0]["data"] == json{{"x", 1}});
  CHECK(spool(srv, "queues describe nope").code == 3); // not found
  CHECK(spool(srv, "push q 'not json'").code == 2);    // usage
  CHECK(spool(srv, "push 'a/b' 1").code == 4);         // refused
  CHECK(spool(srv, "seek g q").code == 2);             // no target
  CHECK(spool(srv, "frobnicate").code == 2);           // unknown command
  auto bad_ack = spool(srv, "ack nope tx");            // an item fails
  CHECK(bad_ack.code == 7);
  auto t = spool(srv, "--json tail big -g t --count 3");
  REQUIRE(t.code == 0);
  CHECK(t.out.find("\"offset\":2") != std::string::npos);
}

namespace {

/// Runs `spool <args>` with SPOOL_SERVER=`server` and no input: its exit
/// code, its stdout and stderr together, and how long it took.
cli_result spool_at(const std::string& server, const std::string& args) {
  return run_cli(server, args, "/dev/null", true);
}

} // namespace

TEST_CASE("spool gives up on a server nobody listens at at once, and says to "
          "check spoold and the msgpack port",
          "[system][cli]") {
  std::string server;
  {
    spoold_server srv;
    server = mp_address(srv);
    srv.kill9();
  }
  // The default deadline is 30 s; a refused connection ends it at once.
  auto r = spool_at(server, "queues list");
  CHECK(r.code == 5);
  CHECK(r.took < 5s);
  CHECK_THAT(r.out, Catch::Contains("cannot connect to " + server));
  CHECK_THAT(r.out, Catch::Contains("hint: is spoold running at " + server));
  CHECK_THAT(r.out, Catch::Contains("msgpack door (port 6690 by default), "
                                    "not the HTTP door (6632)"));
  // tail too: a server never reached is not a restart to wait out.
  r = spool_at(server, "tail orders -g g");
  CHECK(r.code == 5);
  CHECK(r.took < 5s);
  CHECK_THAT(r.out, Catch::Contains("hint: is spoold running at " + server));
}

TEST_CASE("spool pointed at the HTTP port says it is an HTTP port and exits 5 "
          "at once",
          "[system][cli]") {
  spoold_server srv;
  auto server = "127.0.0.1:" + std::to_string(srv.port());
  auto r = spool_at(server, "queues list");
  CHECK(r.code == 5);
  CHECK(r.took < 5s);
  CHECK_THAT(r.out, Catch::Contains("the server at " + server
                                    + " answered in HTTP: that is an HTTP "
                                      "port, not a msgpack door"));
  CHECK_THAT(r.out, Catch::Contains("hint: is spoold running at"));
}

TEST_CASE("spool refused by a busy server says so without the hint of a "
          "wrong address",
          "[system][cli]") {
  spoold_server srv{{"--msgpack-max-connections", "1"}};
  mp_conn holder{srv.mp_port()}; // the one connection, greeted
  auto server = mp_address(srv);
  auto r = spool_at(server, "queues list");
  CHECK(r.code == 5);
  CHECK(r.took < 5s);
  CHECK_THAT(r.out, Catch::Contains("Server busy: too many connections"));
  CHECK(r.out.find("hint:") == std::string::npos);
}

TEST_CASE("spool names an unknown command, the nearest one and the valid "
          "ones, and exits 2",
          "[system][cli][bad-input]") {
  auto none = "127.0.0.1:1"; // nothing is sent
  auto r = spool_at(none, "pusj orders 1");
  CHECK(r.code == 2);
  CHECK_THAT(r.out,
             Catch::Contains("error: unknown command 'pusj' (did you mean "
                             "push?)"));
  CHECK_THAT(r.out, Catch::Contains("the commands of spool: push, pop, ack, "
                                    "tail, browse, seek, subscription, "
                                    "groups, queues, dlq"));
  r = spool_at(none, "queue list");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("unknown command 'queue' (did you mean "
                                    "queues?)"));
  r = spool_at(none, "--json -s 127.0.0.1:2 groups descibe audit");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("unknown command 'descibe' of spool "
                                    "groups (did you mean describe?)"));
  CHECK_THAT(r.out, Catch::Contains("the commands of spool groups: list, "
                                    "describe, delete"));
  // Options before the command, with their values in every form.
  r = spool_at(none, "-s127.0.0.1:2 --timeout=1s --json groups descibe");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("unknown command 'descibe' of spool "
                                    "groups"));
  r = spool_at(none, "--server"); // CLI11's own: the value is missing
  CHECK(r.code == 2);
  CHECK(r.out.find("unknown command") == std::string::npos);
  CHECK(r.out.find("needs a command") == std::string::npos);
  r = spool_at(none, "groups");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("spool groups needs a command: list, "
                                    "describe, delete"));
  r = spool_at(none, "--version");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("spool " SPOOL_VERSION " (protocol 1)"));
}

TEST_CASE("spool refuses a pop mode or a time it cannot read before sending, "
          "with the accepted forms, exit 2",
          "[system][cli][bad-input]") {
  spoold_server srv;
  auto server = mp_address(srv);
  auto r = spool_at(server, "pop orders -g g --mode newest");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--mode takes all or new, got 'newest'"));
  r = spool_at(server, "tail orders -g g --from yesterday --count 1");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--from takes now, or an RFC 3339 time "
                                    "such as 2026-12-01T08:00:00Z"));
  CHECK_THAT(r.out, Catch::Contains("got 'yesterday'"));
  r = spool_at(server, "seek g orders --to lastweek");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--to takes now, or an RFC 3339 time"));
  // Nothing reached the server: neither the queue nor the group exists.
  CHECK(srv.get("/api/v1/resources/queues/orders").status == 404);
  CHECK(srv.get("/api/v1/consumer-groups").body_json().empty());
  // What it can read goes through.
  r = spool_at(server, "pop orders -g g --from 2026-12-01T08:00:00Z");
  CHECK(r.code == 0);
  r = spool_at(server, "pop orders -g h --mode new");
  CHECK(r.code == 0);
}

TEST_CASE("spool queues configure names every option in its help and in the "
          "error of an unknown one",
          "[system][cli][bad-input]") {
  auto none = "127.0.0.1:1";
  auto help = spool_at(none, "queues configure --help");
  CHECK(help.code == 0);
  auto bad = spool_at(none, "queues configure q -o retryLimt=3");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.out, Catch::Contains("unknown option retryLimt (did you mean "
                                      "retryLimit?)"));
  for (auto& n : int_option_names) {
    CHECK_THAT(help.out, Catch::Contains(std::string{n.name}));
    CHECK_THAT(bad.out, Catch::Contains(std::string{n.name}));
  }
  for (auto& n : bool_option_names) {
    CHECK_THAT(help.out, Catch::Contains(std::string{n.name}));
    CHECK_THAT(bad.out, Catch::Contains(std::string{n.name}));
  }
  CHECK_THAT(help.out, Catch::Contains("retryBackoffMs"));
}

TEST_CASE("spool exits 5 when no server answers", "[system][cli]") {
  spoold_server srv;
  auto server = mp_address(srv);
  srv.kill9();
  CHECK(spool_at(server, "--timeout 500ms queues list").code == 5);
}

} // namespace spool::test
