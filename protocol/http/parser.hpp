#pragma once

/// An incremental HTTP/1.1 request parser: Debian's http_parser (nodejs's
/// C parser) behind a small interface of ours. Bytes go in as they arrive;
/// it stops after each complete request, so that a pipelining client's
/// later requests wait in the connection's buffer until their turn (the
/// connection bounds how many it answers at once). Chunked bodies are
/// decoded by our own strict decoder (`chunked.hpp`), not http_parser's
/// lenient one, and joined. Framing is strict: a line of the head not
/// ending in CRLF (a bare LF, a lone CR), a header name that is not a
/// token (`Transfer-Encoding : chunked`), Content-Length beside
/// Transfer-Encoding, a transfer coding other than chunked, or any chunked
/// framing error is refused, and the connection closes. Limits: the request
/// line and headers together, and the body (known early from
/// Content-Length; counted as chunks arrive).

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/http/chunked.hpp"
#include "protocol/http/message.hpp"

namespace spool::http {

struct parser_limits {
  std::size_t max_header_bytes = 64u << 10;
  std::size_t max_body_bytes = 64u << 20;
};

class request_parser {
public:
  explicit request_parser(parser_limits limits);
  ~request_parser();
  request_parser(const request_parser&) = delete;
  request_parser& operator=(const request_parser&) = delete;

  /// Parses from `data` up to the end of the next complete request (or of
  /// `data`); answers how many bytes it used. After an error it uses none.
  std::size_t feed(std::string_view data);

  /// A complete request is ready (`take` hands it over).
  bool ready() const noexcept {
    return ready_;
  }
  request take();

  /// The request being read asked `Expect: 100-continue` and its body may
  /// come: the connection answers `100 Continue` once (this clears it).
  bool take_continue() noexcept;

  const std::optional<parse_error>& error() const noexcept {
    return error_;
  }

  /// Called once a request's head is read, before its body: an error
  /// refuses the request there (its body is not read), as a limit does.
  /// The connection uses it for tokens before a connection authenticated.
  using head_check = std::function<std::optional<parse_error>(const request&)>;
  void set_head_check(head_check check) {
    head_check_ = std::move(check);
  }

  /// Bytes of an unfinished request are buffered (for the idle and
  /// slow-client timeouts: a request has begun).
  bool in_request() const noexcept {
    return begun_;
  }

  struct callbacks;

private:
  friend struct callbacks;
  void fail(int status, std::string message);
  void finish();
  /// Checks the head's bytes in `data` (up to its end): answers how many it
  /// checked, 0 after an error.
  std::size_t scan_head(std::string_view data);

  struct state;
  std::unique_ptr<state> st_;
  head_check head_check_;
  parser_limits limits_;
  request cur_;
  std::string field_;
  std::string value_;
  bool in_value_ = false;
  /// The head's line ends, checked before http_parser sees the bytes.
  struct head_scan {
    bool started = false;   ///< the request line began
    bool empty_line = true; ///< nothing since the last CRLF
    bool cr = false;        ///< a CR just read
    bool done = false;      ///< the empty line ending the headers was read
  } head_;
  std::size_t header_bytes_ = 0;
  bool begun_ = false;
  bool ready_ = false;
  bool continue_ = false;
  std::optional<chunked_decoder> chunked_; ///< a chunked body being read
  std::optional<parse_error> error_;
};

} // namespace spool::http
