#include "cipher/keyring.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstdio>
#include <optional>

#include "vocab/hex.hpp"

namespace spool::cipher {

namespace {

/// The key's id; none when OpenSSL cannot hash.
std::optional<std::uint32_t>
derive_id(const std::array<unsigned char, key_bytes>& k) {
  static constexpr std::string_view label = "spool encryption key id";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1
            && EVP_DigestUpdate(ctx, label.data(), label.size()) == 1
            && EVP_DigestUpdate(ctx, k.data(), k.size()) == 1
            && EVP_DigestFinal_ex(ctx, md, &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok || len < 4)
    return std::nullopt;
  return (std::uint32_t{md[0]} << 24) | (std::uint32_t{md[1]} << 16)
         | (std::uint32_t{md[2]} << 8) | std::uint32_t{md[3]};
}

expected<key> parse_key(std::string_view hex, std::string_view source,
                        std::size_t line) {
  auto where = [&]() {
    return line ? std::string(source) + " line " + std::to_string(line)
                : std::string(source);
  };
  if (hex.size() != 2 * key_bytes)
    return make_error(errc::invalid_argument, where(),
                      ": an encryption key is 64 hex characters (32 bytes, "
                      "AES-256; make one with `openssl rand -hex 32`), got ",
                      hex.size(), " characters");
  key k;
  for (std::size_t i = 0; i < key_bytes; ++i) {
    int hi = hex_digit(hex[2 * i]);
    int lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      OPENSSL_cleanse(k.bytes.data(), k.bytes.size());
      return make_error(errc::invalid_argument, where(),
                        ": an encryption key is 64 hex characters; character ",
                        2 * i + (hi < 0 ? 1 : 2), " is not a hex digit");
    }
    k.bytes[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  auto id = derive_id(k.bytes);
  if (!id)
    return make_error(errc::internal, where(),
                      ": OpenSSL could not hash the key (SHA-256) for its id");
  k.id = *id;
  return k;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty()
         && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'
             || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

} // namespace

key::~key() {
  OPENSSL_cleanse(bytes.data(), bytes.size());
}

std::string key_id_hex(std::uint32_t id) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", id);
  return buf;
}

expected<keyring> keyring::from_hex(std::string_view hex,
                                    std::string_view source) {
  auto k = parse_key(trim(hex), source, 0);
  if (!k)
    return k.err();
  keyring out;
  out.keys_.push_back(*k);
  return out;
}

expected<keyring> keyring::from_text(std::string_view text,
                                     std::string_view source) {
  keyring out;
  std::size_t line = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto raw = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line;
    auto s = trim(raw);
    if (s.empty() || s.front() == '#')
      continue;
    auto k = parse_key(s, source, line);
    if (!k)
      return k.err();
    for (auto& known : out.keys_)
      if (known.id == k->id)
        return make_error(errc::invalid_argument, source, " line ", line,
                          ": key ", key_id_hex(k->id),
                          " is listed twice (or two keys share an id)");
    out.keys_.push_back(*k);
  }
  if (out.keys_.empty())
    return make_error(errc::invalid_argument, source,
                      ": no encryption key in the file (one key of 64 hex "
                      "characters per line; the first one encrypts)");
  return out;
}

const key* keyring::find(std::uint32_t id) const noexcept {
  for (auto& k : keys_)
    if (k.id == id)
      return &k;
  return nullptr;
}

} // namespace spool::cipher
