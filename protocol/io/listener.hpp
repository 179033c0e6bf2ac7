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

} // namespace spool::io
