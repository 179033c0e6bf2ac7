#include "protocol/http/chunked.hpp"

#include <algorithm>

#include "protocol/http/url.hpp"

namespace spool::http {

namespace {

constexpr std::string_view malformed = "Malformed HTTP request: ";

bool tchar(unsigned char c) noexcept {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')
      || (c >= 'A' && c <= 'Z'))
    return true;
  return std::string_view{"!#$%&'*+-.^_`|~"}.find(static_cast<char>(c))
         != std::string_view::npos;
}

bool ws(char c) noexcept {
  return c == ' ' || c == '\t';
}

/// field-value characters: VCHAR, obs-text, SP, HTAB (no CTL).
bool field_char(unsigned char c) noexcept {
  return c == ' ' || c == '\t' || (c >= 0x21 && c != 0x7f);
}

/// A quoted-string at `s[i]` (its DQUOTE): moves `i` past it.
bool quoted(std::string_view s, std::size_t& i) noexcept {
  ++i;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') {
      ++i;
      return true;
    }
    if (c == '\\') { // quoted-pair: HTAB, SP, VCHAR, obs-text
      if (++i == s.size() || !field_char(static_cast<unsigned char>(s[i])))
        return false;
    } else if (!field_char(c)) {
      return false;
    }
    ++i;
  }
  return false;
}

std::size_t token_end(std::string_view s, std::size_t i) noexcept {
  while (i < s.size() && tchar(static_cast<unsigned char>(s[i])))
    ++i;
  return i;
}

/// A trailer's field line: a token, a colon, and a value of field
/// characters (the OWS around it is among them).
bool is_field_line(std::string_view line) noexcept {
  auto colon = line.find(':');
  if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
    return false;
  auto value = line.substr(colon + 1);
  return std::all_of(value.begin(), value.end(), [](char c) {
    return field_char(static_cast<unsigned char>(c));
  });
}

} // namespace

bool is_token(std::string_view s) noexcept {
  return !s.empty() && token_end(s, 0) == s.size();
}

bool is_chunk_ext(std::string_view s) noexcept {
  std::size_t i = 0;
  auto skip_ws = [&] {
    while (i < s.size() && ws(s[i]))
      ++i;
  };
  while (i < s.size()) {
    skip_ws();
    if (i == s.size() || s[i] != ';')
      return false;
    ++i;
    skip_ws();
    auto e = token_end(s, i);
    if (e == i)
      return false;
    i = e;
    auto before = i;
    skip_ws();
    if (i == s.size() || s[i] != '=') {
      i = before; // no value: what follows must be another extension
      continue;
    }
    ++i;
    skip_ws();
    if (i < s.size() && s[i] == '"') {
      if (!quoted(s, i))
        return false;
    } else {
      e = token_end(s, i);
      if (e == i)
        return false;
      i = e;
    }
  }
  return true;
}

void chunked_decoder::fail(int status, std::string message) {
  st_ = state::failed;
  if (!error_)
    error_ = parse_error{status, std::move(message)};
}

bool chunked_decoder::count_line_byte() {
  if (++line_bytes_ <= max_lines_)
    return true;
  fail(431, "Chunk extensions and trailers exceed " + std::to_string(max_lines_)
                + " bytes");
  return false;
}

void chunked_decoder::end_size_line() {
  if (!line_.empty() && !is_chunk_ext(line_))
    return fail(400, std::string{malformed} + "chunk extension is malformed");
  line_.clear();
  st_ = size_ == 0 ? state::trailer : state::data;
  left_ = size_;
  size_ = 0;
  digits_ = 0;
}

void chunked_decoder::end_trailer_line() {
  if (line_.empty()) {
    st_ = state::done;
    return;
  }
  if (!is_field_line(line_))
    return fail(400, std::string{malformed} + "trailer field is malformed");
  line_.clear();
  st_ = state::trailer;
}

bool chunked_decoder::line_byte(unsigned char c) {
  bool size_line = st_ == state::line;
  if (c == '\r') {
    st_ = size_line ? state::line_lf : state::trailer_lf;
    return true;
  }
  if (c == '\n') {
    fail(400, std::string{malformed}
                  + (size_line ? "a chunk-size line must end in CRLF"
                               : "a trailer line must end in CRLF"));
    return false;
  }
  if (!count_line_byte())
    return false;
  line_.push_back(static_cast<char>(c));
  return true;
}

std::size_t chunked_decoder::feed(std::string_view data, std::string& body) {
  auto bad = [this](std::string_view why) {
    fail(400, std::string{malformed}.append(why));
    return std::size_t{0};
  };
  std::size_t i = 0;
  while (i < data.size() && st_ != state::done && st_ != state::failed) {
    auto c = static_cast<unsigned char>(data[i]);
    switch (st_) {
    case state::size:
      if (auto v = hex_digit(static_cast<char>(c)); v >= 0) {
        if (++digits_ > 16)
          return bad("chunk size has more than 16 hex digits");
        size_ = size_ * 16 + static_cast<std::uint64_t>(v);
        break;
      }
      if (digits_ == 0)
        return bad("chunk size is not hex");
      if (size_ > max_body_ - std::min(max_body_, body.size())) {
        fail(413, "Request body exceeds " + std::to_string(max_body_)
                      + " bytes");
        return 0;
      }
      // The digits end the size; the rest of the line is its extensions.
      if (c != ';' && !ws(static_cast<char>(c)) && c != '\r' && c != '\n')
        return bad("chunk size is not hex");
      st_ = state::line;
      if (!line_byte(c))
        return 0;
      break;
    case state::line:
    case state::trailer:
      if (!line_byte(c))
        return 0;
      break;
    case state::line_lf:
    case state::trailer_lf: {
      bool size_line = st_ == state::line_lf;
      if (c != '\n')
        return bad(size_line ? "a chunk-size line must end in CRLF"
                             : "a trailer line must end in CRLF");
      size_line ? end_size_line() : end_trailer_line();
      if (st_ == state::failed)
        return 0;
      break;
    }
    case state::data: {
      auto n = static_cast<std::size_t>(
          std::min<std::uint64_t>(left_, data.size() - i));
      body.append(data.data() + i, n);
      left_ -= n;
      i += n;
      if (left_ == 0)
        st_ = state::data_cr;
      continue;
    }
    case state::data_cr:
    case state::data_lf:
      if (c != (st_ == state::data_cr ? '\r' : '\n'))
        return bad("a chunk's data must end in CRLF");
      st_ = st_ == state::data_cr ? state::data_lf : state::size;
      break;
    case state::done:
    case state::failed:
      break;
    }
    ++i;
  }
  return i;
}

} // namespace spool::http
