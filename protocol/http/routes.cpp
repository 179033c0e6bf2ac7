#include "protocol/http/routes.hpp"

#include "protocol/http/url.hpp"

namespace spool::http {

namespace {

std::vector<std::string_view> split(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/')
    path.remove_prefix(1);
  while (true) {
    auto slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos)
      break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

} // namespace

pattern compile(std::string_view method, std::string_view path_pattern) {
  pattern p;
  p.label = std::string{method} + " " + std::string{path_pattern};
  p.method = method;
  for (auto seg : split(path_pattern))
    p.segments.emplace_back(seg);
  return p;
}

std::optional<route_match> match(const std::vector<pattern>& patterns,
                                 std::string_view method,
                                 std::string_view path) {
  auto segs = split(path);
  for (std::size_t index = 0; index < patterns.size(); ++index) {
    auto& r = patterns[index];
    bool rest = !r.segments.empty() && r.segments.back() == "*";
    if (r.method != method
        || (rest ? segs.size() < r.segments.size()
                 : r.segments.size() != segs.size()))
      continue;
    route_match m;
    m.index = index;
    bool ok = true;
    for (std::size_t i = 0; i < segs.size() && ok; ++i) {
      if (rest && i + 1 >= r.segments.size())
        break;
      auto& want = r.segments[i];
      if (!want.empty() && want.front() == ':') {
        auto decoded = percent_decode(segs[i]);
        if (!decoded)
          m.bad_escape = true;
        else
          m.params.push_back(std::move(*decoded));
      } else {
        ok = want == segs[i];
      }
    }
    if (ok)
      return m;
  }
  return std::nullopt;
}

} // namespace spool::http
