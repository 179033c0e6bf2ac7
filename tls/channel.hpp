#pragma once

/// TLS as a byte transform (docs/security.md, "TLS"): OpenSSL over memory
/// BIOs, with no socket and no Asio. A connection feeds it what it read
/// and writes what it gives back, so the doors, the peer links and the
/// client keep their own reading and writing. One `channel` per
/// connection, used from one thread at a time.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tls/context.hpp"

struct ssl_st; // OpenSSL's SSL

namespace spool::tls {

class channel {
public:
  /// A server side (accepting) or client side (connecting) channel over
  /// `ctx`, which it keeps alive. `server_name`: the client's SNI and the
  /// name its peer's certificate must carry ("": none checked).
  channel(std::shared_ptr<const context> ctx, bool server,
          const std::string& server_name = "");
  ~channel();
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  /// Takes bytes read from the peer and appends the plaintext they hold
  /// to `plain`. False when the connection must end: a failed handshake
  /// (`error()` says why: plain text sent to a TLS port, a protocol below
  /// TLS 1.2, a certificate refused) or a record that does not decrypt.
  /// Bytes to send (handshake, alerts) wait for `take_output`.
  bool feed(std::string_view cipher, std::string& plain);

  /// Seals `plain` into records appended to `cipher`. Before the
  /// handshake ends, the bytes are kept and sealed once it has. A channel
  /// that failed seals nothing more (`feed` says it failed).
  void seal(std::string_view plain, std::string& cipher);

  /// Moves the bytes the engine wants sent now (the handshake's, alerts,
  /// records sealed once the handshake ended) into `cipher`.
  void take_output(std::string& cipher);
  bool has_output() const;

  /// The client side's first flight: call once after construction; false
  /// when it cannot begin (`error()`: a server name OpenSSL cannot check).
  bool start();

  bool handshake_done() const noexcept {
    return done_;
  }
  /// Why `feed` failed ("" if it did not).
  const std::string& error() const noexcept {
    return error_;
  }
  /// The peer's verified certificate subject, RFC 2253 (`CN=n2,O=spool`);
  /// "" when it sent none.
  std::string peer_subject() const;
  /// The negotiated version ("TLSv1.3").
  std::string version() const;

private:
  bool drive(std::string& plain);
  bool write(std::string_view plain);
  void fail(const char* what);

  std::shared_ptr<const context> ctx_;
  ssl_st* ssl_ = nullptr;
  bool done_ = false;
  bool failed_ = false;
  std::string held_; ///< plaintext sealed before the handshake ended
  std::string error_;
};

/// Whether `bytes`, a connection's first ones (however few), begin as a
/// TLS handshake record does (content type 22, version 3.x): a TLS door
/// tells a plain client so in clear.
bool looks_like_tls(std::string_view bytes) noexcept;

} // namespace spool::tls
