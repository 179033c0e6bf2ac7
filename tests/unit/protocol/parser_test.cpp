// The HTTP request parser: requests whole and in pieces, pipelined, chunked,
// and every way bytes fail to be a request.

#include <catch2/catch.hpp>

#include "protocol/http/parser.hpp"
#include "vocab/errors.hpp"

using namespace spool::http;

namespace {

/// Feeds `bytes` in pieces of `step` and collects the requests.
std::vector<request> parse_all(request_parser& p, const std::string& bytes,
                               std::size_t step) {
  std::vector<request> out;
  std::string pending;
  for (std::size_t i = 0; i < bytes.size(); i += step) {
    pending += bytes.substr(i, step);
    while (!pending.empty()) {
      auto n = p.feed(pending);
      pending.erase(0, n);
      if (p.ready())
        out.push_back(p.take());
      else if (n == 0 || p.error())
        break;
    }
    if (p.error())
      break;
  }
  return out;
}

} // namespace

TEST_CASE("a request is parsed whole or byte by byte alike",
          "[unit][protocol][http]") {
  std::string raw = "POST /api/v1/push?x=1 HTTP/1.1\r\nHost: a\r\n"
                    "Content-Type: application/json\r\nContent-Length: 7\r\n"
                    "\r\n{\"a\":1}";
  for (std::size_t step : {raw.size(), std::size_t{1}, std::size_t{5}}) {
    request_parser p{{}};
    auto rs = parse_all(p, raw, step);
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].method == "POST");
    CHECK(rs[0].path == "/api/v1/push");
    CHECK(rs[0].query == "x=1");
    CHECK(rs[0].body == "{\"a\":1}");
    CHECK(rs[0].header("content-type") == "application/json");
    CHECK(rs[0].keep_alive);
    CHECK(rs[0].body.capacity() >= rs[0].body.size() + body_padding);
  }
}

TEST_CASE("pipelined requests come out one at a time, in order",
          "[unit][protocol][http]") {
  std::string raw;
  for (int i = 0; i < 3; ++i)
    raw += "GET /r" + std::to_string(i) + " HTTP/1.1\r\nHost: a\r\n\r\n";
  request_parser p{{}};
  auto n = p.feed(raw);
  CHECK(n < raw.size()); // it stopped after the first
  REQUIRE(p.ready());
  CHECK(p.take().path == "/r0");
  auto rs = parse_all(p, raw.substr(n), 1000);
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].path == "/r1");
  CHECK(rs[1].path == "/r2");
}

TEST_CASE("a chunked body is joined, HTTP/1.0 and Connection: close end "
          "the connection",
          "[unit][protocol][http]") {
  request_parser p{{}};
  auto rs = parse_all(p,
                      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
                      4);
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].body == "abcde");
  request_parser old{{}};
  auto r10 = parse_all(old, "GET / HTTP/1.0\r\n\r\n", 100);
  REQUIRE(r10.size() == 1);
  CHECK_FALSE(r10[0].keep_alive);
  request_parser c{{}};
  auto rc = parse_all(c, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 100);
  REQUIRE(rc.size() == 1);
  CHECK_FALSE(rc[0].keep_alive);
}

TEST_CASE("a body over the limit is 413 before it is read, chunked or not",
          "[unit][protocol][http][limits]") {
  parser_limits lim;
  lim.max_body_bytes = 10;
  request_parser p{lim};
  parse_all(p, "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 100);
  REQUIRE(p.error());
  CHECK(p.error()->status == 413);
  CHECK(p.error()->message == "Request body exceeds 10 bytes");
  request_parser c{lim};
  parse_all(c,
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            "8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n",
            100);
  REQUIRE(c.error());
  CHECK(c.error()->status == 413);
}

TEST_CASE("headers over the limit are 431, garbage is 400",
          "[unit][protocol][http][limits][bad-input]") {
  parser_limits lim;
  lim.max_header_bytes = 100;
  request_parser p{lim};
  parse_all(p, "GET / HTTP/1.1\r\nX: " + std::string(200, 'a') + "\r\n\r\n", 7);
  REQUIRE(p.error());
  CHECK(p.error()->status == 431);
  for (std::string bad :
       {std::string{"GARBAGE\r\n\r\n"},
        std::string{"GET / HTTP/1.1\r\nBad Header\r\n\r\n"},
        std::string{"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"},
        std::string("GET /\0 HTTP/1.1\r\n\r\n", 19)}) {
    request_parser q{{}};
    parse_all(q, bad, 3);
    INFO(bad);
    REQUIRE(q.error());
    CHECK(q.error()->status == 400);
    CHECK_THAT(q.error()->message, Catch::StartsWith("Malformed HTTP request"));
  }
}

TEST_CASE("Expect: 100-continue is reported once", "[unit][protocol][http]") {
  request_parser p{{}};
  p.feed(
      "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  CHECK(p.take_continue());
  CHECK_FALSE(p.take_continue());
  CHECK_FALSE(p.ready());
  p.feed("{}");
  CHECK(p.ready());
}

TEST_CASE("a chunked body's trailers do not leak into the next request",
          "[unit][protocol][http]") {
  request_parser p{{}};
  auto rs = parse_all(p,
                      "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "1\r\nx\r\n0\r\nX-Trailer: t\r\n\r\n"
                      "GET /b HTTP/1.1\r\nX-Real: r\r\n\r\n",
                      5);
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].header("X-Trailer").empty());
  CHECK(rs[1].header("X-Trailer").empty());
  CHECK(rs[1].header("X-Real") == "r");
  CHECK(rs[1].headers.size() == 1);
}

TEST_CASE("100-continue is never offered to an HTTP/1.0 client, headers "
          "past http_parser's own bound are 431",
          "[unit][protocol][http][limits]") {
  request_parser p{{}};
  p.feed(
      "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  CHECK_FALSE(p.take_continue());
  parser_limits lim;
  lim.max_header_bytes = 1u << 20; // above http_parser's 80 KiB
  request_parser big{lim};
  parse_all(big,
            "GET / HTTP/1.1\r\nX: " + std::string(90'000, 'a') + "\r\n\r\n",
            4096);
  REQUIRE(big.error());
  CHECK(big.error()->status == 431);
}

TEST_CASE("every status an error is answered with has its reason phrase",
          "[http][answer]") {
  for (int c = 1; c <= static_cast<int>(spool::last_errc); ++c) {
    auto status = spool::wire_of(static_cast<spool::errc>(c)).http_status;
    INFO("status " << status);
    CHECK(reason_phrase(status) != "Unknown");
  }
  CHECK(reason_phrase(401) == "Unauthorized");
  CHECK(reason_phrase(403) == "Forbidden");
}
