// Strict HTTP framing in the request parser: the chunked decoder's grammar
// (sizes, extensions, line ends, trailers) and the header checks around it,
// each fed whole and byte by byte.

#include <catch2/catch.hpp>

#include "protocol/http/parser.hpp"

using namespace spool::http;

namespace {

const std::string head = "POST / HTTP/1.1\r\nHost: a\r\n"
                         "Transfer-Encoding: chunked\r\n\r\n";

struct outcome {
  std::optional<request> req;
  std::optional<parse_error> err;
  std::string rest; ///< bytes after the request, unread
};

/// Feeds `bytes` in pieces of `step` until a request is ready or an error.
outcome parse(const std::string& bytes, std::size_t step,
              parser_limits lim = {}) {
  request_parser p{lim};
  std::string pending;
  outcome o;
  for (std::size_t i = 0; i < bytes.size() && !o.req && !o.err; i += step) {
    pending += bytes.substr(i, step);
    while (!pending.empty()) {
      auto n = p.feed(pending);
      pending.erase(0, n);
      if (p.error()) {
        o.err = p.error();
        break;
      }
      if (p.ready()) {
        o.req = p.take();
        o.rest = pending + (i + step < bytes.size() ? bytes.substr(i + step)
                                                    : std::string{});
        break;
      }
      if (n == 0)
        break;
    }
  }
  return o;
}

/// The same outcome whole, byte by byte and in threes.
std::vector<outcome> each_split(const std::string& bytes,
                                parser_limits lim = {}) {
  return {parse(bytes, bytes.size(), lim), parse(bytes, 1, lim),
          parse(bytes, 3, lim)};
}

void refused(const std::string& bytes, const std::string& text,
             int status = 400) {
  for (auto& o : each_split(bytes)) {
    INFO(bytes);
    CHECK_FALSE(o.req);
    REQUIRE(o.err);
    CHECK(o.err->status == status);
    CHECK_THAT(o.err->message, Catch::Contains(text));
  }
}

} // namespace

TEST_CASE("a chunked body with extensions, leading zeros and trailers is "
          "joined, and the request after it is left unread",
          "[unit][protocol][http][framing]") {
  std::string raw = head
                    + "3;a=b\r\nabc\r\n"
                      "0002 ; x = \"q \\\" ;\" ; y\r\nde\r\n"
                      "000\r\nX-Sum: 1 2\r\nOther:\r\n\r\n"
                      "GET /next HTTP/1.1\r\n\r\n";
  for (auto& o : each_split(raw)) {
    REQUIRE(o.req);
    CHECK(o.req->body == "abcde");
    CHECK(o.rest == "GET /next HTTP/1.1\r\n\r\n");
  }
  // The next request parses after it, on the same parser.
  request_parser p{{}};
  auto n = p.feed(raw);
  REQUIRE(p.ready());
  auto first = p.take();
  CHECK(first.body.capacity() >= first.body.size() + body_padding);
  p.feed(std::string_view{raw}.substr(n));
  REQUIRE(p.ready());
  CHECK(p.take().path == "/next");
}

TEST_CASE("a chunk size that is not hex, has no digits or has more than 16 "
          "is 400",
          "[unit][protocol][http][framing]") {
  refused(head + "zz\r\nabc\r\n0\r\n\r\n", "chunk size is not hex");
  refused(head + "\r\n3\r\nabc\r\n0\r\n\r\n", "chunk size is not hex");
  refused(head + ";a\r\n3\r\nabc\r\n0\r\n\r\n", "chunk size is not hex");
  refused(head + "3g\r\nabc\r\n0\r\n\r\n", "chunk size is not hex");
  refused(head + "-3\r\nabc\r\n0\r\n\r\n", "chunk size is not hex");
  refused(head + "0x3\r\nabc\r\n0\r\n\r\n", "chunk size is not hex");
  refused(head + "10000000000000000\r\n", "more than 16 hex digits");
  refused(head + "ffffffffffffffffff\r\n", "more than 16 hex digits");
}

TEST_CASE("a chunk size past the body limit is 413 before its data",
          "[unit][protocol][http][framing][limits]") {
  parser_limits lim;
  lim.max_body_bytes = 10;
  for (auto& o : each_split(head + "ffffffffffffffff\r\n", lim)) {
    REQUIRE(o.err);
    CHECK(o.err->status == 413);
  }
  for (auto& o : each_split(head + "8\r\n12345678\r\n3\r\n", lim)) {
    REQUIRE(o.err);
    CHECK(o.err->status == 413);
  }
  for (auto& o : each_split(head + "8\r\n12345678\r\n2\r\nab\r\n0\r\n\r\n", lim))
    CHECK(o.req);
}

TEST_CASE("anything but CRLF after a chunk's data is 400",
          "[unit][protocol][http][framing]") {
  refused(head + "3\r\nabcXY0\r\n\r\n", "a chunk's data must end in CRLF");
  refused(head + "3\r\nabc0\r\n\r\n", "a chunk's data must end in CRLF");
  refused(head + "3\r\nabc\rX0\r\n\r\n", "a chunk's data must end in CRLF");
  refused(head + "3\r\nabc\n0\r\n\r\n", "a chunk's data must end in CRLF");
  refused(head + "3\r\nabc\n\r0\r\n\r\n", "a chunk's data must end in CRLF");
}

TEST_CASE("a bare LF or a lone CR ending a chunk-size line is 400",
          "[unit][protocol][http][framing]") {
  refused(head + "3\nabc\r\n0\r\n\r\n", "a chunk-size line must end in CRLF");
  refused(head + "3;a\nabc\r\n0\r\n\r\n", "a chunk-size line must end in CRLF");
  refused(head + "3\rabc\r\n0\r\n\r\n", "a chunk-size line must end in CRLF");
  refused(head + "3\r\nabc\r\n0\n\r\n", "a chunk-size line must end in CRLF");
}

TEST_CASE("a malformed chunk extension is 400",
          "[unit][protocol][http][framing]") {
  for (auto ext : {" ", ";", "; ", ";=v", ";a=", ";a=\"x", ";a b", " a",
                   ";a=\"\x01\"", ";a=b c", ";a=\"x\"y"})
    refused(head + "3" + ext + "\r\nabc\r\n0\r\n\r\n",
            "chunk extension is malformed");
}

TEST_CASE("a bad trailer is 400: no colon, a space before it, no name, a "
          "control character, a folded line, a bare LF",
          "[unit][protocol][http][framing]") {
  auto body = head + "3\r\nabc\r\n0\r\n";
  refused(body + "no colon here\r\n\r\n", "trailer field is malformed");
  refused(body + "X-T : v\r\n\r\n", "trailer field is malformed");
  refused(body + ": v\r\n\r\n", "trailer field is malformed");
  refused(body + "X-T: a\x01" "b\r\n\r\n", "trailer field is malformed");
  refused(body + "X-T: a\x7f\r\n\r\n", "trailer field is malformed");
  refused(body + "X-T: a\r\n folded\r\n\r\n", "trailer field is malformed");
  refused(body + "X-T: v\n\r\n", "a trailer line must end in CRLF");
  refused(body + "\n", "a trailer line must end in CRLF");
  refused(body + "\rX", "a trailer line must end in CRLF");
}

TEST_CASE("chunk extensions and trailers together are bounded by the header "
          "limit (431)",
          "[unit][protocol][http][framing][limits]") {
  parser_limits lim;
  lim.max_header_bytes = 200;
  auto o = parse(head + "3;a=" + std::string(300, 'x') + "\r\nabc\r\n0\r\n\r\n",
                 1000, lim);
  REQUIRE(o.err);
  CHECK(o.err->status == 431);
  auto t = parse(head + "0\r\nX: " + std::string(300, 'x') + "\r\n\r\n", 1000,
                 lim);
  REQUIRE(t.err);
  CHECK(t.err->status == 431);
  // Many small chunks are not bounded by it: only the body limit counts.
  std::string many = head;
  for (int i = 0; i < 500; ++i)
    many += "1\r\nx\r\n";
  auto m = parse(many + "0\r\n\r\n", 7, lim);
  REQUIRE(m.req);
  CHECK(m.req->body.size() == 500);
}

TEST_CASE("Transfer-Encoding: only chunked, once, last, in HTTP/1.1, "
          "without Content-Length",
          "[unit][protocol][http][framing]") {
  auto chunk = std::string{"3\r\nabc\r\n0\r\n\r\n"};
  refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: "
          "3\r\n\r\n"
              + chunk,
          "Malformed HTTP request");
  refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: "
          "chunked\r\n\r\n"
              + chunk,
          "Malformed HTTP request");
  refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n" + chunk,
          "Malformed HTTP request");
  refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
          "chunked\r\n\r\n"
              + chunk,
          "Transfer-Encoding");
  refused("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + chunk,
          "other than chunked is not supported", 501);
  refused("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk,
          "HTTP/1.0");
  for (auto& o : each_split("POST / HTTP/1.1\r\nTransfer-Encoding:  CHUNKED \r\n"
                            "\r\n"
                            + chunk))
    CHECK(o.req);
}

TEST_CASE("a header name with a space before its colon is 400",
          "[unit][protocol][http][framing]") {
  refused("POST / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n3\r\nabc\r\n"
          "0\r\n\r\n",
          "token characters");
  refused("POST / HTTP/1.1\r\nContent-Length :3\r\n\r\nabc",
          "Malformed HTTP request");
  refused("GET / HTTP/1.1\r\nX\tY: 1\r\n\r\n", "Malformed HTTP request");
}

TEST_CASE("a bare LF or a lone CR in the request line or headers is 400, "
          "empty lines before a request are skipped",
          "[unit][protocol][http][framing]") {
  refused("GET / HTTP/1.1\nHost: a\r\n\r\n", "bare LF");
  refused("GET / HTTP/1.1\r\nHost: a\n\r\n", "bare LF");
  refused("GET / HTTP/1.1\r\nHost: a\r\n\n", "bare LF");
  refused("GET / HTTP/1.1\r\nHost: a\r\n\rXGET /2 HTTP/1.1\r\n\r\n",
          "a CR not followed by LF");
  refused("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", "a CR not followed by LF");
  for (auto& o : each_split("\r\n\r\nGET /a HTTP/1.1\r\nHost: a\r\n\r\n"
                            "GET /b HTTP/1.1\r\n\r\n")) {
    REQUIRE(o.req);
    CHECK(o.req->path == "/a");
    CHECK(o.rest == "GET /b HTTP/1.1\r\n\r\n");
  }
  // A body may hold any byte: only the head is checked.
  for (auto& o : each_split("POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\n"
                            "a\nb\r"))
    CHECK(o.req);
}

TEST_CASE("a request refused for its framing is never offered 100 Continue",
          "[unit][protocol][http][framing]") {
  for (auto te : {"gzip", "chunked, gzip", "gzip, chunked"}) {
    request_parser p{{}};
    p.feed(std::string{"POST / HTTP/1.1\r\nExpect: 100-continue\r\n"
                       "Transfer-Encoding: "}
           + te + "\r\n\r\n");
    REQUIRE(p.error());
    CHECK_FALSE(p.take_continue());
  }
  request_parser ok{{}};
  ok.feed("POST / HTTP/1.1\r\nExpect: 100-continue\r\nTransfer-Encoding: "
          "chunked\r\n\r\n");
  CHECK_FALSE(ok.error());
  CHECK(ok.take_continue());
}
