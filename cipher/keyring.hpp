#pragma once

/// The keys payloads are encrypted with at rest (docs/security.md,
/// "Encryption at rest"): AES-256 keys given as 64 hex characters, each
/// known by a key id derived from it, so a stored payload names the key it
/// needs and a new key can be added while old payloads stay readable. The
/// first key encrypts; every key decrypts. Pure: OpenSSL only.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vocab/expected.hpp"

namespace spool::cipher {

inline constexpr std::size_t key_bytes = 32;

struct key {
  /// The first four bytes of SHA-256("spool encryption key id" || key),
  /// big-endian: stored beside each payload, never a secret.
  std::uint32_t id = 0;
  std::array<unsigned char, key_bytes> bytes{};

  key() = default;
  key(const key&) = default;
  key& operator=(const key&) = default;
  ~key(); ///< the bytes are cleansed
};

/// "0x1a2b3c4d"-free spelling of a key id: eight lowercase hex digits.
std::string key_id_hex(std::uint32_t id);

class keyring {
public:
  /// One key of 64 hex characters (an option or QUEEN_ENCRYPTION_KEY).
  /// Errors name `source` and never echo the key.
  static expected<keyring> from_hex(std::string_view hex,
                                    std::string_view source);
  /// A key file: one key of 64 hex characters per line; blank lines and
  /// lines starting with '#' are skipped. The first key encrypts; the others
  /// only decrypt (older keys kept while their payloads are retained).
  static expected<keyring> from_text(std::string_view text,
                                     std::string_view source);

  const key& current() const noexcept {
    return keys_.front();
  }
  /// The key with `id`, or null.
  const key* find(std::uint32_t id) const noexcept;
  const std::vector<key>& keys() const noexcept {
    return keys_;
  }

private:
  std::vector<key> keys_; ///< never empty
};

} // namespace spool::cipher
