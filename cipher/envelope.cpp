#include "cipher/envelope.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>

namespace spool::cipher {

namespace {

constexpr std::size_t aad_bytes = 5;
/// Nonces drawn per call to the DRBG: one call serves many payloads.
constexpr std::size_t pool_nonces = 64;

/// AES-256-GCM, fetched once: an implicit fetch on every init costs more
/// than encrypting a small payload (OpenSSL 3).
const EVP_CIPHER* aes_gcm() {
  static EVP_CIPHER* c = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
  return c;
}

/// One OpenSSL context, keyed once per key: a payload then sets only its
/// nonce (the key schedule is not computed again per payload).
struct keyed_ctx {
  EVP_CIPHER_CTX* p = EVP_CIPHER_CTX_new();
  std::uint32_t id = 0;
  std::array<unsigned char, key_bytes> bytes{};
  bool keyed = false;
  bool encrypting = false;
  ~keyed_ctx() {
    EVP_CIPHER_CTX_free(p);
    OPENSSL_cleanse(bytes.data(), bytes.size());
  }
  keyed_ctx() = default;
  keyed_ctx(const keyed_ctx&) = delete;
  keyed_ctx& operator=(const keyed_ctx&) = delete;

  /// Ready for one payload under `k` and `nonce`; false when OpenSSL fails.
  bool start(const key& k, const unsigned char* nonce, bool encrypt) {
    if (!p || !aes_gcm())
      return false;
    if (!keyed || encrypting != encrypt || id != k.id || bytes != k.bytes) {
      keyed = false;
      int ok = encrypt ? EVP_EncryptInit_ex(p, aes_gcm(), nullptr,
                                            k.bytes.data(), nullptr)
                       : EVP_DecryptInit_ex(p, aes_gcm(), nullptr,
                                            k.bytes.data(), nullptr);
      if (ok != 1)
        return false;
      keyed = true;
      encrypting = encrypt;
      id = k.id;
      bytes = k.bytes;
    }
    return (encrypt ? EVP_EncryptInit_ex(p, nullptr, nullptr, nullptr, nonce)
                    : EVP_DecryptInit_ex(p, nullptr, nullptr, nullptr, nonce))
           == 1;
  }
};

api_error openssl_failed(const char* what) {
  return make_error(errc::internal, "encryption at rest: OpenSSL ", what,
                    " failed");
}

std::uint32_t get_u32(const unsigned char* in) {
  return (std::uint32_t{in[0]} << 24) | (std::uint32_t{in[1]} << 16)
         | (std::uint32_t{in[2]} << 8) | std::uint32_t{in[3]};
}

int as_int(std::size_t n) {
  return static_cast<int>(n);
}

} // namespace

expected<std::uint32_t> envelope_key_id(std::string_view envelope) {
  if (envelope.size() < envelope_overhead)
    return make_error(errc::internal, "encrypted payload of ", envelope.size(),
                      " bytes is shorter than its envelope (",
                      envelope_overhead, " bytes)");
  auto* p = reinterpret_cast<const unsigned char*>(envelope.data());
  if (p[0] != envelope_version)
    return make_error(errc::internal, "encrypted payload of version ",
                      int{p[0]}, " (this server reads version ",
                      int{envelope_version}, ")");
  return get_u32(p + 1);
}

struct encryptor::impl {
  keyed_ctx ctx;
  std::array<unsigned char, pool_nonces * nonce_bytes> pool{};
  std::size_t used = pool_nonces; ///< nonces taken from `pool`
};

encryptor::encryptor() : impl_(std::make_unique<impl>()) {
}

encryptor::~encryptor() = default;

expected<void> encryptor::encrypt(const keyring& keys, std::string_view clear,
                                  std::string& out) {
  auto& s = *impl_;
  if (clear.size() > static_cast<std::size_t>(INT32_MAX) - envelope_overhead)
    return make_error(errc::too_large, "payload too large to encrypt");
  if (s.used == pool_nonces) {
    if (RAND_bytes(s.pool.data(), as_int(s.pool.size())) != 1)
      return openssl_failed("RAND_bytes");
    s.used = 0;
  }
  const unsigned char* nonce = s.pool.data() + s.used * nonce_bytes;
  ++s.used;
  auto& k = keys.current();
  auto start = out.size();
  out.resize(start + envelope_overhead + clear.size());
  auto* p = reinterpret_cast<unsigned char*>(out.data() + start);
  p[0] = envelope_version;
  for (int i = 0; i < 4; ++i)
    p[1 + i] = static_cast<unsigned char>((k.id >> (24 - 8 * i)) & 0xff);
  std::copy(nonce, nonce + nonce_bytes, p + aad_bytes);
  unsigned char* ct = p + aad_bytes + nonce_bytes;
  int n = 0;
  int tail = 0;
  bool ok
      = s.ctx.start(k, p + aad_bytes, true)
        && EVP_EncryptUpdate(s.ctx.p, nullptr, &n, p, as_int(aad_bytes)) == 1
        && EVP_EncryptUpdate(
               s.ctx.p, ct, &n,
               reinterpret_cast<const unsigned char*>(clear.data()),
               as_int(clear.size()))
               == 1
        && EVP_EncryptFinal_ex(s.ctx.p, ct + n, &tail) == 1
        && EVP_CIPHER_CTX_ctrl(s.ctx.p, EVP_CTRL_GCM_GET_TAG, as_int(tag_bytes),
                               ct + clear.size())
               == 1;
  if (!ok) {
    out.resize(start);
    return openssl_failed("AES-256-GCM encryption");
  }
  return {};
}

expected<void> key_present(const keyring* keys, std::string_view envelope) {
  auto id = envelope_key_id(envelope);
  if (!id)
    return id.err();
  if (!keys)
    return make_error(errc::internal, "payload encrypted with key ",
                      key_id_hex(*id),
                      ", and this server has no encryption key (start it "
                      "with --encryption-key-file)");
  if (!keys->find(*id))
    return make_error(errc::internal, "payload encrypted with key ",
                      key_id_hex(*id),
                      ", which is not configured on this server (add it to "
                      "--encryption-key-file)");
  return {};
}

expected<std::string> decrypt(const keyring& keys, std::string_view envelope) {
  auto id = envelope_key_id(envelope);
  if (!id)
    return id.err();
  const key* k = keys.find(*id);
  if (!k) // the error `key_present` words
    return key_present(&keys, envelope).err();
  // One context per thread (the gateway's conversions run on the actor
  // system's threads), keyed again only when the key changes.
  thread_local keyed_ctx ctx;
  auto* p = reinterpret_cast<const unsigned char*>(envelope.data());
  std::size_t len = envelope.size() - envelope_overhead;
  const unsigned char* ct = p + aad_bytes + nonce_bytes;
  std::string clear(len, '\0');
  auto* pt = reinterpret_cast<unsigned char*>(clear.data());
  std::array<unsigned char, tag_bytes> tag{};
  std::copy(ct + len, ct + len + tag_bytes, tag.begin());
  int n = 0;
  int tail = 0;
  bool ok = ctx.start(*k, p + aad_bytes, false)
            && EVP_DecryptUpdate(ctx.p, nullptr, &n, p, as_int(aad_bytes)) == 1
            && EVP_DecryptUpdate(ctx.p, pt, &n, ct, as_int(len)) == 1
            && EVP_CIPHER_CTX_ctrl(ctx.p, EVP_CTRL_GCM_SET_TAG,
                                   as_int(tag_bytes), tag.data())
                   == 1;
  if (!ok)
    return openssl_failed("AES-256-GCM decryption");
  if (EVP_DecryptFinal_ex(ctx.p, pt + n, &tail) != 1) {
    // Nothing of an unauthenticated plaintext leaves this function.
    OPENSSL_cleanse(clear.data(), clear.size());
    return make_error(errc::internal,
                      "encrypted payload failed its integrity check under "
                      "key ",
                      key_id_hex(*id),
                      ": the bytes were changed, or another key has that id");
  }
  return clear;
}

} // namespace spool::cipher
