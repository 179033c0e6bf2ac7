#include "auth/keys.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <simdjson.h>

#include "auth/base64url.hpp"

namespace spool::auth {

namespace {

constexpr int min_rsa_bits = 2048;

/// Empties this thread's OpenSSL error queue on the way out: a refused
/// key or signature leaves its reason there, where a later TLS call on
/// the thread would read it as its own.
struct clear_errors_at_exit {
  ~clear_errors_at_exit() {
    ERR_clear_error();
  }
};

std::shared_ptr<evp_pkey_st> own(EVP_PKEY* k) {
  return {k, EVP_PKEY_free};
}

api_error bad(std::string_view what) {
  return make_error(errc::invalid_argument, what);
}

/// RS256 for an RSA key of enough bits, EdDSA for Ed25519; else why not.
expected<verify_key> public_key(std::shared_ptr<evp_pkey_st> k,
                                std::string kid) {
  verify_key v;
  v.kid = std::move(kid);
  if (EVP_PKEY_get_base_id(k.get()) == EVP_PKEY_RSA) {
    if (EVP_PKEY_get_bits(k.get()) < min_rsa_bits)
      return bad("an RSA key must have at least 2048 bits");
    v.alg = algorithm::rs256;
  } else if (EVP_PKEY_get_base_id(k.get()) == EVP_PKEY_ED25519) {
    v.alg = algorithm::eddsa;
  } else {
    return bad("a public key must be RSA (RS256) or Ed25519 (EdDSA)");
  }
  v.pkey = std::move(k);
  return v;
}

/// One PEM block's key (PUBLIC KEY or CERTIFICATE), or why not.
expected<verify_key> pem_block(std::string_view name, const unsigned char* der,
                               long len) {
  const unsigned char* p = der;
  if (name == "PUBLIC KEY") {
    EVP_PKEY* k = d2i_PUBKEY(nullptr, &p, len);
    if (k == nullptr)
      return bad("a PUBLIC KEY block does not parse");
    return public_key(own(k), "");
  }
  if (name == "CERTIFICATE") {
    X509* cert = d2i_X509(nullptr, &p, len);
    if (cert == nullptr)
      return bad("a CERTIFICATE block does not parse");
    EVP_PKEY* k = X509_get_pubkey(cert);
    X509_free(cert);
    if (k == nullptr)
      return bad("a certificate holds no usable public key");
    return public_key(own(k), "");
  }
  if (name.find("PRIVATE") != std::string_view::npos)
    return bad("a private key is not a verification key: give the public "
               "key (openssl pkey -pubout)");
  return bad(concat("a PEM block of type ", name,
                    " is not a public key or certificate"));
}

std::optional<std::string> field(simdjson::dom::object o, const char* k) {
  std::string_view s;
  if (o[k].get_string().get(s) != simdjson::SUCCESS)
    return std::nullopt;
  return std::string{s};
}

/// An RSA key from its JWK's `n` and `e`.
expected<std::shared_ptr<evp_pkey_st>> rsa_from(const std::string& n_bytes,
                                                const std::string& e_bytes) {
  auto bn = [](const std::string& b) {
    return std::unique_ptr<BIGNUM, void (*)(BIGNUM*)>(
        BN_bin2bn(reinterpret_cast<const unsigned char*>(b.data()),
                  static_cast<int>(b.size()), nullptr),
        BN_free);
  };
  auto n = bn(n_bytes);
  auto e = bn(e_bytes);
  std::unique_ptr<OSSL_PARAM_BLD, void (*)(OSSL_PARAM_BLD*)> bld(
      OSSL_PARAM_BLD_new(), OSSL_PARAM_BLD_free);
  if (!n || !e || !bld
      || OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1
      || OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1)
    return bad("an RSA JWK's n or e does not parse");
  std::unique_ptr<OSSL_PARAM, void (*)(OSSL_PARAM*)> params(
      OSSL_PARAM_BLD_to_param(bld.get()), OSSL_PARAM_free);
  std::unique_ptr<EVP_PKEY_CTX, void (*)(EVP_PKEY_CTX*)> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr), EVP_PKEY_CTX_free);
  EVP_PKEY* k = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1
      || EVP_PKEY_fromdata(ctx.get(), &k, EVP_PKEY_PUBLIC_KEY, params.get())
             != 1)
    return bad("an RSA JWK's n or e does not make a key");
  return own(k);
}

/// One JWK: a key, none to skip it (another use or type), or an error.
expected<std::optional<verify_key>> jwk(simdjson::dom::object o) {
  auto kty = field(o, "kty");
  auto use = field(o, "use");
  if (!kty)
    return bad("a JWK has no kty");
  if (use && *use != "sig")
    return std::optional<verify_key>{};
  std::string kid = field(o, "kid").value_or("");
  auto part = [&](const char* k) -> expected<std::string> {
    auto s = field(o, k);
    std::optional<std::string> bytes;
    if (s)
      bytes = base64url_decode(*s);
    if (!bytes || bytes->empty())
      return bad(concat("a JWK of kty ", *kty, " has no base64url ", k));
    return std::move(*bytes);
  };
  if (*kty == "RSA") {
    auto n = part("n");
    if (!n)
      return n.err();
    auto e = part("e");
    if (!e)
      return e.err();
    auto k = rsa_from(*n, *e);
    if (!k)
      return k.err();
    auto v = public_key(std::move(*k), kid);
    if (!v)
      return v.err();
    return std::optional<verify_key>{std::move(*v)};
  }
  if (*kty == "OKP") {
    if (field(o, "crv").value_or("") != "Ed25519")
      return std::optional<verify_key>{};
    auto x = part("x");
    if (!x)
      return x.err();
    EVP_PKEY* k = EVP_PKEY_new_raw_public_key(
        EVP_PKEY_ED25519, nullptr,
        reinterpret_cast<const unsigned char*>(x->data()), x->size());
    if (k == nullptr)
      return bad("an Ed25519 JWK's x is not a key");
    return std::optional<verify_key>{
        verify_key{algorithm::eddsa, kid, {}, own(k)}};
  }
  if (*kty == "oct") {
    auto k = part("k");
    if (!k)
      return k.err();
    if (k->size() < 32)
      return bad("an HS256 key must have at least 32 bytes");
    return std::optional<verify_key>{
        verify_key{algorithm::hs256, kid, std::move(*k), nullptr}};
  }
  return std::optional<verify_key>{};
}

} // namespace

std::string_view to_string(algorithm a) noexcept {
  switch (a) {
  case algorithm::rs256:
    return "RS256";
  case algorithm::eddsa:
    return "EdDSA";
  case algorithm::hs256:
    break;
  }
  return "HS256";
}

expected<key_set> keys_from_secret(std::string secret) {
  if (secret.size() < 32)
    return bad("an HS256 secret must have at least 32 bytes");
  return key_set{{verify_key{algorithm::hs256, "", std::move(secret), {}}}};
}

expected<key_set> keys_from_pem(std::string_view pem) {
  clear_errors_at_exit clear; // the end of the blocks is an error too
  std::unique_ptr<BIO, int (*)(BIO*)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  key_set out;
  for (;;) {
    char* name = nullptr;
    char* header = nullptr;
    unsigned char* data = nullptr;
    long len = 0;
    if (PEM_read_bio(bio.get(), &name, &header, &data, &len) != 1)
      break;
    std::string kind = name;
    auto k = pem_block(kind, data, len);
    OPENSSL_free(name);
    OPENSSL_free(header);
    OPENSSL_free(data);
    if (!k)
      return k.err();
    out.keys.push_back(std::move(*k));
  }
  if (out.keys.empty())
    return bad("no PEM block found (a public key starts with -----BEGIN "
               "PUBLIC KEY-----)");
  return out;
}

expected<key_set> keys_from_jwks(std::string_view json) {
  clear_errors_at_exit clear;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc); err)
    return bad(concat("the JWKS is not JSON: ", simdjson::error_message(err)));
  simdjson::dom::array keys;
  if (doc["keys"].get_array().get(keys) != simdjson::SUCCESS)
    return bad("the JWKS has no \"keys\" array");
  key_set out;
  for (auto k : keys) {
    simdjson::dom::object o;
    if (k.get_object().get(o) != simdjson::SUCCESS)
      return bad("a JWKS key is not an object");
    auto v = jwk(o);
    if (!v)
      return v.err();
    if (*v)
      out.keys.push_back(std::move(**v));
  }
  if (out.keys.empty())
    return bad("the JWKS holds no signing key this server can use (RSA, "
               "Ed25519 or oct)");
  return out;
}

bool signature_holds(const verify_key& key, std::string_view input,
                     std::string_view signature) {
  clear_errors_at_exit clear;
  auto sig = reinterpret_cast<const unsigned char*>(signature.data());
  auto in = reinterpret_cast<const unsigned char*>(input.data());
  if (key.alg == algorithm::hs256) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (HMAC(EVP_sha256(), key.secret.data(),
             static_cast<int>(key.secret.size()), in, input.size(), mac, &len)
        == nullptr)
      return false;
    return signature.size() == len && CRYPTO_memcmp(mac, sig, len) == 0;
  }
  if (!key.pkey)
    return false;
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(),
                                                         EVP_MD_CTX_free);
  const EVP_MD* md = key.alg == algorithm::rs256 ? EVP_sha256() : nullptr;
  if (!ctx
      || EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, key.pkey.get())
             != 1)
    return false;
  return EVP_DigestVerify(ctx.get(), sig, signature.size(), in, input.size())
         == 1;
}

} // namespace spool::auth
