// System tests of the real spoold binary.

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include "system/process.hpp"
#include "unit/storage/fixture.hpp"

using namespace std::chrono_literals;
using namespace spool::test;
namespace st = spool::storage;

TEST_CASE("spoold recovers the store, logs it, and exits 0 on SIGTERM",
          "[system][spoold]") {
  temp_dir dir;
  auto data = (dir.path / "data").string();
  {
    // A store with one queue, one partition and five messages.
    st::store_options opts;
    opts.env.dir = data;
    auto s = st::store::open(opts);
    REQUIRE(s);
    st::queue_record q;
    q.name = "orders";
    q.id = (*s)->next_queue_id(q.name);
    st::partition_record p;
    p.queue = q.id;
    p.id = (*s)->next_partition_id(q.id);
    p.name = "eu";
    p.uuid = (*s)->make_partition_uuid(q.id, p.id);
    REQUIRE((*s)->writer()
                .submit(st::write_batch{
                    {st::mut::create_queue{q}, st::mut::create_partition{p}}})
                .get());
    st::partition_log log{p};
    st::segment_encoder enc;
    auto t = (*s)->db().read();
    auto sealed = log.seal(*t, msgs(5), 1'000'000, enc);
    t->abort();
    REQUIRE(sealed);
    REQUIRE((*s)->writer().submit(st::write_batch{sealed->mutations}).get());
  }
  child_process spoold{SPOOLD_PATH,
                       {"--data-dir", data, "--initial-map-mib", "16",
                        "--http-address", "127.0.0.1", "--http-port", "0",
                        "--msgpack-address", "127.0.0.1", "--msgpack-port",
                        "0"}};
  REQUIRE(spoold.started());
  REQUIRE(spoold.wait_for_output("; ready", 10s));
  CHECK_THAT(spoold.output(),
             Catch::Contains("recovered 1 queue(s), 1 partition(s)"));
  CHECK_THAT(spoold.output(), Catch::Contains("partition 'eu'"));
  CHECK_THAT(spoold.output(), Catch::Contains("lastOffset 4, watermark 0"));
  CHECK_THAT(spoold.output(),
             Catch::Contains("broker running: 1 queue(s) recovered as actors"));
  spoold.signal(SIGTERM);
  auto code = spoold.wait_exit(10s);
  INFO(spoold.output());
  REQUIRE(code);
  CHECK(*code == 0);
  CHECK_THAT(spoold.output(), Catch::Contains("store closed"));
  // The store is intact and closed: it opens again with the same contents.
  st::store_options opts;
  opts.env.dir = data;
  auto again = st::store::open(opts);
  REQUIRE(again);
  CHECK((*again)->recovered().partitions.at(0).next_offset == st::offset{5});
}

TEST_CASE("spoold refuses a bad option with a message and exit code 2",
          "[system][spoold][bad-input]") {
  child_process spoold{SPOOLD_PATH, {"--durability", "maybe"}};
  REQUIRE(spoold.started());
  auto code = spoold.wait_exit(10s);
  REQUIRE(code);
  CHECK(*code == 2);
  CHECK_THAT(spoold.output(),
             Catch::Contains("durability must be strict or relaxed"));
}

TEST_CASE("spoold in cluster mode refuses a secret file it cannot read, "
          "and a relaxed cluster with exit code 2",
          "[system][spoold][bad-input][cluster]") {
  std::vector<std::string> cluster
      = {"--node-id",
         "n1",
         "--peers",
         "n1=127.0.0.1:17001,n2=127.0.0.1:17002,n3=127.0.0.1:17003",
         "--cluster-secret-file",
         "/nonexistent/secret"};
  child_process spoold{SPOOLD_PATH, cluster};
  REQUIRE(spoold.started());
  auto code = spoold.wait_exit(10s);
  REQUIRE(code);
  CHECK(*code == 2);
  CHECK_THAT(spoold.output(),
             Catch::Contains("cluster-secret-file /nonexistent/secret: cannot "
                             "be read"));
  cluster.insert(cluster.end(), {"--durability", "relaxed"});
  child_process relaxed{SPOOLD_PATH, cluster};
  REQUIRE(relaxed.started());
  code = relaxed.wait_exit(10s);
  REQUIRE(code);
  CHECK(*code == 2);
  CHECK_THAT(relaxed.output(),
             Catch::Contains("durability relaxed is refused with peers"));
}

TEST_CASE("spoold --version prints its version, and an option error is the "
          "error and one line pointing to --help",
          "[system][spoold][bad-input]") {
  child_process version{SPOOLD_PATH, {"--version"}};
  REQUIRE(version.started());
  auto code = version.wait_exit(10s);
  REQUIRE(code);
  CHECK(*code == 0);
  CHECK(version.output() == "spoold " SPOOL_VERSION " (protocol 1)\n");
  for (auto args : {std::vector<std::string>{"--http-port"},
                    std::vector<std::string>{"--bogus", "1"},
                    std::vector<std::string>{"--bogus"},
                    std::vector<std::string>{"--http-port", "70000"}}) {
    child_process bad{SPOOLD_PATH, args};
    REQUIRE(bad.started());
    code = bad.wait_exit(10s);
    REQUIRE(code);
    CHECK(*code == 2);
    auto& out = bad.output();
    CHECK(std::count(out.begin(), out.end(), '\n') == 2);
    CHECK_THAT(out, Catch::StartsWith("spoold: "));
    CHECK_THAT(out, Catch::EndsWith("Run spoold --help for the options.\n"));
  }
}

TEST_CASE("spoold fails cleanly when its data folder cannot be created",
          "[system][spoold][bad-input]") {
  temp_dir dir;
  auto file = dir.path / "a-file";
  { std::ofstream{file} << "x"; }
  child_process spoold{SPOOLD_PATH, {"--data-dir", (file / "sub").string()}};
  REQUIRE(spoold.started());
  auto code = spoold.wait_exit(10s);
  REQUIRE(code);
  CHECK(*code == 1);
  CHECK_THAT(spoold.output(), Catch::Contains("cannot open the store"));
}

TEST_CASE("a second spoold on the same data directory refuses to start",
          "[system][spoold][lock]") {
  temp_dir dir;
  auto data = (dir.path / "data").string();
  child_process first{SPOOLD_PATH,
                      {"--data-dir", data, "--initial-map-mib", "16",
                       "--http-address", "127.0.0.1", "--http-port", "0",
                       "--msgpack-address", "127.0.0.1", "--msgpack-port",
                       "0"}};
  REQUIRE(first.started());
  REQUIRE(first.wait_for_output("; ready", 10s));
  child_process second{SPOOLD_PATH,
                       {"--data-dir", data, "--initial-map-mib", "16",
                        "--http-address", "127.0.0.1", "--http-port", "0",
                        "--msgpack-address", "127.0.0.1", "--msgpack-port",
                        "0"}};
  REQUIRE(second.started());
  auto code = second.wait_exit(10s);
  INFO(second.output());
  REQUIRE(code);
  CHECK(*code == 1);
  CHECK_THAT(second.output(), Catch::Contains("is in use by another process"));
  // The first one is untouched and still stops cleanly.
  first.signal(SIGTERM);
  auto first_code = first.wait_exit(10s);
  REQUIRE(first_code);
  CHECK(*first_code == 0);
}
