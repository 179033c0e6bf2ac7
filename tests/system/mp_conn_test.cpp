// The msgpack door's connections against the real spoold: pipelining with
// answers out of order, long polls, a client that leaves, broken and
// oversized frames, back-pressure, and a drain.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <set>

#include "system/mp_fixture.hpp"

namespace spool::test {

namespace {

/// The node's pops in flight, from the Prometheus page.
int parked(spoold_server& srv) {
  return static_cast<int>(srv.metric("spool_parked_pops"));
}

bool parked_becomes(spoold_server& srv, int n) {
  return srv.metric_becomes("spool_parked_pops", n);
}

/// spoold's resident set, in KiB.
long rss_kib(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  return -1;
}

json push_req(const std::string& queue, json payload) {
  return {{"op", "push"},
          {"items", {{{"queue", queue}, {"payload", std::move(payload)}}}}};
}

/// A long poll of `queue` (nothing there: it parks); its request id.
std::uint64_t long_poll(mp_conn& c, const std::string& queue = "q",
                        int timeout_ms = 60000) {
  return c.send({{"op", "pop"},
                 {"queue", queue},
                 {"wait", true},
                 {"timeout", timeout_ms}});
}

} // namespace

TEST_CASE("msgpack pipelining: a parked pop is answered after the requests "
          "sent behind it, when a push from another connection wakes it",
          "[system][msgpack]") {
  spoold_server srv;
  mp_conn a{srv.mp_port()};
  mp_conn b{srv.mp_port()};
  auto pop_id = long_poll(a, "q", 10000);
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 20; ++i)
    ids.push_back(a.send({{"op", "health"}}));
  // The 20 answers behind the pop come first, in any order.
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 20; ++i) {
    auto f = a.read_frame();
    REQUIRE(f);
    CHECK((*f)["id"] != pop_id);
    seen.insert((*f)["id"].get<std::uint64_t>());
  }
  CHECK(seen == std::set<std::uint64_t>(ids.begin(), ids.end()));
  REQUIRE(parked_becomes(srv, 1));
  b.ok(push_req("q", bin("wake")));
  auto woken = a.answer(pop_id);
  REQUIRE(woken["ok"] == true);
  REQUIRE(woken["messages"].size() == 1);
  CHECK(text_of(woken["messages"][0]["data"]) == "wake");
}

TEST_CASE("msgpack: closing a connection cancels its parked pop, it leases "
          "nothing",
          "[system][msgpack]") {
  spoold_server srv;
  {
    mp_conn a{srv.mp_port()};
    a.send({{"op", "pop"},
            {"queue", "q"},
            {"consumerGroup", "g"},
            {"wait", true},
            {"timeout", 60000}});
    REQUIRE(parked_becomes(srv, 1));
  } // a leaves
  REQUIRE(parked_becomes(srv, 0));
  mp_conn b{srv.mp_port()};
  b.ok(push_req("q", 1));
  auto p = b.ok({{"op", "pop"}, {"queue", "q"}, {"consumerGroup", "g"}});
  REQUIRE(p["messages"].size() == 1);
  CHECK(p["messages"][0]["deliveryCount"] == 1);
}

TEST_CASE("msgpack: a client that leaves with maxInFlight requests parked is "
          "seen leaving, its parked pops are cancelled",
          "[system][msgpack]") {
  spoold_server srv{{"--msgpack-max-in-flight", "2"}};
  {
    mp_conn a{srv.mp_port()};
    for (int i = 0; i < 2; ++i)
      long_poll(a, "q" + std::to_string(i));
    REQUIRE(parked_becomes(srv, 2)); // a is full: its frames are not cut
    a.send({{"op", "health"}});
  } // a leaves: only a read of its socket can tell
  CHECK(parked_becomes(srv, 0));
}

TEST_CASE("msgpack: a frame not whole within the frame timeout closes its "
          "connection, whole frames waiting behind long polls are not timed",
          "[system][msgpack]") {
  // The shortest frame timeout the server takes (100 ms).
  spoold_server srv{
      {"--msgpack-max-in-flight", "1", "--msgpack-frame-timeout-ms", "100"}};
  mp_conn a{srv.mp_port()};
  auto parked = long_poll(a);
  REQUIRE(parked_becomes(srv, 1));
  auto behind = a.send({{"op", "health"}}); // whole, waits for room
  // A wait that shows something does NOT happen: the timer ticks every
  // frame timeout and closes a frame timed for one, so a timed frame would
  // be closed within two ticks (200 ms); 300 ms outlasts that.
  std::this_thread::sleep_for(300ms);
  mp_conn b{srv.mp_port()};
  b.ok(push_req("q", 1));
  CHECK(a.answer(parked)["messages"].size() == 1);
  CHECK(a.answer(behind)["status"] == "healthy");
  // Half a frame, then nothing: closed as a slow sender.
  a.send_raw(std::string{"\x00\x00\x00\x40", 4} + std::string(10, '\x80'));
  CHECK(a.closed_by_peer(3s));
  CHECK(b.ok({{"op", "health"}})["status"] == "healthy");
}

TEST_CASE("msgpack: a big frame sent while maxInFlight requests are parked "
          "is not timed while the server does not read it",
          "[system][msgpack]") {
  spoold_server srv{
      {"--msgpack-max-in-flight", "1", "--msgpack-frame-timeout-ms", "300"}};
  mp_conn a{srv.mp_port()};
  auto parked = long_poll(a);
  REQUIRE(parked_becomes(srv, 1));
  // 4 MiB: more than the server reads while full (64 KiB), so the frame
  // stays unfinished in its buffer until the pop is answered.
  json big = push_req("big", bin(std::string(4u << 20, 'x')));
  big["id"] = 4242;
  std::atomic<bool> sent{false};
  std::thread sender{[&a, &sent, frame = frame_of(big)] {
    try {
      a.send_raw(frame);
      sent = true;
    } catch (const std::exception&) { // closed by the server: checked below
    }
  }};
  // A wait that shows something does NOT happen: were the unfinished frame
  // timed, the timer (one tick a frame timeout, 300 ms: the frame's last
  // 4 MiB must be read within one once room comes, sanitizers included)
  // would close it within two ticks; 700 ms outlasts them.
  std::this_thread::sleep_for(700ms);
  mp_conn b{srv.mp_port()};
  b.ok(push_req("q", 1));
  // Read before any check: a failed one must not leave the sender blocked
  // or joinable.
  json popped;
  json pushed;
  try {
    popped = a.answer(parked);
    pushed = a.answer(4242);
  } catch (const std::exception&) {
    ::shutdown(a.fd(), SHUT_RDWR); // unblocks the sender
  }
  sender.join();
  CHECK(sent);
  CHECK(popped["messages"].size() == 1);
  CHECK(pushed["ok"] == true);
  CHECK(b.ok({{"op", "queues"}})["queues"].size() == 2);
}

TEST_CASE("msgpack: a malformed frame is answered and the connection goes "
          "on, other connections never notice",
          "[system][msgpack]") {
  spoold_server srv;
  mp_conn a{srv.mp_port()};
  mp_conn other{srv.mp_port()};
  auto other_pop = long_poll(other, "q", 10000);
  REQUIRE(parked_becomes(srv, 1));
  struct bad {
    std::string bytes;
    std::string code;
    std::string message;
  };
  std::vector<bad> cases = {
      {"\xc1", "bad_request", "Invalid msgpack: parse error"},
      {"\x92\x01\x02", "bad_request",
       "Invalid msgpack: a request must be a map"},
      {"\x81\xa2id", "bad_request",
       "Invalid msgpack: the frame ends inside a value"},
      {std::string{"\x81\xa2id\x01\x01", 6}, "bad_request",
       "Invalid msgpack: the frame holds more than one value"},
      {"\x81\xa2op\xa4push", "invalid_argument",
       "id must be a non-negative integer"},
      {"\x81\xa2id\x07", "invalid_argument", "op must be a string"},
      {"", "bad_request", "Invalid msgpack: the frame ends inside a value"},
      // a map claiming 2^32-1 entries in a 5-byte frame
      {"\xdf\xff\xff\xff\xff", "bad_request",
       "Invalid msgpack: the frame declares more elements than it holds, or "
       "nests deeper than 64"},
      // 64 arrays in each other, each declaring 2^21 elements: refused
      // before anything is allocated for them
      {[] {
         std::string b;
         for (int i = 0; i < 64; ++i)
           b += std::string{"\xdd\x00\x20\x00\x00", 5};
         return b;
       }(),
       "bad_request", ""},
      // nesting past the decoder's depth
      {std::string(100, '\x91') + "\x01", "bad_request", ""},
  };
  for (auto& c : cases) {
    INFO(c.message);
    a.send_raw(frame_of(c.bytes));
    auto r = a.read_frame();
    REQUIRE(r);
    CHECK((*r)["ok"] == false);
    CHECK(code_of(*r) == c.code);
    if (!c.message.empty())
      CHECK(message_of(*r) == c.message);
  }
  // An id read before the failure is echoed.
  a.send_raw(frame_of(std::string{"\x82\xa2id\x09\xa2op\x05", 9}));
  auto echoed = a.read_frame();
  REQUIRE(echoed);
  CHECK((*echoed)["id"] == 9);
  CHECK(a.ok({{"op", "health"}})["status"] == "healthy");
  CHECK(parked(srv) == 1); // the other connection's pop is still parked
  a.ok(push_req("q", 1));
  CHECK(other.answer(other_pop)["messages"].size() == 1);
}

TEST_CASE("msgpack: a length over maxFrameBytes gets a too_large frame and "
          "closes that connection only",
          "[system][msgpack]") {
  spoold_server srv{{"--msgpack-max-frame-bytes", "4096"}};
  mp_conn a{srv.mp_port()};
  mp_conn other{srv.mp_port()};
  auto hi = a.ok({{"op", "hello"}, {"version", 1}});
  CHECK(hi["maxFrameBytes"] == 4096);
  // 8 MiB announced and sent: the answer is read, not lost to a reset (the
  // server lingers, reading and dropping what comes, so that no unread
  // byte turns its close into a reset).
  std::thread sender{[&a] {
    try {
      a.send_raw(std::string{"\x00\x80\x00\x00", 4}
                 + std::string(8u << 20, 'x'));
    } catch (const std::exception&) { // the server closed: expected
    }
  }};
  auto r = a.read_frame();
  sender.join();
  REQUIRE(r);
  CHECK((*r)["id"] == 0);
  CHECK(code_of(*r) == "too_large");
  CHECK(message_of(*r)
        == "Frame of 8388608 bytes exceeds 4096 bytes (msgpack.maxFrameBytes)");
  CHECK(a.closed_by_peer());
  CHECK(other.ok({{"op", "health"}})["status"] == "healthy");
  // A frame of exactly the limit is read.
  auto big = push_req("q", bin(std::string(4000, 'x')));
  auto bytes = json::to_msgpack(big);
  REQUIRE(bytes.size() <= 4096);
  other.ok(big);
}

TEST_CASE("msgpack: an HTTP request sent to the msgpack door gets a one-line "
          "plain-text hint naming the HTTP door's port, then a close",
          "[system][msgpack][bad-input]") {
  spoold_server srv;
  mp_conn other{srv.mp_port()};
  for (std::string request : {"GET /api/v1/pop/queue/q HTTP/1.1\r\n",
                              "POST /api/v1/push HTTP/1.1\r\nHost: x\r\n"
                              "Content-Length: 2\r\n\r\n{}"}) {
    tcp_conn c{srv.mp_port()};
    c.send_raw(request);
    CHECK(c.closed_by_peer());
    auto& got = c.received();
    auto body_at = got.find("\r\n\r\n");
    REQUIRE(body_at != std::string::npos);
    CHECK_THAT(got, Catch::StartsWith("HTTP/1.1 400 Bad Request\r\n"));
    CHECK_THAT(got, Catch::Contains("Content-Type: text/plain\r\n"));
    auto body = got.substr(body_at + 4);
    CHECK(body
          == "This is Spool's msgpack door: it speaks length-prefixed msgpack "
             "frames (docs/protocol.md), not HTTP. Send HTTP to the HTTP "
             "door, port "
                 + std::to_string(srv.port()) + ".\n");
    CHECK_THAT(got, Catch::Contains("Content-Length: "
                                    + std::to_string(body.size()) + "\r\n"));
  }
  // Text where a length belongs is answered so, whatever follows.
  for (std::string text : {"GETX", "ABCDEFGH", "HEAD"}) {
    tcp_conn t{srv.mp_port()};
    t.send_raw(text);
    CHECK(t.closed_by_peer());
    CHECK_THAT(t.received(), Catch::StartsWith("HTTP/1.1 400 Bad Request"));
  }
  // A length that is only large is still a too_large frame; and the hint is
  // for a connection's first bytes only, whatever the frame limit.
  for (std::string bytes :
       {std::string{"\x7f\x00\x00\x00", 4}, std::string{"G\x00\x00\x00", 4},
        std::string{"Ga\x00\x00", 4}}) {
    tcp_conn big{srv.mp_port()};
    big.send_raw(bytes);
    CHECK(big.closed_by_peer());
    CHECK(big.received().find("HTTP/") == std::string::npos);
    CHECK(big.received().find("too_large") != std::string::npos);
  }
  {
    spoold_server roomy{{"--msgpack-max-frame-bytes", "2147483648"}};
    tcp_conn t{roomy.mp_port()};
    t.send_raw("GET / HTTP/1.1\r\n\r\n");
    CHECK(t.closed_by_peer());
    CHECK_THAT(t.received(), Catch::StartsWith("HTTP/1.1 400 Bad Request"));
  }
  mp_conn greeted{srv.mp_port()};
  greeted.send_raw("GET / HTTP/1.1\r\n\r\n");
  auto r = greeted.read_frame(); // after a frame: a frame, not the hint
  REQUIRE(r);
  CHECK(code_of(*r) == "too_large");
  CHECK(other.ok({{"op", "health"}})["status"] == "healthy");
}

TEST_CASE("msgpack back-pressure: a client that sends without reading holds "
          "at most maxInFlight answers in the server, then is not read",
          "[system][msgpack]") {
  spoold_server srv{{"--msgpack-max-in-flight", "4"}};
  mp_conn c{srv.mp_port()};
  // Ten messages of 64 KiB: each browse answers 640 KiB.
  for (int i = 0; i < 10; ++i)
    c.ok(push_req("q", bin(std::string(64 << 10, static_cast<char>('a' + i)))));
  auto rss_before = rss_kib(srv.pid());
  // 400 browses, 256 MiB of answers, sent without reading any: the
  // socket's buffers fill and the send stops short of the whole.
  std::string burst;
  const int n = 400;
  for (int i = 0; i < n; ++i)
    burst += frame_of(json{{"id", 1000 + i}, {"op", "browse"}, {"queue", "q"}});
  int fd = c.fd();
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::size_t sent = 0;
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (sent < burst.size() && std::chrono::steady_clock::now() < deadline) {
    auto k = ::send(fd, burst.data() + sent, burst.size() - sent, MSG_NOSIGNAL);
    if (k > 0)
      sent += static_cast<std::size_t>(k);
    else
      std::this_thread::sleep_for(5ms);
  }
  // The server has answered what its limit lets it hold (an event)...
  REQUIRE(srv.metric_becomes(
      "spool_msgpack_request_duration_seconds_count{op=\"browse\"}",
      [](std::int64_t v) { return v >= 4; }));
  // ...and then does NOT grow: a wait that shows something does not happen,
  // bounded, the highest sample kept (an unbounded server builds a 640 KiB
  // answer in about a millisecond: 64 MiB, a hundred of them, in a third
  // of this window).
  long rss_stalled = 0;
  for (auto until = std::chrono::steady_clock::now() + 300ms;
       std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(10ms))
    rss_stalled = std::max(rss_stalled, rss_kib(srv.pid()));
  INFO("rss before " << rss_before << " KiB, stalled " << rss_stalled
                     << " KiB, request bytes sent " << sent << " of "
                     << burst.size());
  // Unbounded, the server would hold every answer (256 MiB); bounded, a
  // few answers and the socket buffers.
  CHECK(rss_stalled - rss_before < 64 * 1024);
  // Another client is served meanwhile.
  mp_conn other{srv.mp_port()};
  CHECK(other.ok({{"op", "health"}})["status"] == "healthy");
  // Reading, the client gets every answer, and its remaining requests go.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::set<std::uint64_t> got;
  std::thread writer{[&] {
    while (sent < burst.size()) {
      auto k
          = ::send(fd, burst.data() + sent, burst.size() - sent, MSG_NOSIGNAL);
      if (k <= 0)
        break;
      sent += static_cast<std::size_t>(k);
    }
  }};
  for (int i = 0; i < n; ++i) {
    auto f = c.read_frame(30s);
    if (!f)
      break;
    CHECK((*f)["messages"].size() == 10);
    got.insert((*f)["id"].get<std::uint64_t>());
  }
  writer.join();
  CHECK(got.size() == static_cast<std::size_t>(n));
}

TEST_CASE("msgpack drain answers parked pops empty and spoold exits 0",
          "[system][msgpack]") {
  spoold_server srv;
  mp_conn a{srv.mp_port()};
  auto pop_id = long_poll(a);
  REQUIRE(parked_becomes(srv, 1));
  srv.signal(SIGTERM);
  auto r = a.answer(pop_id);
  CHECK(r["ok"] == true);
  CHECK(r["messages"].empty());
  auto code = srv.wait_exit();
  INFO(srv.log());
  CHECK(code == 0);
  CHECK(a.closed_by_peer());
}

} // namespace spool::test
