#include "tls/channel.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>

namespace spool::tls {

namespace {

/// An IPv4 or IPv6 literal (checked as an address, not a name, and sent
/// without SNI).
bool ip_literal(const std::string& host) {
  if (host.find(':') != std::string::npos)
    return true;
  for (char c : host)
    if ((c < '0' || c > '9') && c != '.')
      return false;
  return !host.empty();
}

} // namespace

channel::channel(std::shared_ptr<const context> ctx, bool server,
                 const std::string& server_name) :
    ctx_(std::move(ctx)) {
  ssl_ = SSL_new(ctx_->native());
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  // An empty memory BIO says "retry", not EOF: more bytes may come.
  BIO_set_mem_eof_return(in, -1);
  BIO_set_mem_eof_return(out, -1);
  SSL_set_bio(ssl_, in, out);
  if (server) {
    SSL_set_accept_state(ssl_);
    return;
  }
  SSL_set_connect_state(ssl_);
  if (!server_name.empty()) {
    // A name that cannot be checked fails the channel: never a channel
    // that checks no name at all.
    bool set = ip_literal(server_name)
                   ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_),
                                                   server_name.c_str())
                         == 1
                   : SSL_set_tlsext_host_name(ssl_, server_name.c_str()) == 1
                         && SSL_set1_host(ssl_, server_name.c_str()) == 1;
    if (!set) {
      ERR_clear_error();
      failed_ = true;
      error_ = "cannot check the server's certificate against '" + server_name
               + "': give a DNS name or a plain IP address";
    }
  }
}

channel::~channel() {
  SSL_free(ssl_);
}

bool channel::start() {
  std::string none;
  return drive(none);
}

void channel::fail(const char* what) {
  failed_ = true;
  std::string why;
  while (auto e = ERR_get_error()) {
    if (!why.empty())
      why += "; ";
    why += ERR_reason_error_string(e) != nullptr ? ERR_reason_error_string(e)
                                                 : "unknown";
  }
  if (auto v = SSL_get_verify_result(ssl_); v != X509_V_OK)
    why += (why.empty() ? "" : "; ")
           + std::string{X509_verify_cert_error_string(v)};
  error_ = std::string{what} + (why.empty() ? "" : ": " + why);
}

bool channel::drive(std::string& plain) {
  if (failed_)
    return false;
  if (!done_) {
    int r = SSL_do_handshake(ssl_);
    if (r != 1) {
      int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return true;
      fail("TLS handshake failed");
      return false;
    }
    done_ = true;
    if (!held_.empty()) {
      auto held = std::move(held_);
      held_.clear();
      if (!write(held)) {
        fail("TLS write failed");
        return false;
      }
    }
  }
  std::array<char, 16 * 1024> buf;
  for (;;) {
    int n = SSL_read(ssl_, buf.data(), static_cast<int>(buf.size()));
    if (n > 0) {
      plain.append(buf.data(), static_cast<std::size_t>(n));
      continue;
    }
    int e = SSL_get_error(ssl_, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
      return true;
    if (e == SSL_ERROR_ZERO_RETURN)
      return true; // close_notify: the socket's EOF follows
    fail("TLS record refused");
    return false;
  }
}

bool channel::write(std::string_view plain) {
  // Memory BIOs take all of a write or none of it (no partial writes).
  while (!plain.empty()) {
    auto n = std::min<std::size_t>(plain.size(), 1u << 30);
    if (SSL_write(ssl_, plain.data(), static_cast<int>(n))
        != static_cast<int>(n))
      return false;
    plain.remove_prefix(n);
  }
  return true;
}

bool channel::feed(std::string_view cipher, std::string& plain) {
  if (failed_)
    return false;
  ERR_clear_error(); // another connection's leftovers on this thread
  BIO* in = SSL_get_rbio(ssl_);
  if (!cipher.empty())
    BIO_write(in, cipher.data(), static_cast<int>(cipher.size()));
  return drive(plain);
}

void channel::seal(std::string_view plain, std::string& cipher) {
  if (!plain.empty() && !failed_) {
    ERR_clear_error();
    if (!done_)
      held_.append(plain);
    else if (!write(plain))
      fail("TLS write failed"); // nothing more goes out sealed
  }
  take_output(cipher);
}

bool channel::has_output() const {
  return BIO_ctrl_pending(SSL_get_wbio(ssl_)) > 0;
}

void channel::take_output(std::string& cipher) {
  BIO* out = SSL_get_wbio(ssl_);
  auto n = BIO_ctrl_pending(out);
  if (n == 0)
    return;
  auto at = cipher.size();
  cipher.resize(at + n);
  int got = BIO_read(out, cipher.data() + at, static_cast<int>(n));
  cipher.resize(at + static_cast<std::size_t>(got > 0 ? got : 0));
}

std::string channel::peer_subject() const {
  X509* cert = SSL_get0_peer_certificate(ssl_);
  if (cert == nullptr)
    return {};
  BIO* b = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(b, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(b);
  return out;
}

std::string channel::version() const {
  return SSL_get_version(ssl_);
}

bool looks_like_tls(std::string_view bytes) noexcept {
  return !bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x16
         && (bytes.size() < 2 || bytes[1] == 0x03);
}

} // namespace spool::tls
