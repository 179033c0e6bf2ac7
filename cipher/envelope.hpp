#pragma once

/// One payload encrypted at rest (docs/security.md, "Encryption at rest"):
///
///   u8 version (1) | u32 key id, big-endian | 12-byte nonce |
///   ciphertext (as long as the payload) | 16-byte GCM tag
///
/// AES-256-GCM; the first five bytes are the additional authenticated data,
/// so a changed key id or version fails like a changed ciphertext. The
/// nonce is fresh per payload, drawn from OpenSSL's DRBG (NIST SP 800-38D
/// §8.2.2: random 96-bit nonces, at most 2^32 payloads per key).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cipher/keyring.hpp"
#include "vocab/expected.hpp"

namespace spool::cipher {

inline constexpr std::uint8_t envelope_version = 1;
inline constexpr std::size_t nonce_bytes = 12;
inline constexpr std::size_t tag_bytes = 16;
inline constexpr std::size_t envelope_overhead
    = 1 + 4 + nonce_bytes + tag_bytes;

/// The key id an envelope names, or an error when it is too short or of
/// another version.
expected<std::uint32_t> envelope_key_id(std::string_view envelope);

/// Encrypts under a keyring's current key. Keeps one OpenSSL context and a
/// pool of random nonce bytes; one per thread or actor.
class encryptor {
public:
  encryptor();
  ~encryptor();
  encryptor(const encryptor&) = delete;
  encryptor& operator=(const encryptor&) = delete;

  /// Appends the envelope of `clear` under `keys.current()` to `out`.
  /// Fails only when OpenSSL does (no randomness, no memory).
  expected<void> encrypt(const keyring& keys, std::string_view clear,
                         std::string& out);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Whether `keys` (none: no key configured) holds the key `envelope`
/// names: the error `decrypt` gives for a missing key, without decrypting.
expected<void> key_present(const keyring* keys, std::string_view envelope);

/// The payload in `envelope`, or an error that says why it cannot be given:
/// an unknown key id (the key is not configured), or a failed tag (another
/// key under the same id, or changed bytes). Never returns unchecked bytes.
expected<std::string> decrypt(const keyring& keys, std::string_view envelope);

} // namespace spool::cipher
