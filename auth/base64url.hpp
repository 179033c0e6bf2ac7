#pragma once

/// Base64url without padding (RFC 7515 §2), as JWTs and JWKs spell their
/// parts, over OpenSSL's base64 decoder.

#include <optional>
#include <string>
#include <string_view>

namespace spool::auth {

/// The bytes `text` spells, or none when it is not base64url (a `+`, `/`,
/// `=`, a length of 1 mod 4, bits left over in the last character).
std::optional<std::string> base64url_decode(std::string_view text);

/// `bytes` in base64url, unpadded (tests sign tokens with it).
std::string base64url_encode(std::string_view bytes);

} // namespace spool::auth
