#include "protocol/http/url.hpp"

#include <algorithm>

#include "wire/spelling.hpp"

namespace spool::http {

std::optional<std::string> percent_decode(std::string_view s,
                                          bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size())
        return std::nullopt;
      int hi = hex_digit(s[i + 1]);
      int lo = hex_digit(s[i + 2]);
      if (hi < 0 || lo < 0)
        return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::optional<query_params> query_params::parse(std::string_view query,
                                                std::string* bad) {
  query_params q;
  while (!query.empty()) {
    auto amp = query.find('&');
    auto part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{}
                                          : query.substr(amp + 1);
    if (part.empty())
      continue;
    auto eq = part.find('=');
    auto key = percent_decode(part.substr(0, eq), true);
    auto value = percent_decode(
        eq == std::string_view::npos ? std::string_view{} : part.substr(eq + 1),
        true);
    if (!key || !value) {
      if (bad)
        *bad = std::string{part};
      return std::nullopt;
    }
    q.params_.emplace_back(std::move(*key), std::move(*value));
  }
  return q;
}

std::optional<std::string_view> query_params::get(std::string_view key) const {
  for (auto& [k, v] : params_)
    if (k == key)
      return std::string_view{v};
  return std::nullopt;
}

namespace {

/// A key as a header (and a quoted log field) may carry it: printable
/// ASCII kept but `%`, `"` and `\`; the rest as %XX; at most 64 bytes.
std::string header_safe(std::string_view key) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : key.substr(0, 64)) {
    auto c = static_cast<unsigned char>(ch);
    if (c > 0x20 && c < 0x7f && c != '%' && c != '"' && c != '\\') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (key.size() > 64)
    out += "...";
  return out;
}

} // namespace

std::string unknown_keys_warning(const query_params& q,
                                 std::span<const std::string_view> known) {
  // Bounded work whatever the query holds (a request line of 64 KiB is
  // some 20,000 keys): the first five unknown keys are named, the rest
  // only counted (a repeat among them counts again).
  std::string out;
  std::size_t count = 0;
  std::vector<std::string_view> named;
  for (auto& [key, value] : q.all()) {
    if (std::find(known.begin(), known.end(), key) != known.end()
        || std::find(named.begin(), named.end(), key) != named.end())
      continue;
    if (++count > 5)
      continue;
    named.push_back(key);
    if (!out.empty())
      out += "; ";
    out += "unknown query key " + header_safe(key);
    if (auto near = wire::closest(key, known))
      out += " (did you mean " + std::string{*near} + "?)";
  }
  if (count > 5)
    out += "; and " + std::to_string(count - 5) + " more";
  return out;
}

} // namespace spool::http
