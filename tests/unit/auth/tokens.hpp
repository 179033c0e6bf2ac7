#pragma once

// Tokens made in tests: keys generated with OpenSSL, JWTs signed with them
// (HS256, RS256, EdDSA), and the PEM and JWKS texts the server reads.

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "auth/base64url.hpp"

namespace spool::test {

using pkey_ptr = std::shared_ptr<EVP_PKEY>;

inline pkey_ptr generate_key(const char* type, int rsa_bits = 2048) {
  EVP_PKEY* k = nullptr;
  if (std::string_view{type} == "RSA")
    k = EVP_RSA_gen(static_cast<unsigned>(rsa_bits));
  else
    k = EVP_PKEY_Q_keygen(nullptr, nullptr, type);
  if (k == nullptr)
    throw std::runtime_error("key generation failed");
  return {k, EVP_PKEY_free};
}

/// The public half in PEM (`-----BEGIN PUBLIC KEY-----`).
inline std::string public_pem(const pkey_ptr& k) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(b, k.get());
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(b);
  return out;
}

/// `header.payload.signature` with HS256 over `secret`.
inline std::string sign_hs256(std::string_view secret, std::string_view header,
                              std::string_view payload) {
  auto input
      = auth::base64url_encode(header) + "." + auth::base64url_encode(payload);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac,
       &len);
  return input + "."
         + auth::base64url_encode(
             std::string_view{reinterpret_cast<char*>(mac), len});
}

/// ... with RS256 (an RSA key) or EdDSA (an Ed25519 key).
inline std::string sign_with(const pkey_ptr& k, std::string_view header,
                             std::string_view payload) {
  auto input
      = auth::base64url_encode(header) + "." + auth::base64url_encode(payload);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool rsa = EVP_PKEY_get_base_id(k.get()) == EVP_PKEY_RSA;
  EVP_DigestSignInit(ctx, nullptr, rsa ? EVP_sha256() : nullptr, nullptr,
                     k.get());
  std::size_t n = 0;
  EVP_DigestSign(ctx, nullptr, &n,
                 reinterpret_cast<const unsigned char*>(input.data()),
                 input.size());
  std::string sig(n, '\0');
  EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &n,
                 reinterpret_cast<const unsigned char*>(input.data()),
                 input.size());
  sig.resize(n);
  EVP_MD_CTX_free(ctx);
  return input + "." + auth::base64url_encode(sig);
}

/// A JWK of the public half: RSA (`n`, `e`) or OKP Ed25519 (`x`).
inline std::string public_jwk(const pkey_ptr& k, std::string_view kid) {
  std::string out = "{\"kid\":\"" + std::string{kid} + "\",\"use\":\"sig\",";
  if (EVP_PKEY_get_base_id(k.get()) == EVP_PKEY_RSA) {
    BIGNUM* n = nullptr;
    BIGNUM* e = nullptr;
    EVP_PKEY_get_bn_param(k.get(), "n", &n);
    EVP_PKEY_get_bn_param(k.get(), "e", &e);
    auto bytes = [](BIGNUM* b) {
      std::string s(static_cast<std::size_t>(BN_num_bytes(b)), '\0');
      BN_bn2bin(b, reinterpret_cast<unsigned char*>(s.data()));
      BN_free(b);
      return auth::base64url_encode(s);
    };
    out += "\"kty\":\"RSA\",\"alg\":\"RS256\",\"n\":\"" + bytes(n)
           + "\",\"e\":\"" + bytes(e) + "\"}";
  } else {
    std::string x(32, '\0');
    std::size_t len = x.size();
    EVP_PKEY_get_raw_public_key(
        k.get(), reinterpret_cast<unsigned char*>(x.data()), &len);
    out += "\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\""
           + auth::base64url_encode(x) + "\"}";
  }
  return out;
}

} // namespace spool::test
