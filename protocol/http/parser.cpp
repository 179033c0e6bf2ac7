#include "protocol/http/parser.hpp"

#include <http_parser.h>

#include <strings.h>

#include <utility>

namespace spool::http {

struct request_parser::state {
  http_parser p;
  http_parser_settings s;
};

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size()
         && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace

std::string_view request::header(std::string_view name) const {
  for (auto& [k, v] : headers)
    if (iequals(k, name))
      return v;
  return {};
}

// The http_parser callbacks, each forwarding to the parser's state.
struct request_parser::callbacks {
  static request_parser& self(http_parser* p) {
    return *static_cast<request_parser*>(p->data);
  }

  /// Counts request-line and header bytes against the limit.
  static bool count(request_parser& r, std::size_t n) {
    r.header_bytes_ += n;
    if (r.header_bytes_ <= r.limits_.max_header_bytes)
      return true;
    r.fail(431, "Request headers exceed "
                    + std::to_string(r.limits_.max_header_bytes) + " bytes");
    return false;
  }

  static void flush_header(request_parser& r) {
    if (!r.field_.empty() || !r.value_.empty())
      r.cur_.headers.emplace_back(std::move(r.field_), std::move(r.value_));
    r.field_.clear();
    r.value_.clear();
    r.in_value_ = false;
  }

  static int on_message_begin(http_parser* p) {
    auto& r = self(p);
    r.begun_ = true;
    r.cur_ = request{};
    r.header_bytes_ = 0;
    r.field_.clear();
    r.value_.clear();
    r.in_value_ = false;
    r.chunked_.reset();
    return 0;
  }

  static int on_url(http_parser* p, const char* at, std::size_t n) {
    auto& r = self(p);
    if (!count(r, n))
      return -1;
    r.cur_.target.append(at, n);
    return 0;
  }

  static int on_header_field(http_parser* p, const char* at, std::size_t n) {
    auto& r = self(p);
    if (!count(r, n))
      return -1;
    // http_parser, built lenient, takes a space in a name
    // (`Transfer-Encoding : chunked`, which RFC 9112 §5.1 answers 400).
    if (n > 0 && !is_token({at, n})) {
      r.fail(400, "Malformed HTTP request: a header name may hold only "
                  "token characters (no space before its colon)");
      return -1;
    }
    if (r.in_value_)
      flush_header(r);
    r.field_.append(at, n);
    return 0;
  }

  static int on_header_value(http_parser* p, const char* at, std::size_t n) {
    auto& r = self(p);
    if (!count(r, n))
      return -1;
    r.in_value_ = true;
    r.value_.append(at, n);
    return 0;
  }

  static int on_headers_complete(http_parser* p) {
    auto& r = self(p);
    flush_header(r);
    auto& req = r.cur_;
    req.method = http_method_str(static_cast<http_method>(p->method));
    auto target = std::string_view{req.target};
    if (auto hash = target.find('#'); hash != std::string_view::npos)
      target = target.substr(0, hash);
    auto q = target.find('?');
    req.path = std::string{target.substr(0, q)};
    if (q != std::string_view::npos)
      req.query = std::string{target.substr(q + 1)};
    req.keep_alive = http_should_keep_alive(p) != 0;
    if (r.head_check_)
      if (auto refused = r.head_check_(req)) {
        r.fail(refused->status, std::move(refused->message));
        return -1;
      }
    // A Content-Length over the limit is refused before its body comes.
    if ((p->flags & F_CONTENTLENGTH) != 0
        && p->content_length > r.limits_.max_body_bytes) {
      r.fail(413, "Request body exceeds "
                      + std::to_string(r.limits_.max_body_bytes) + " bytes");
      return -1;
    }
    if ((p->flags & F_CONTENTLENGTH) != 0)
      req.body.reserve(p->content_length + body_padding);
    bool http11
        = p->http_major > 1 || (p->http_major == 1 && p->http_minor >= 1);
    auto framing = chunked(r, p, http11);
    // RFC 9110 §10.1.1: never to an HTTP/1.0 client, nor to a request
    // refused (its body would be sent for nothing).
    if (framing >= 0 && iequals(req.header("Expect"), "100-continue") && http11)
      r.continue_ = true;
    return framing;
  }

  /// Transfer-Encoding (RFC 9112 §6.1): one header, exactly `chunked`, in
  /// HTTP/1.1, without Content-Length. The body is then ours to decode:
  /// http_parser is told there is none (1), so it ends the message after
  /// the headers and reads the next request only after ours.
  static int chunked(request_parser& r, http_parser* p, bool http11) {
    std::size_t count = 0;
    std::string_view coding;
    for (auto& [k, v] : r.cur_.headers)
      if (iequals(k, "Transfer-Encoding")) {
        ++count;
        coding = v;
      }
    if (count == 0)
      return 0;
    while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t'))
      coding.remove_suffix(1);
    auto last = coding.substr(coding.rfind(',') + 1);
    while (!last.empty() && (last.front() == ' ' || last.front() == '\t'))
      last.remove_prefix(1);
    std::string why;
    if (!http11)
      why = "Transfer-Encoding in an HTTP/1.0 request";
    else if ((p->flags & F_CONTENTLENGTH) != 0)
      why = "Content-Length together with Transfer-Encoding";
    else if (count > 1 || !iequals(last, "chunked"))
      why = "Transfer-Encoding must be chunked, once and last";
    else if (!iequals(coding, "chunked")) {
      r.fail(501, "Transfer-Encoding other than chunked is not supported");
      return -1;
    }
    if (!why.empty()) {
      r.fail(400, "Malformed HTTP request: " + why);
      return -1;
    }
    r.chunked_.emplace(r.limits_.max_body_bytes, r.limits_.max_header_bytes);
    return 1;
  }

  static int on_body(http_parser* p, const char* at, std::size_t n) {
    auto& r = self(p);
    if (r.cur_.body.size() + n > r.limits_.max_body_bytes) {
      r.fail(413, "Request body exceeds "
                      + std::to_string(r.limits_.max_body_bytes) + " bytes");
      return -1;
    }
    r.cur_.body.append(at, n);
    return 0;
  }

  static int on_message_complete(http_parser* p) {
    auto& r = self(p);
    if (p->upgrade) // Spool speaks no upgraded protocol: answer, then close
      r.cur_.keep_alive = false;
    if (!r.chunked_) // (a chunked body is still to come: `feed` reads it)
      r.finish();
    http_parser_pause(p, 1); // one request at a time
    return 0;
  }
};

std::size_t request_parser::scan_head(std::string_view data) {
  std::size_t i = 0;
  for (; i < data.size() && !head_.done; ++i) {
    char c = data[i];
    if (head_.cr) { // a CR: its LF must follow
      if (c != '\n') {
        fail(400, "Malformed HTTP request: a CR not followed by LF in the "
                  "request line or headers");
        return 0;
      }
      head_.cr = false;
      // An empty line ends the headers; before the request line, it is
      // skipped (RFC 9112 §2.2).
      head_.done = head_.started && head_.empty_line;
      head_.empty_line = true;
    } else if (c == '\r') {
      head_.cr = true;
    } else if (c == '\n') {
      fail(400, "Malformed HTTP request: a line of the request line or "
                "headers ends in a bare LF, not CRLF");
      return 0;
    } else {
      head_.started = true;
      head_.empty_line = false;
    }
  }
  return i;
}

void request_parser::finish() {
  auto& body = cur_.body;
  if (body.capacity() < body.size() + body_padding)
    body.reserve(body.size() + body_padding);
  chunked_.reset();
  head_ = {};
  ready_ = true;
  begun_ = false;
  continue_ = false;
}

request_parser::request_parser(parser_limits limits) :
    st_(std::make_unique<state>()), limits_(limits) {
  http_parser_init(&st_->p, HTTP_REQUEST);
  st_->p.data = this;
  http_parser_settings_init(&st_->s);
  st_->s.on_message_begin = &callbacks::on_message_begin;
  st_->s.on_url = &callbacks::on_url;
  st_->s.on_header_field = &callbacks::on_header_field;
  st_->s.on_header_value = &callbacks::on_header_value;
  st_->s.on_headers_complete = &callbacks::on_headers_complete;
  st_->s.on_body = &callbacks::on_body;
  st_->s.on_message_complete = &callbacks::on_message_complete;
}

request_parser::~request_parser() = default;

void request_parser::fail(int status, std::string message) {
  continue_ = false; // a refused request's body is not asked for
  if (!error_)
    error_ = parse_error{status, std::move(message)};
}

std::size_t request_parser::feed(std::string_view data) {
  if (error_ || ready_ || data.empty())
    return 0;
  std::size_t n = 0;
  if (!chunked_) { // the request line and headers (or a whole request)
    // Every line of the head ends in CRLF: http_parser, built lenient,
    // takes a bare LF, and any byte after a CR as its LF.
    if (!head_.done && (scan_head(data), error_))
      return 0;
    auto& p = st_->p;
    if (HTTP_PARSER_ERRNO(&p) == HPE_PAUSED)
      http_parser_pause(&p, 0);
    n = http_parser_execute(&p, &st_->s, data.data(), data.size());
    auto err = HTTP_PARSER_ERRNO(&p);
    if (error_) // refused by one of our callbacks
      return 0;
    if (err == HPE_HEADER_OVERFLOW) { // http_parser's own 80 KiB bound
      fail(431, "Request headers exceed " + std::to_string(HTTP_MAX_HEADER_SIZE)
                    + " bytes");
      return 0;
    }
    if (err != HPE_OK && err != HPE_PAUSED) {
      fail(400, std::string{"Malformed HTTP request: "}
                    + http_errno_description(err));
      return 0;
    }
    if (!chunked_) {
      if (p.upgrade && !ready_) // the bytes after an upgrade are not HTTP
        fail(400, "Malformed HTTP request: protocol upgrade is not supported");
      return n;
    }
  }
  n += chunked_->feed(data.substr(n), cur_.body);
  if (auto& err = chunked_->error()) {
    fail(err->status, err->message);
    return 0;
  }
  if (chunked_->done())
    finish();
  return n;
}

request request_parser::take() {
  ready_ = false;
  return std::move(cur_);
}

bool request_parser::take_continue() noexcept {
  return std::exchange(continue_, false);
}

std::string_view reason_phrase(int status) noexcept {
  switch (status) {
  case 100:
    return "Continue";
  case 200:
    return "OK";
  case 201:
    return "Created";
  case 204:
    return "No Content";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 409:
    return "Conflict";
  case 413:
    return "Payload Too Large";
  case 421:
    return "Misdirected Request";
  case 429:
    return "Too Many Requests";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 501:
    return "Not Implemented";
  case 503:
    return "Service Unavailable";
  case 507:
    return "Insufficient Storage";
  default:
    return "Unknown";
  }
}

} // namespace spool::http
