// libFuzzer target: the TLS record path (tls/channel.hpp). The input, cut
// in pieces, is what a client sent to a server channel, and what a server
// sent to a client channel: the handshake and records driven through
// memory BIOs. No crash, leak or sanitizer report; a channel that refused
// a piece refuses everything after it; plaintext appears only once the
// handshake ended.

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unistd.h>

#include "tls/channel.hpp"

namespace {

/// A self-signed certificate and its key in files of their own, made once.
std::shared_ptr<const spool::tls::context> server_context() {
  static auto ctx = [] {
    EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("fuzz"),
                               -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509_sign(x, key, EVP_sha256());
    char cert_path[] = "/tmp/spool-fuzz-cert-XXXXXX";
    char key_path[] = "/tmp/spool-fuzz-key-XXXXXX";
    FILE* c = fdopen(mkstemp(cert_path), "w");
    PEM_write_X509(c, x);
    std::fclose(c);
    FILE* k = fdopen(mkstemp(key_path), "w");
    PEM_write_PrivateKey(k, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(k);
    X509_free(x);
    EVP_PKEY_free(key);
    spool::tls::settings s;
    s.cert_file = cert_path;
    s.key_file = key_path;
    auto made = spool::tls::context::server(s);
    ::unlink(cert_path);
    ::unlink(key_path);
    if (!made)
      std::abort();
    return *made;
  }();
  return ctx;
}

std::shared_ptr<const spool::tls::context> client_context() {
  static auto ctx = [] {
    spool::tls::settings s;
    s.verify_peer = false; // the input plays any server
    auto made = spool::tls::context::client(s);
    if (!made)
      std::abort();
    return *made;
  }();
  return ctx;
}

void drive(spool::tls::channel& ch, const std::uint8_t* data, std::size_t size,
           std::size_t piece) {
  std::string plain;
  std::string out;
  bool refused = false;
  for (std::size_t at = 0; at < size; at += piece) {
    auto n = std::min(piece, size - at);
    bool ok = ch.feed({reinterpret_cast<const char*>(data + at), n}, plain);
    if (refused && ok)
      std::abort(); // a refused channel stays refused
    refused = refused || !ok;
    if (!ch.handshake_done() && !plain.empty())
      std::abort();
    ch.take_output(out);
    out.clear();
  }
  ch.seal("reply", out);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  if (size == 0)
    return 0;
  std::size_t piece = 1 + data[0] % 64 * 37;
  {
    spool::tls::channel server{server_context(), true};
    drive(server, data + 1, size - 1, piece);
  }
  spool::tls::channel client{client_context(), false, "fuzz"};
  client.start();
  drive(client, data + 1, size - 1, piece);
  return 0;
}
