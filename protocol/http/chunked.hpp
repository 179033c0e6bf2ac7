#pragma once

/// A strict decoder of the chunked transfer coding (RFC 9112 §7.1), ours
/// rather than http_parser's: that parser (2.9.4, upstream archived, built
/// lenient) skips whatever two bytes follow a chunk's data and takes a bare
/// LF where a CRLF belongs, and a framing error it lets through becomes a
/// stored request (request smuggling's shape behind a proxy).
///
///   chunked-body = *chunk last-chunk trailer-section CRLF
///   chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
///   chunk-size   = 1*HEXDIG            (at most 16 digits)
///   chunk-ext    = *( BWS ";" BWS token [ BWS "=" BWS ( token / quoted-string ) ] )
///   trailer-section = *( field-name ":" OWS field-value OWS CRLF )
///
/// Every line ends in CRLF exactly; no obs-fold. Trailer fields are checked
/// and dropped (no route reads one). Bytes go in as they arrive; it stops at
/// the end of the body, so a pipelined request after it stays unread.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/http/message.hpp"

namespace spool::http {

class chunked_decoder {
public:
  /// `max_body`: the joined body's bound (413); `max_lines`: the bytes of
  /// chunk-size lines and trailer lines together (431).
  chunked_decoder(std::size_t max_body, std::size_t max_lines) noexcept :
      max_body_(max_body), max_lines_(max_lines) {}

  /// Decodes from `data`, appending chunk data to `body`; answers the bytes
  /// used. Stops at the body's end (`done`) or at an error (`error`).
  std::size_t feed(std::string_view data, std::string& body);

  bool done() const noexcept {
    return st_ == state::done;
  }
  const std::optional<parse_error>& error() const noexcept {
    return error_;
  }

private:
  enum class state {
    size,      // chunk-size digits
    line,      // the rest of a chunk-size line (extensions), up to its CR
    line_lf,   // the LF after a chunk-size line's CR
    data,      // chunk data
    data_cr,   // the CR after a chunk's data
    data_lf,   // its LF
    trailer,   // a trailer line (or the empty line that ends the body)
    trailer_lf,
    done,
    failed,
  };

  void fail(int status, std::string message);
  bool count_line_byte();
  void end_size_line();
  void end_trailer_line();
  /// A byte of a chunk-size line's extensions or of a trailer line: kept,
  /// or its CR; false after an error (a bare LF, past the bound).
  bool line_byte(unsigned char c);

  std::size_t max_body_;
  std::size_t max_lines_;
  state st_ = state::size;
  std::uint64_t size_ = 0;   // the chunk's size, as read
  int digits_ = 0;           // its digits so far
  std::uint64_t left_ = 0;   // chunk data still to come
  std::size_t line_bytes_ = 0;
  std::string line_;         // a chunk-size line's extensions, or a trailer line
  std::optional<parse_error> error_;
};

/// `token` (RFC 9110 §5.6.2): one or more tchar.
bool is_token(std::string_view s) noexcept;

/// A chunk-size line's text after its digits is a valid chunk-ext.
bool is_chunk_ext(std::string_view s) noexcept;

} // namespace spool::http
