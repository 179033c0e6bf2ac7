#include "auth/roles.hpp"

namespace spool::auth {

std::optional<role> role_named(std::string_view name) noexcept {
  if (name == "read-only")
    return role::read_only;
  if (name == "read-write")
    return role::read_write;
  if (name == "admin")
    return role::admin;
  return std::nullopt;
}

std::string_view to_string(role r) noexcept {
  switch (r) {
  case role::read_only:
    return "read-only";
  case role::read_write:
    return "read-write";
  case role::admin:
    return "admin";
  case role::none:
    break;
  }
  return "none";
}

std::string_view to_string(access a) noexcept {
  switch (a) {
  case access::read_only:
    return "read-only";
  case access::read_write:
    return "read-write";
  case access::admin:
    return "admin";
  case access::open:
    break;
  }
  return "open";
}

} // namespace spool::auth
