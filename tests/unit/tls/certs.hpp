#pragma once

// Certificates made in tests: a CA, and leaves it signs (a server's with a
// DNS name and an IP in subjectAltName, a client's), written as PEM files.

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "tls/context.hpp"

namespace spool::test {

struct pem_pair {
  std::string cert_file;
  std::string key_file;
};

class cert_maker {
public:
  explicit cert_maker(std::filesystem::path dir) : dir_(std::move(dir)) {
    ca_key_ = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    ca_ = make("Spool Test CA", ca_key_, nullptr, nullptr, true, "", 3650);
    ca_file_ = write_cert("ca.pem", ca_);
  }
  ~cert_maker() {
    X509_free(ca_);
    EVP_PKEY_free(ca_key_);
  }
  cert_maker(const cert_maker&) = delete;
  cert_maker& operator=(const cert_maker&) = delete;

  const std::string& ca_file() const {
    return ca_file_;
  }

  /// A client's context trusting this CA, presenting `own` (mutual TLS)
  /// when given.
  std::shared_ptr<const tls::context> client_context(const pem_pair* own
                                                     = nullptr) const {
    tls::settings s;
    s.ca_file = ca_file_;
    if (own) {
      s.cert_file = own->cert_file;
      s.key_file = own->key_file;
    }
    auto c = tls::context::client(s);
    if (!c)
      throw std::runtime_error("client context: " + c.err().message);
    return *c;
  }

  /// A leaf for `cn`, signed by the CA, with `san` ("DNS:localhost,
  /// IP:127.0.0.1"; "" for none), valid `days` (negative: expired).
  pem_pair leaf(const std::string& name, const std::string& cn,
                const std::string& san, int days = 30) {
    EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    X509* cert = make(cn, key, ca_, ca_key_, false, san, days);
    pem_pair p{write_cert(name + ".pem", cert), write_key(name + ".key", key)};
    X509_free(cert);
    EVP_PKEY_free(key);
    return p;
  }

private:
  static X509* make(const std::string& cn, EVP_PKEY* key, X509* issuer,
                    EVP_PKEY* issuer_key, bool ca, const std::string& san,
                    int days) {
    X509* x = X509_new();
    X509_set_version(x, 2);
    static long serial = 1;
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    if (days >= 0) {
      X509_gmtime_adj(X509_getm_notBefore(x), -3600);
      X509_gmtime_adj(X509_getm_notAfter(x), 86400L * days);
    } else {
      X509_gmtime_adj(X509_getm_notBefore(x), 86400L * (days - 1));
      X509_gmtime_adj(X509_getm_notAfter(x), 86400L * days);
    }
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(
        name, "CN", MBSTRING_ASC,
        reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer ? issuer : x, x, nullptr, nullptr, 0);
    auto add = [&](int nid, const std::string& value) {
      X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &v3, nid, value.c_str());
      X509_add_ext(x, e, -1);
      X509_EXTENSION_free(e);
    };
    add(NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
    if (ca)
      add(NID_key_usage, "critical,keyCertSign,cRLSign");
    if (!san.empty())
      add(NID_subject_alt_name, san);
    X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256());
    return x;
  }

  std::string write_cert(const std::string& name, X509* x) {
    auto path = (dir_ / name).string();
    FILE* f = std::fopen(path.c_str(), "w");
    PEM_write_X509(f, x);
    std::fclose(f);
    return path;
  }
  std::string write_key(const std::string& name, EVP_PKEY* k) {
    auto path = (dir_ / name).string();
    FILE* f = std::fopen(path.c_str(), "w");
    PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    return path;
  }

  std::filesystem::path dir_;
  EVP_PKEY* ca_key_ = nullptr;
  X509* ca_ = nullptr;
  std::string ca_file_;
};

} // namespace spool::test
