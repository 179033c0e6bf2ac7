// libFuzzer target: the HTTP request path. Bytes are fed to the request
// parser in pieces (the first byte chooses their size); every request it
// yields goes through route matching and query parsing as the router does.
// Crashes, sanitizer reports and broken invariants are failures.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "protocol/http/parser.hpp"
#include "protocol/http/routes.hpp"
#include "protocol/http/url.hpp"

namespace {

const std::vector<spool::http::pattern>& patterns() {
  // A representative table: literals, parameters, a rest match.
  static const std::vector<spool::http::pattern> p = {
      spool::http::compile("POST", "/api/v1/push"),
      spool::http::compile("GET", "/api/v1/pop/queue/:queue"),
      spool::http::compile("GET",
                           "/api/v1/pop/queue/:queue/partition/:partition"),
      spool::http::compile(
          "POST", "/api/v1/consumer-groups/:group/queues/:queue/partitions/"
                  ":partition/seek"),
      spool::http::compile("GET", "/api/v1/consumer-groups/lagging"),
      spool::http::compile("GET", "/api/v1/consumer-groups/:group"),
      spool::http::compile("GET", "/api/v1/analytics/*"),
  };
  return p;
}

void check(bool ok) {
  if (!ok)
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  if (size == 0)
    return 0;
  std::size_t step = 1 + data[0] % 64;
  std::string_view bytes{reinterpret_cast<const char*>(data) + 1, size - 1};
  spool::http::parser_limits limits;
  limits.max_header_bytes = 4096;
  limits.max_body_bytes = 4096;
  spool::http::request_parser p{limits};
  std::string pending;
  for (std::size_t i = 0; i < bytes.size() && !p.error(); i += step) {
    pending += bytes.substr(i, step);
    while (!pending.empty() && !p.error()) {
      auto n = p.feed(pending);
      check(n <= pending.size());
      pending.erase(0, n);
      if (!p.ready()) {
        if (n == 0)
          break;
        continue;
      }
      auto req = p.take();
      check(req.body.size() <= limits.max_body_bytes);
      check(req.body.capacity() >= req.body.size() + spool::http::body_padding);
      if (auto m = spool::http::match(patterns(), req.method, req.path)) {
        check(m->index < patterns().size());
      }
      auto q = spool::http::query_params::parse(req.query);
      if (q)
        for (auto& [k, v] : q->all())
          check(k.size() <= req.query.size() && v.size() <= req.query.size());
    }
  }
  if (auto& err = p.error()) {
    check(err->status == 400 || err->status == 413 || err->status == 431
          || err->status == 501);
    // The connection writes it into JSON as it is: none of the client's
    // bytes, nothing to escape.
    for (unsigned char c : err->message)
      check(c >= 0x20 && c < 0x7f && c != '"' && c != '\\');
  }
  return 0;
}
