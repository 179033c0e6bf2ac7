#pragma once

/// Who may do what (docs/security.md, "Roles"): Queen's three roles, each
/// including the one below it, and the access level each route and op
/// needs. Pure: no library, no I/O.

#include <cstdint>
#include <optional>
#include <string_view>

namespace spool::auth {

/// What a token grants. `none`: it names no role this server knows, so
/// it passes no route that needs one (403).
enum class role : std::uint8_t { none, read_only, read_write, admin };

/// What a route or op needs. `open`: nothing (a public path; `hello`,
/// which carries the token).
enum class access : std::uint8_t { open, read_only, read_write, admin };

/// `r` may use what needs `a`: admin ⊇ read-write ⊇ read-only.
constexpr bool permits(role r, access a) noexcept {
  return static_cast<std::uint8_t>(r) >= static_cast<std::uint8_t>(a);
}

/// "read-only", "read-write", "admin" (Queen's names); none for another.
std::optional<role> role_named(std::string_view name) noexcept;

/// The role's or level's name ("none", "open" for the others).
std::string_view to_string(role r) noexcept;
std::string_view to_string(access a) noexcept;

} // namespace spool::auth
