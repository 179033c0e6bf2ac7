#pragma once

/// The keys tokens are verified with (docs/security.md, "Keys"): a shared
/// secret (HS256), a public key in PEM (RS256 for RSA, EdDSA for Ed25519)
/// or a JWKS document's keys. Each key serves one algorithm only, so a
/// token cannot choose how its signature is read (algorithm confusion).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vocab/expected.hpp"

struct evp_pkey_st; // OpenSSL's EVP_PKEY

namespace spool::auth {

enum class algorithm : std::uint8_t { hs256, rs256, eddsa };

/// "HS256", "RS256", "EdDSA" (a JWS header's `alg`).
std::string_view to_string(algorithm a) noexcept;

struct verify_key {
  algorithm alg = algorithm::hs256;
  std::string kid;    ///< "" : no id (matches a token naming none or any)
  std::string secret; ///< HS256's bytes
  std::shared_ptr<evp_pkey_st> pkey; ///< RS256 and EdDSA
};

/// The keys in force; copied whole on a reload, never changed in place.
struct key_set {
  std::vector<verify_key> keys;
};

/// A shared secret; at least 32 bytes (RFC 7518 §3.2: the hash's size).
expected<key_set> keys_from_secret(std::string secret);
/// Public keys in PEM (`-----BEGIN PUBLIC KEY-----`, or a certificate's):
/// RSA of at least 2048 bits, or Ed25519. Several blocks: several keys.
expected<key_set> keys_from_pem(std::string_view pem);
/// A JWKS document (`{"keys": [...]}`): RSA (`n`, `e`), OKP Ed25519 (`x`)
/// and `oct` (`k`) keys whose `use` is absent or `sig`; others are
/// skipped. At least one must be usable.
expected<key_set> keys_from_jwks(std::string_view json);

/// The signature check of `input` (a token's `header.payload`) against
/// `signature` with `key`.
bool signature_holds(const verify_key& key, std::string_view input,
                     std::string_view signature);

} // namespace spool::auth
