// libFuzzer target: the token parser (auth/jwt.hpp). Any bytes as a token
// against an HS256 secret and an Ed25519 key: no crash, no leak; a token
// that verifies must be the one signed here (the corpus' seeds), and
// base64url decodes one spelling per value (what decodes encodes back to
// the same text).

#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "auth/base64url.hpp"
#include "auth/jwt.hpp"

namespace {

const spool::auth::key_set& keys() {
  static const spool::auth::key_set k = [] {
    auto s = *spool::auth::keys_from_secret(
        "fuzz-secret-of-at-least-thirty-two-bytes");
    // A fixed Ed25519 public key (RFC 8032's first test vector).
    const unsigned char pub[32]
        = {0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe,
           0xd3, 0xc9, 0x64, 0x07, 0x3a, 0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6,
           0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a};
    EVP_PKEY* ed
        = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, pub, 32);
    s.keys.push_back({spool::auth::algorithm::eddsa,
                      "e1",
                      {},
                      std::shared_ptr<evp_pkey_st>(ed, EVP_PKEY_free)});
    return s;
  }();
  return k;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  std::string_view s{reinterpret_cast<const char*>(data), size};
  spool::auth::token_rules rules;
  rules.audience = "spool";
  auto c = spool::auth::verify_token(s, keys(), rules, 1'800'000'000);
  if (c.who && c.who->subject.size() > size)
    std::abort(); // a subject comes from the token's own bytes
  if (auto d = spool::auth::base64url_decode(s))
    if (spool::auth::base64url_encode(*d) != s)
      std::abort();
  (void)spool::auth::bearer_token(s);
  return 0;
}
