#pragma once

/// What the two listeners (HTTP, msgpack) share of Asio: accepting on a
/// strand with a retry when descriptors run out, refusing a connection with
/// an answer, and reading what a socket holds now into a per-thread buffer
/// (so an idle connection holds no read buffer).

#include <asio.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tls/channel.hpp"

namespace spool::io {

using tcp = asio::ip::tcp;

class listener : public std::enable_shared_from_this<listener> {
public:
  /// `on_accept` takes each accepted socket (TCP_NODELAY set), on the
  /// listener's strand.
  listener(asio::io_context& io, std::function<void(tcp::socket)> on_accept);

  /// Binds `address:port` (port 0: a free one) and listens; "" on success,
  /// else why not.
  std::string listen(const std::string& address, std::uint16_t port);
  std::uint16_t port() const;
  /// Accepts until `stop`.
  void start();
  /// Closes the acceptor (any thread).
  void stop();

private:
  void accept();

  asio::strand<asio::io_context::executor_type> strand_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  std::function<void(tcp::socket)> on_accept_;
};

/// Writes `bytes` to `sock`, then closes it: a connection refused with an
/// answer (too many connections, shutting down).
void refuse(tcp::socket sock, std::string bytes);

struct read_result {
  std::size_t bytes = 0; ///< appended to the caller's buffer
  bool gone = false;     ///< EOF or an error: the peer left
};

/// Reads what the (non-blocking) `sock` holds now, up to `max` bytes, into
/// `into` (none: the bytes are read and dropped).
read_result read_available(tcp::socket& sock, std::string* into,
                           std::size_t max = std::size_t{1} << 20);

/// A TLS connection's read: what `sock` holds now, in a per-thread buffer,
/// handed to `open` (the door's: its first-bytes check, then the channel's
/// feed into `into`; false: the connection ends, `ended`). `bytes` is what
/// counts as activity: the plaintext appended to `into`, or one for bytes
/// of a handshake under way. Bytes that open to nothing after the
/// handshake (a record trickled a byte at a time) count as none, so the
/// idle timeout still runs.
struct sealed_read : read_result {
  bool ended = false;
};
template <class Open>
sealed_read read_sealed(tcp::socket& sock, const tls::channel& ch,
                        const std::string& into, Open&& open) {
  thread_local std::string raw;
  raw.clear();
  sealed_read out;
  static_cast<read_result&>(out) = read_available(sock, &raw);
  bool shaking = !ch.handshake_done();
  auto before = into.size();
  if (!raw.empty() && !open(std::string_view{raw})) {
    out.ended = true;
    return out;
  }
  out.bytes = into.size() - before + (shaking && !raw.empty() ? 1 : 0);
  return out;
}

} // namespace spool::io
