#include "auth/cert_roles.hpp"

namespace spool::auth {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty()
         && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

} // namespace

expected<cert_roles> cert_roles::parse(std::string_view text,
                                       std::string_view source) {
  cert_roles out;
  std::size_t number = 0;
  while (!text.empty()) {
    auto end = text.find('\n');
    auto line = trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++number;
    if (line.empty() || line.front() == '#')
      continue;
    auto space = line.find_first_of(" \t");
    auto name = line.substr(0, space);
    auto subject = space == std::string_view::npos ? std::string_view{}
                                                   : trim(line.substr(space));
    auto where = [&] { return concat(source, " line ", number, ": "); };
    auto r = role_named(name);
    if (!r)
      return make_error(errc::invalid_argument, where(), "'", name,
                        "' is not a role (read-only, read-write or admin)");
    if (subject.empty())
      return make_error(errc::invalid_argument, where(),
                        "no subject after the role (write '", name,
                        " CN=...,O=...', as openssl x509 -noout -subject "
                        "-nameopt RFC2253 prints it)");
    if (!out.by_subject_.emplace(std::string{subject}, *r).second)
      return make_error(errc::invalid_argument, where(), "subject '", subject,
                        "' is listed twice");
  }
  return out;
}

std::optional<role> cert_roles::find(std::string_view subject) const {
  if (subject.empty())
    return std::nullopt;
  auto it = by_subject_.find(subject);
  if (it == by_subject_.end())
    return std::nullopt;
  return it->second;
}

} // namespace spool::auth
