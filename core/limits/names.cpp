#include "core/limits/names.hpp"

#include <cstdint>

namespace spool::core {

const char* to_string(name_kind k) noexcept {
  switch (k) {
  case name_kind::queue:
    return "queue";
  case name_kind::partition:
    return "partition";
  case name_kind::group:
    return "consumerGroup";
  case name_kind::name_space:
    return "namespace";
  case name_kind::task:
    return "task";
  }
  return "name";
}

namespace {

/// Decodes the code point at `s[i]`, advancing `i`; -1 when malformed.
std::int32_t next_code_point(std::string_view s, std::size_t& i) noexcept {
  auto b = [&](std::size_t k) { return static_cast<std::uint8_t>(s[k]); };
  auto c = b(i);
  std::size_t len = 0;
  std::int32_t cp = 0;
  std::int32_t min = 0;
  if (c < 0x80) {
    ++i;
    return c;
  } else if ((c & 0xe0) == 0xc0) {
    len = 2, cp = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    len = 3, cp = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return -1;
  }
  if (i + len > s.size())
    return -1;
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xc0) != 0x80)
      return -1;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return -1;
  i += len;
  return cp;
}

bool is_control(std::int32_t cp) noexcept {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/// Every byte printable ASCII (0x20..0x7e): valid UTF-8 with no control
/// character, decided in one cheap pass (the common case: generated ids,
/// plain names).
bool printable_ascii(std::string_view s) noexcept {
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e)
      return false;
  return true;
}

api_error bad(auto&&... parts) {
  return make_error(errc::invalid_argument, parts...);
}

} // namespace

bool valid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();)
    if (next_code_point(s, i) < 0)
      return false;
  return true;
}

bool has_control(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    auto cp = next_code_point(s, i);
    if (cp < 0) {
      ++i; // malformed: not a control character (valid_utf8 says why)
      continue;
    }
    if (is_control(cp))
      return true;
  }
  return false;
}

expected<void> check_text(const char* what, std::string_view s,
                          std::size_t max) {
  if (s.size() > max)
    return bad(what, " must be at most ", max, " bytes, got ", s.size());
  if (printable_ascii(s))
    return {};
  if (!valid_utf8(s))
    return bad(what, " must be valid UTF-8");
  if (has_control(s))
    return bad(what, " must not contain control characters");
  return {};
}

expected<void> check_frame_texts(const storage::frame& f) {
  SPOOL_TRY(check_text("transactionId", f.transaction_id));
  SPOOL_TRY(check_text("traceId", f.trace_id));
  for (auto& [k, v] : f.headers) {
    if (k.empty())
      return bad("headers must not have an empty key");
    SPOOL_TRY(check_text("headers key", k));
    if (!printable_ascii(v) && !valid_utf8(v))
      return bad("headers.", k, " must be valid UTF-8");
  }
  return {};
}

expected<void> check_name(name_kind kind, std::string_view name) {
  auto what = to_string(kind);
  if (name.empty() || name.size() > max_name_bytes)
    return bad(what, " must be 1..", max_name_bytes, " bytes, got ",
               name.size());
  bool plain = printable_ascii(name);
  if (!plain && !valid_utf8(name))
    return bad(what, " must be valid UTF-8");
  if ((!plain && has_control(name)) || name.find('/') != std::string_view::npos)
    return bad(what, " must not contain '/' or control characters");
  if (name.starts_with("__")
      && !(kind == name_kind::group && name == "__QUEUE_MODE__"))
    return bad(what, " must not start with __ (reserved)");
  return {};
}

expected<void>
check_push_size(const config::push_limits& limits, std::size_t items,
                const std::function<std::size_t(std::size_t)>& payload_of) {
  if (items > limits.max_items)
    return make_error(errc::invalid_argument, "a push holds at most ",
                      limits.max_items, " items, got ", items);
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < items; ++i)
    bytes += payload_of(i);
  if (bytes > limits.max_bytes)
    return make_error(errc::too_large, "a push holds at most ",
                      limits.max_bytes, " payload bytes, got ", bytes);
  return {};
}

} // namespace spool::core
