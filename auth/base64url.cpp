#include "auth/base64url.hpp"

#include <openssl/evp.h>

namespace spool::auth {

namespace {

bool url_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
         || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/// The character's 6 bits (a url character).
unsigned value(char c) noexcept {
  if (c >= 'A' && c <= 'Z')
    return static_cast<unsigned>(c - 'A');
  if (c >= 'a' && c <= 'z')
    return static_cast<unsigned>(c - 'a' + 26);
  if (c >= '0' && c <= '9')
    return static_cast<unsigned>(c - '0' + 52);
  return c == '-' ? 62u : 63u;
}

} // namespace

std::optional<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 == 1)
    return std::nullopt;
  std::string std64;
  std64.reserve(text.size() + 3);
  for (char c : text) {
    if (!url_char(c))
      return std::nullopt;
    std64 += c == '-' ? '+' : c == '_' ? '/' : c;
  }
  // The last character's unused low bits must be zero (one spelling per
  // value: a token altered there would still verify otherwise).
  std::size_t pad = (4 - text.size() % 4) % 4;
  if (pad != 0) {
    unsigned last = value(text.back());
    if ((pad == 2 && (last & 0x0f) != 0) || (pad == 1 && (last & 0x03) != 0))
      return std::nullopt;
  }
  std64.append(pad, '=');
  std::string out(std64.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(std64.data()),
                          static_cast<int>(std64.size()));
  if (n < 0)
    return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

std::string base64url_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=')
    out.pop_back();
  for (char& c : out)
    c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

} // namespace spool::auth
