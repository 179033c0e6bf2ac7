// What the `spool` commands share (cli/common.hpp).

#include "cli/common.hpp"

#include <algorithm>
#include <iostream>

#include "wire/rfc3339.hpp"

namespace spool::cli {

exit_code code_of(const api_error& e) {
  switch (e.code) {
  case errc::not_found:
    return exit_code::not_found;
  case errc::bad_request:
  case errc::invalid_argument:
  case errc::too_large:
  case errc::unknown_op:
    return exit_code::refused;
  case errc::unavailable:
  case errc::not_leader:
    return exit_code::unavailable;
  case errc::queue_full:
  case errc::storage_full:
  case errc::tx_aborted:
  case errc::cross_slot:
    return exit_code::rejected;
  case errc::unauthenticated:
  case errc::forbidden:
    return exit_code::denied;
  case errc::internal:
    return exit_code::failed;
  }
  return exit_code::failed;
}

std::optional<std::string> context::check_server() {
  auto colon = server.rfind(':');
  host = colon == std::string::npos ? server : server.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2); // [::1]:6690
  if (host.empty())
    return "--server takes host:port, got '" + server + "'";
  if (colon == std::string::npos)
    return std::nullopt; // the default port
  auto p = server.substr(colon + 1);
  char* end = nullptr;
  auto n = std::strtoul(p.c_str(), &end, 10);
  if (p.empty() || *end || n == 0 || n > 65535)
    return "--server takes host:port with a port 1..65535, got '" + server
           + "'";
  port = static_cast<std::uint16_t>(n);
  return std::nullopt;
}

std::optional<std::string> context::check_tls() {
  if (!tls)
    return std::nullopt;
  tls::settings ts;
  ts.ca_file = ca;
  auto made = tls::context::client(ts);
  if (!made)
    return made.err().message;
  tls_context = std::move(*made);
  return std::nullopt;
}

client::client& context::conn() {
  if (!conn_) {
    client::options o;
    o.host = host;
    o.port = port;
    o.request_timeout = timeout;
    o.connect_timeout = std::min(timeout, o.connect_timeout);
    o.fail_unconnected = true; // a command is told at once, not in 30 s
    if (!token.empty())
      o.token = [t = token] { return t; };
    o.tls = tls_context;
    conn_ = std::make_unique<client::client>(o);
  }
  return *conn_;
}

bool context::never_connected() const {
  return conn_ && conn_->async().connects() == 0
         && !conn_->async().heard_from_server();
}

int fail(const context& ctx, const api_error& e) {
  if (ctx.as_json)
    print_json(
        {{"error",
          {{"code", std::string{to_string(e.code)}}, {"message", e.message}}}});
  else
    std::fprintf(stderr, "error: %s: %s\n",
                 std::string{to_string(e.code)}.c_str(), e.message.c_str());
  if (e.code == errc::unavailable && ctx.never_connected())
    std::fprintf(stderr,
                 "hint: is spoold running at %s? spool speaks the msgpack "
                 "door (port 6690 by default), not the HTTP door (6632); "
                 "name another with --server host:port or SPOOL_SERVER\n",
                 ctx.server.c_str());
  if (e.code == errc::unauthenticated)
    std::fprintf(stderr,
                 ctx.token.empty()
                     ? "hint: this server wants a token: give --token or "
                       "SPOOL_TOKEN (docs/security.md)\n"
                     : "hint: the server refused the token (expired, or "
                       "signed with another key): get a fresh one\n");
  if (e.code == errc::forbidden)
    std::fprintf(stderr,
                 e.message.find(" claim") != std::string::npos
                     ? "hint: the token is restricted to some queues or "
                       "consumer groups (docs/security.md, \"Tokens "
                       "restricted to queues and groups\")\n"
                     : "hint: the token's role does not allow this "
                       "(docs/security.md, \"Roles\")\n");
  return code_of(e);
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "error: %s (see --help)\n", message.c_str());
  return exit_code::usage;
}

std::string joined(std::span<const std::string_view> words) {
  std::string out;
  for (auto w : words)
    out += (out.empty() ? "" : ", ") + std::string{w};
  return out;
}

void print_json(const json& j) {
  std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

table::table(std::vector<std::string> header) : header_(std::move(header)) {
}

void table::add(std::vector<std::string> row) {
  rows_.push_back(std::move(row));
}

void table::print() const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  };
  measure(header_);
  for (auto& r : rows_)
    measure(r);
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i) {
      out += r[i];
      if (i + 1 < r.size())
        out += std::string(width[i] - r[i].size() + 2, ' ');
    }
    std::cout << out << "\n";
  };
  line(header_);
  for (auto& r : rows_)
    line(r);
}

std::string time_text(micros t) {
  return t > 0 ? timefmt::format_millis(t) : std::string{};
}

std::string payload_text(const node::message& m, std::size_t max) {
  std::string out;
  if (!m.unreadable.empty()) {
    out = "(unreadable: " + m.unreadable + ")";
  } else if (!m.binary) {
    out = m.payload;
  } else {
    for (unsigned char c : m.payload) {
      if (c >= 0x20 && c < 0x7f && c != '\\') {
        out += static_cast<char>(c);
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      }
      if (out.size() > max)
        break;
    }
  }
  if (out.size() > max)
    out = out.substr(0, max - 3) + "...";
  return out;
}

std::string base64(std::string_view bytes) {
  static constexpr char abc[]
      = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto at = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[k]));
  };
  for (; i + 2 < bytes.size(); i += 3) {
    auto v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    for (int sh : {18, 12, 6, 0})
      out += abc[(v >> sh) & 63];
  }
  if (auto left = bytes.size() - i; left > 0) {
    auto v = at(i) << 16 | (left == 2 ? at(i + 1) << 8 : 0);
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
    out += left == 2 ? abc[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

json message_json(const node::message& m) {
  json j = {{"queue", m.queue},
            {"partition", m.partition},
            {"partitionId", m.partition_id},
            {"offset", m.offset},
            {"transactionId", m.transaction_id},
            {"createdAt", time_text(m.created_at)},
            {"deliveryCount", m.delivery_count}};
  if (!m.trace_id.empty())
    j["traceId"] = m.trace_id;
  if (!m.headers.empty()) {
    json h = json::object();
    for (auto& [k, v] : m.headers)
      h[k] = v;
    j["headers"] = h;
  }
  if (m.binary) { // as HTTP writes it
    j["data"] = base64(m.payload);
    j["dataEncoding"] = "base64";
  } else {
    auto parsed = json::parse(m.payload, nullptr, false);
    j["data"] = parsed.is_discarded() ? json(m.payload) : parsed;
  }
  if (!m.unreadable.empty())
    j["dataError"] = m.unreadable;
  if (!m.lease_id.empty()) {
    j["leaseId"] = m.lease_id;
    j["leaseEpoch"] = m.lease_epoch;
  }
  return j;
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view s) {
  // At most 2^40 ms (about 35 years): beyond is a typo, and would overflow
  // the clocks' arithmetic.
  constexpr std::int64_t cap = std::int64_t{1} << 40;
  if (s.empty())
    return std::nullopt;
  std::int64_t total = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    std::int64_t n = 0;
    std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      n = n * 10 + (s[i++] - '0');
      if (n > cap)
        return std::nullopt;
    }
    if (i == start)
      return std::nullopt;
    std::size_t u = i;
    while (i < s.size() && (s[i] < '0' || s[i] > '9'))
      ++i;
    auto unit = s.substr(u, i - u);
    std::int64_t ms = unit == "ms"  ? 1
                      : unit == "s" ? 1000
                      : unit == "m" ? 60'000
                      : unit == "h" ? 3'600'000
                      : unit == "d" ? 86'400'000
                                    : 0;
    if (ms == 0 || n > (cap - total) / ms)
      return std::nullopt;
    total += n * ms;
  }
  return std::chrono::milliseconds{total};
}

std::optional<micros> parse_time(std::string_view s) {
  if (s == "now")
    return system_wall_now();
  return timefmt::parse_rfc3339(s);
}

} // namespace spool::cli
