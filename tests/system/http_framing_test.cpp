// HTTP framing against the real spoold: every way a request's framing can be
// wrong (chunk sizes and line ends, trailers, Content-Length beside chunked,
// a header name with a space before its colon, a body that never ends) is
// answered 400 (or 408 for the body that never ends) and closes the
// connection; nothing of it is stored, and a request pipelined behind it
// never runs. A framing error that became a stored request is the shape of
// request smuggling behind a proxy.

#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <sstream>

#include "system/http_fixture.hpp"

namespace spool::test {

namespace {

const std::string chunked_head
    = "POST /api/v1/push HTTP/1.1\r\nHost: x\r\n"
      "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n";

/// A push of one message to `queue`, as a chunk-size line, its data and the
/// line end after it (`crlf`, "\r\n" when framed right).
std::string chunk_of(const std::string& queue, const std::string& crlf = "\r\n",
                     const std::string& size_end = "\r\n") {
  auto body = push_body(queue, 1);
  std::ostringstream o;
  o << std::hex << body.size() << size_end << body << crlf;
  return o.str();
}

/// A whole push to the queue "after", pipelined behind the bad request.
std::string after() {
  return http_conn::format("POST", "/api/v1/push", push_body("after", 1));
}

/// The queues that exist.
std::size_t queue_count(spoold_server& s) {
  return s.get("/api/v1/resources/queues").body_json()["queues"].size();
}

/// Sends `bytes` and then a pipelined push: the bad request is answered
/// `status` with a framing error text, the connection closes, and neither
/// request stored anything.
void refused(const std::string& bytes, const std::string& text,
             int status = 400) {
  spoold_server s;
  http_conn c{s.port()};
  c.send_raw(bytes + after());
  auto r = c.read_response();
  REQUIRE(r);
  CHECK(r->status == status);
  auto error = r->body_json()["error"].get<std::string>();
  if (status == 400)
    CHECK_THAT(error, Catch::StartsWith("Malformed HTTP request"));
  CHECK_THAT(error, Catch::Contains(text));
  CHECK(r->header("connection") == "close");
  CHECK_FALSE(c.read_response(200ms)); // the pipelined push: never answered
  CHECK(c.closed_by_peer());
  CHECK(queue_count(s) == 0);
  // The server serves others.
  CHECK(s.post("/api/v1/push", push_body("other", 1)).status == 201);
}

} // namespace

TEST_CASE("framing: a well-framed chunked push with an extension and a "
          "trailer is stored, and the request pipelined behind it runs",
          "[system][http][framing]") {
  spoold_server s;
  http_conn c{s.port()};
  auto body = push_body("q", 1);
  std::ostringstream o;
  o << std::hex << body.size() << " ; name=value;flag;q=\"a \\\" b\"\r\n"
    << body << "\r\n0\r\nX-Checksum: abc\r\n\r\n";
  c.send_raw(chunked_head + "\r\n" + o.str() + after());
  auto r = c.read_response();
  REQUIRE(r);
  CHECK(r->status == 201);
  auto r2 = c.read_response();
  REQUIRE(r2);
  CHECK(r2->status == 201);
  CHECK(queue_count(s) == 2);
}

TEST_CASE("framing: a chunk size that is not hex is 400, nothing stored",
          "[system][http][framing]") {
  refused(chunked_head + "\r\nzz\r\nabc\r\n0\r\n\r\n", "chunk size");
  refused(chunked_head + "\r\n\r\n" + chunk_of("bad") + "0\r\n\r\n",
          "chunk size");
  refused(chunked_head + "\r\n-1\r\n" + chunk_of("bad") + "0\r\n\r\n",
          "chunk size");
}

TEST_CASE("framing: an overflowing chunk size is 400, nothing stored",
          "[system][http][framing]") {
  refused(chunked_head + "\r\n10000000000000000000\r\n" + chunk_of("bad")
              + "0\r\n\r\n",
          "chunk size");
  refused(chunked_head + "\r\nffffffffffffffffff\r\n" + chunk_of("bad")
              + "0\r\n\r\n",
          "chunk size");
}

TEST_CASE("framing: anything but CRLF after a chunk's data is 400, nothing "
          "stored",
          "[system][http][framing]") {
  refused(chunked_head + "\r\n" + chunk_of("bad", "XY") + "0\r\n\r\n", "CRLF");
  refused(chunked_head + "\r\n" + chunk_of("bad", "") + "0\r\n\r\n", "CRLF");
  refused(chunked_head + "\r\n" + chunk_of("bad", "\rX") + "0\r\n\r\n", "CRLF");
}

TEST_CASE("framing: a bad trailer is 400, nothing stored",
          "[system][http][framing]") {
  auto head = chunked_head + "\r\n" + chunk_of("bad");
  refused(head + "0\r\nno colon here\r\n\r\n", "trailer");
  refused(head + "0\r\nX-T : v\r\n\r\n", "trailer");
  refused(head + "0\r\n: v\r\n\r\n", "trailer");
  refused(head
              + "0\r\nX-T: a\x01"
                "b\r\n\r\n",
          "trailer");
  refused(head + "0\r\nX-T: a\r\n folded\r\n\r\n", "trailer");
}

TEST_CASE("framing: Content-Length together with chunked is 400, nothing "
          "stored",
          "[system][http][framing]") {
  auto chunk = chunk_of("bad") + "0\r\n\r\n";
  refused(chunked_head + "Content-Length: " + std::to_string(chunk.size())
              + "\r\n\r\n" + chunk,
          "");
  refused("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: "
              + std::to_string(chunk.size())
              + "\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk,
          "");
}

TEST_CASE("framing: a space between a header name and its colon is 400, "
          "nothing stored",
          "[system][http][framing]") {
  refused("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : "
          "chunked\r\n\r\n"
              + chunk_of("bad") + "0\r\n\r\n",
          "");
  auto body = push_body("bad", 1);
  refused("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length : "
              + std::to_string(body.size()) + "\r\n\r\n" + body,
          "");
}

TEST_CASE("framing: a transfer coding other than chunked is refused, "
          "nothing stored",
          "[system][http][framing]") {
  auto chunk = chunk_of("bad") + "0\r\n\r\n";
  refused("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
          "chunked, gzip\r\n\r\n"
              + chunk,
          "Transfer-Encoding");
  refused("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
          "gzip, chunked\r\n\r\n"
              + chunk,
          "Transfer-Encoding", 501);
  refused("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
          "chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
              + chunk,
          "Transfer-Encoding");
}

TEST_CASE("framing: a bare LF ending a chunk-size line or a chunk's data is "
          "400, nothing stored",
          "[system][http][framing]") {
  refused(chunked_head + "\r\n" + chunk_of("bad", "\r\n", "\n") + "0\r\n\r\n",
          "CRLF");
  refused(chunked_head + "\r\n" + chunk_of("bad", "\n") + "0\r\n\r\n", "CRLF");
  refused(chunked_head + "\r\n" + chunk_of("bad") + "0\n\r\n", "CRLF");
  refused(chunked_head + "\r\n" + chunk_of("bad") + "0\r\n\n", "CRLF");
  refused(chunked_head + "\r\n" + chunk_of("bad") + "0\r\nX-T: v\n\r\n",
          "CRLF");
}

TEST_CASE("framing: a bare LF or a lone CR in the request line or headers "
          "is 400, nothing stored",
          "[system][http][framing]") {
  auto body = push_body("bad", 1);
  auto cl = std::to_string(body.size());
  refused("POST /api/v1/push HTTP/1.1\nContent-Length: " + cl + "\r\n\r\n"
              + body,
          "bare LF");
  refused("POST /api/v1/push HTTP/1.1\r\nContent-Length: " + cl + "\n\r\n"
              + body,
          "bare LF");
  refused("POST /api/v1/push HTTP/1.1\r\nContent-Length: " + cl + "\r\n\rX"
              + body,
          "a CR not followed by LF");
}

TEST_CASE("framing: a request refused for its framing is answered without "
          "100 Continue first",
          "[system][http][framing]") {
  spoold_server s;
  http_conn c{s.port()};
  c.send_raw("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nExpect: "
             "100-continue\r\nTransfer-Encoding: gzip\r\n\r\n");
  auto r = c.read_response();
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(c.closed_by_peer());
}

TEST_CASE("framing: a chunked body without its last chunk then EOF closes "
          "the connection, nothing stored",
          "[system][http][framing]") {
  spoold_server s;
  http_conn c{s.port()};
  c.send_raw(chunked_head + "\r\n" + chunk_of("bad"));
  ::shutdown(c.fd(), SHUT_WR);
  CHECK_FALSE(c.read_response(500ms));
  CHECK(c.closed_by_peer());
  CHECK(queue_count(s) == 0);
}

TEST_CASE("framing: a chunked body without its last chunk held open is "
          "answered 408, nothing stored",
          "[system][http][framing]") {
  spoold_server s{{"--http-request-timeout-ms", "300"}};
  http_conn c{s.port()};
  c.send_raw(chunked_head + "\r\n" + chunk_of("bad"));
  auto r = c.read_response(5s);
  REQUIRE(r);
  CHECK(r->status == 408);
  CHECK(c.closed_by_peer());
  CHECK(queue_count(s) == 0);
}

} // namespace spool::test
