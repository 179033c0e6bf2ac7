#pragma once

/// One peer connection's bytes (docs/cluster.md, "Peer links"): a TCP
/// socket, with TLS over it when the links have a certificate
/// (docs/security.md, "TLS on the peer links"). Frames come in as a 4-byte
/// big-endian length and a body; bytes go out through one write pump, so
/// a TLS handshake's own records and the sealed frames leave in order. On
/// the links' io thread only.
///
/// Bounds: a frame over the reader's `max` is refused before its body is
/// read; what is buffered in is at most one frame and one read's chunk;
/// what waits to go out is the caller's (the links bound their queues).

#include <asio.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tls/channel.hpp"

namespace spool::peer {

enum class read_status : std::uint8_t {
  frame,  ///< a frame's body is in `body()`
  closed, ///< the connection ended (EOF, reset, closed here)
  refused ///< the peer broke the protocol (a frame too large, TLS failed)
};

class stream : public std::enable_shared_from_this<stream> {
public:
  using read_fn = std::function<void(read_status, const std::string& why)>;
  using done_fn = std::function<void(const std::string& err)>;

  /// Over the connected `sock`; with TLS when `tls` is given, as its
  /// server (accepting) or client (dialing `server_name`, the name or IP
  /// the peer's certificate must carry).
  stream(asio::ip::tcp::socket sock, std::shared_ptr<const tls::context> tls,
         bool server, const std::string& server_name = "");
  ~stream();
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  /// Begins: a TLS client sends its first flight. "" or why it cannot.
  std::string start();

  /// Queues `plain` for the peer (sealed under TLS). `done`, when given,
  /// runs from the io context once everything queued so far is written
  /// ("") or the connection failed (why).
  void write(std::string plain, done_fn done = {});

  /// Reads the next frame of at most `max` bytes; `k` runs once, from the
  /// io context (never inside this call). One read at a time.
  void read_frame(std::size_t max, read_fn k);
  /// The body of the frame read last.
  std::string& body() noexcept {
    return body_;
  }

  /// Closes the socket; pending reads end `closed`, writes with an error.
  void close();
  bool is_open() const noexcept {
    return sock_.is_open();
  }
  bool secured() const noexcept {
    return tls_ != nullptr;
  }
  /// The peer's verified certificate subject ("": none, or no TLS).
  std::string peer_subject() const;

private:
  // The continuations are held by the pending operations, never by the
  // stream: a continuation holds its owner, which holds the stream, and a
  // stream holding it back would be a cycle that outlives the io context.
  void advance(read_fn k);
  void pump();
  void take_tls_output();
  void finish_writes(const std::string& err);

  asio::ip::tcp::socket sock_;
  std::unique_ptr<tls::channel> tls_;
  bool server_;
  // in
  /// One read's bytes: small until a first frame came (a connection that
  /// has not spoken holds little), then larger.
  std::vector<char> in_;
  std::string first_; ///< the connection's first bytes (up to 3)
  std::string plain_; ///< plaintext received, not yet taken as frames
  std::string body_;
  std::size_t max_ = 0;
  bool delivered_any_ = false;
  // out
  std::string pending_; ///< bytes to write next
  std::string writing_; ///< bytes being written
  std::vector<done_fn> waiting_;
  std::string failed_;
};

} // namespace spool::peer
