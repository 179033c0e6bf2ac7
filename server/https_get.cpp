#include "server/https_get.hpp"

#include <asio.hpp>

#include <cctype>
#include <optional>

#include "tls/channel.hpp"

namespace spool::server {

namespace {

using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

struct url_parts {
  std::string host;
  std::string port = "443";
  std::string path = "/";
};

expected<url_parts> parse_url(const std::string& url) {
  constexpr std::string_view scheme = "https://";
  if (!url.starts_with(scheme))
    return make_error(errc::invalid_argument, "'", url,
                      "' is not an https:// URL");
  std::string_view rest{url};
  rest.remove_prefix(scheme.size());
  url_parts p;
  auto slash = rest.find_first_of("/?#");
  auto authority = rest.substr(0, slash);
  if (slash != std::string_view::npos)
    p.path = std::string{rest.substr(slash)};
  if (auto hash = p.path.find('#'); hash != std::string::npos)
    p.path.resize(hash);
  if (p.path.empty() || p.path.front() != '/')
    p.path.insert(0, "/");
  std::string_view port;
  if (authority.starts_with("[")) { // [v6]:port
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      return make_error(errc::invalid_argument, "'", url,
                        "': an IPv6 host without its ']'");
    p.host = std::string{authority.substr(1, close - 1)};
    if (close + 1 < authority.size() && authority[close + 1] == ':')
      port = authority.substr(close + 2);
  } else {
    auto colon = authority.find(':');
    p.host = std::string{authority.substr(0, colon)};
    if (colon != std::string_view::npos)
      port = authority.substr(colon + 1);
  }
  if (!port.empty())
    p.port = std::string{port};
  if (p.port.empty() || p.port.size() > 5
      || p.port.find_first_not_of("0123456789") != std::string::npos)
    return make_error(errc::invalid_argument, "'", url,
                      "': the port must be a number");
  if (p.host.empty() || authority.find('@') != std::string_view::npos
      || p.path.find_first_of(" \r\n") != std::string::npos)
    return make_error(errc::invalid_argument, "'", url, "' is not a URL ",
                      "this server fetches (https://host[:port][/path])");
  return p;
}

/// Async operations run one at a time, each within the deadline.
struct session {
  asio::io_context io;
  tcp::socket sock{io};
  clock_type::time_point deadline;

  /// Starts `op` (given a completion handler) and runs it to its end or the
  /// deadline: its error, or timed_out.
  template <class Op>
  std::error_code run(Op op) {
    std::optional<std::error_code> result;
    op([&result](std::error_code ec, auto&&...) { result = ec; });
    io.restart();
    io.run_until(deadline);
    if (result)
      return *result;
    std::error_code ignore;
    sock.close(ignore); // the operation ends (aborted) ...
    io.restart();
    io.run(); // ... and is reaped here
    return asio::error::timed_out;
  }
};

/// The Content-Length of an answer's head (up to its blank line), when
/// it has one; -1 when it has none, -2 when it is not a number.
long long content_length(const std::string& head) {
  std::string lower = head;
  for (auto& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos)
    return -1;
  auto begin = at + 17;
  auto end = lower.find("\r\n", begin);
  auto value = lower.substr(begin, end - begin);
  auto first = value.find_first_not_of(" \t");
  auto last = value.find_last_not_of(" \t");
  if (first == std::string::npos)
    return -2;
  value = value.substr(first, last - first + 1);
  if (value.size() > 18
      || value.find_first_not_of("0123456789") != std::string::npos)
    return -2;
  return std::stoll(value);
}

} // namespace

expected<std::string> https_get(const std::string& url,
                                std::chrono::milliseconds timeout,
                                std::size_t max_body) {
  auto p = parse_url(url);
  if (!p)
    return std::move(p).err();
  auto fail = [&](auto&&... why) {
    return make_error(errc::unavailable, "GET ", url, ": ",
                      std::forward<decltype(why)>(why)...);
  };
  auto ctx = tls::context::client({});
  if (!ctx)
    return fail(ctx.err().message);
  session s;
  s.deadline = clock_type::now() + timeout;
  tcp::resolver resolver{s.io};
  tcp::resolver::results_type found;
  auto ec = s.run([&](auto k) {
    resolver.async_resolve(
        p->host, p->port,
        [&found, k](std::error_code e, tcp::resolver::results_type r) mutable {
          found = std::move(r);
          k(e);
        });
  });
  if (ec)
    return fail("cannot resolve ", p->host, ": ", ec.message());
  ec = s.run([&](auto k) { asio::async_connect(s.sock, found, k); });
  if (ec)
    return fail("cannot connect: ", ec.message());
  tls::channel ch{*ctx, false, p->host};
  if (!ch.start())
    return fail(ch.error());
  auto host
      = p->host.find(':') != std::string::npos ? "[" + p->host + "]" : p->host;
  if (p->port != "443")
    host += ":" + p->port;
  std::string request = "GET " + p->path + " HTTP/1.0\r\nHost: " + host
                        + "\r\nAccept: application/json\r\n"
                          "User-Agent: spoold\r\n\r\n";
  std::string out, plain;
  ch.seal(request, out); // held until the handshake ends
  std::array<char, 16 * 1024> buf;
  bool eof = false;
  while (!eof) {
    ch.take_output(out);
    if (!out.empty()) {
      ec = s.run(
          [&](auto k) { asio::async_write(s.sock, asio::buffer(out), k); });
      if (ec)
        return fail("cannot send: ", ec.message());
      out.clear();
    }
    std::size_t n = 0;
    ec = s.run([&](auto k) {
      s.sock.async_read_some(
          asio::buffer(buf),
          [&n, k](std::error_code e, std::size_t got) mutable {
            n = got;
            k(e);
          });
    });
    if (ec == asio::error::eof)
      eof = true; // (servers often end without close_notify)
    else if (ec)
      return fail(ec == asio::error::timed_out
                      ? "no answer within " + std::to_string(timeout.count())
                            + " ms"
                      : "read: " + ec.message());
    if (n > 0 && !ch.feed({buf.data(), n}, plain))
      return fail(ch.error());
    if (plain.size() > max_body + 16 * 1024)
      return fail("an answer over ", max_body, " bytes");
    // Whole once its Content-Length is in (a server may keep the
    // connection open).
    if (auto end = plain.find("\r\n\r\n"); end != std::string::npos) {
      auto n = content_length(plain.substr(0, end + 2));
      if (n >= 0 && plain.size() - end - 4 >= static_cast<std::size_t>(n))
        break;
    }
  }
  if (!ch.handshake_done())
    return fail("closed during the TLS handshake");
  // "HTTP/1.x 200 ...\r\n" headers "\r\n\r\n" body
  auto head_end = plain.find("\r\n\r\n");
  if (!plain.starts_with("HTTP/1.") || head_end == std::string::npos)
    return fail("not an HTTP answer");
  auto line = plain.substr(0, plain.find("\r\n"));
  auto sp = line.find(' ');
  auto status
      = sp == std::string::npos ? std::string{} : line.substr(sp + 1, 3);
  if (status != "200")
    return fail("answered '", line, "'");
  auto body = plain.substr(head_end + 4);
  if (body.size() > max_body)
    return fail("an answer over ", max_body, " bytes");
  // A connection cut short (no close_notify) must not pass for the end.
  auto n = content_length(plain.substr(0, head_end + 2));
  if (n == -2)
    return fail("a Content-Length that is not a number");
  if (n >= 0 && static_cast<std::size_t>(n) > body.size())
    return fail("an answer of ", body.size(),
                " bytes where Content-Length says ", n);
  if (n >= 0)
    body.resize(static_cast<std::size_t>(n));
  return body;
}

} // namespace spool::server
