#pragma once

/// A TLS configuration: certificate and key, the CA that peers' or
/// clients' certificates must chain to, whether a client certificate is
/// required, TLS 1.2 or later only (docs/security.md, "TLS"). Immutable
/// once made: a reload (SIGHUP) makes a new one, and connections keep the
/// one they started with.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "vocab/expected.hpp"

struct ssl_ctx_st; // OpenSSL's SSL_CTX

namespace spool::tls {

struct settings {
  std::string cert_file; ///< PEM chain, leaf first (a server: required)
  std::string key_file;  ///< PEM private key of the leaf
  /// PEM CA bundle peers' certificates must chain to; "": a client
  /// uses the system's, a server asks for no client certificate.
  std::string ca_file;
  /// A server: a client certificate is asked for and must verify
  /// (mutual TLS); without it one is asked for only when `ca_file` is set,
  /// and a client may send none.
  bool require_client_cert = false;
  /// A client: the server's certificate must verify (chain and name).
  bool verify_peer = true;
};

class context {
public:
  /// A server's context (certificate and key required).
  static expected<std::shared_ptr<const context>> server(const settings& s);
  /// A client's context (a certificate optional: for mutual TLS).
  static expected<std::shared_ptr<const context>> client(const settings& s);
  ~context();
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  ssl_ctx_st* native() const noexcept {
    return ctx_;
  }
  /// The leaf certificate's notAfter, unix seconds (0: none loaded).
  std::int64_t not_after() const noexcept {
    return not_after_;
  }
  const settings& config() const noexcept {
    return settings_;
  }

private:
  explicit context(ssl_ctx_st* ctx, settings s) :
      ctx_(ctx), settings_(std::move(s)) {
  }
  ssl_ctx_st* ctx_;
  settings settings_;
  std::int64_t not_after_ = 0;
};

} // namespace spool::tls
