#include "tls/context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <ctime>

namespace spool::tls {

namespace {

/// OpenSSL's last error as text (and the queue emptied).
std::string last_error() {
  std::string out;
  while (auto e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out = buf; // the first pushed is usually the cause; keep the last read
  }
  return out.empty() ? "unknown error" : out;
}

api_error bad(std::string_view what, const std::string& file) {
  return make_error(errc::invalid_argument, what, " '", file,
                    "': ", last_error());
}

struct ctx_holder {
  SSL_CTX* ctx;
  ~ctx_holder() {
    if (ctx != nullptr)
      SSL_CTX_free(ctx);
  }
  SSL_CTX* release() {
    auto* c = ctx;
    ctx = nullptr;
    return c;
  }
};

std::int64_t not_after_of(SSL_CTX* ctx) {
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (leaf == nullptr)
    return 0;
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) != 1)
    return 0;
  return static_cast<std::int64_t>(timegm(&tm));
}

/// What server and client contexts share: TLS 1.2 at least, no
/// renegotiation, the certificate and key when given.
expected<bool> common(SSL_CTX* ctx, const settings& s) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  if (!s.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, s.cert_file.c_str()) != 1)
      return bad("cannot load the certificate", s.cert_file);
    if (s.key_file.empty())
      return make_error(errc::invalid_argument, "a certificate needs its key "
                                                "file");
    if (SSL_CTX_use_PrivateKey_file(ctx, s.key_file.c_str(), SSL_FILETYPE_PEM)
        != 1)
      return bad("cannot load the key, or it does not match the certificate,",
                 s.key_file);
    if (SSL_CTX_check_private_key(ctx) != 1)
      return bad("the key does not match the certificate", s.key_file);
  }
  return true;
}

} // namespace

context::~context() {
  SSL_CTX_free(ctx_);
}

expected<std::shared_ptr<const context>> context::server(const settings& s) {
  if (s.cert_file.empty())
    return make_error(errc::invalid_argument,
                      "a TLS server needs a certificate file and its key");
  ctx_holder h{SSL_CTX_new(TLS_server_method())};
  if (h.ctx == nullptr)
    return make_error(errc::internal, "SSL_CTX_new: ", last_error());
  if (auto ok = common(h.ctx, s); !ok)
    return ok.err();
  // A resumed session (a ticket, a session id) is refused by a server that
  // verifies client certificates unless this names what it belongs to.
  static const unsigned char session_context[] = "spool";
  SSL_CTX_set_session_id_context(h.ctx, session_context,
                                 sizeof session_context - 1);
  if (!s.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(h.ctx, s.ca_file.c_str(), nullptr) != 1)
      return bad("cannot load the CA file", s.ca_file);
    if (auto* names = SSL_load_client_CA_file(s.ca_file.c_str()))
      SSL_CTX_set_client_CA_list(h.ctx, names);
    SSL_CTX_set_verify(
        h.ctx,
        SSL_VERIFY_PEER
            | (s.require_client_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
        nullptr);
  } else if (s.require_client_cert) {
    return make_error(errc::invalid_argument,
                      "requiring client certificates needs a CA file to "
                      "verify them with");
  }
  ERR_clear_error();
  std::shared_ptr<context> c{new context(h.release(), s)};
  c->not_after_ = not_after_of(c->ctx_);
  return std::shared_ptr<const context>{std::move(c)};
}

expected<std::shared_ptr<const context>> context::client(const settings& s) {
  ctx_holder h{SSL_CTX_new(TLS_client_method())};
  if (h.ctx == nullptr)
    return make_error(errc::internal, "SSL_CTX_new: ", last_error());
  if (auto ok = common(h.ctx, s); !ok)
    return ok.err();
  if (s.verify_peer) {
    if (!s.ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(h.ctx, s.ca_file.c_str(), nullptr) != 1)
        return bad("cannot load the CA file", s.ca_file);
    } else if (SSL_CTX_set_default_verify_paths(h.ctx) != 1) {
      return make_error(errc::internal, "no system CA store: ", last_error());
    }
    SSL_CTX_set_verify(h.ctx, SSL_VERIFY_PEER, nullptr);
  }
  ERR_clear_error();
  std::shared_ptr<context> c{new context(h.release(), s)};
  c->not_after_ = not_after_of(c->ctx_);
  return std::shared_ptr<const context>{std::move(c)};
}

} // namespace spool::tls
