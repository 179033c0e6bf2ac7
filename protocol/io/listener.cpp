#include "protocol/io/listener.hpp"

#include <array>

namespace spool::io {

namespace {

thread_local std::array<char, 64 * 1024> read_buffer;

} // namespace

listener::listener(asio::io_context& io,
                   std::function<void(tcp::socket)> on_accept) :
    strand_(asio::make_strand(io)),
    acceptor_(strand_),
    retry_(strand_),
    on_accept_(std::move(on_accept)) {
}

std::string listener::listen(const std::string& address, std::uint16_t port) {
  asio::error_code ec;
  auto addr = asio::ip::make_address(address, ec);
  if (ec)
    return "bad listen address " + address + ": " + ec.message();
  tcp::endpoint ep{addr, port};
  acceptor_.open(ep.protocol(), ec);
  if (!ec)
    acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec)
    acceptor_.bind(ep, ec);
  if (!ec)
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return "cannot listen on " + address + ":" + std::to_string(port) + ": "
           + ec.message();
  return {};
}

std::uint16_t listener::port() const {
  asio::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

void listener::start() {
  asio::post(strand_, [self = shared_from_this()] { self->accept(); });
}

void listener::stop() {
  asio::post(strand_, [self = shared_from_this()] {
    asio::error_code ec;
    self->acceptor_.close(ec);
    self->retry_.cancel();
  });
}

void listener::accept() {
  acceptor_.async_accept([self = shared_from_this()](asio::error_code ec,
                                                     tcp::socket sock) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !self->acceptor_.is_open())
        return;
      // Out of descriptors, say: the connection waits in the backlog, so
      // accepting again at once would spin; come back shortly.
      self->retry_.expires_after(std::chrono::milliseconds{50});
      self->retry_.async_wait([self](asio::error_code e) {
        if (!e && self->acceptor_.is_open())
          self->accept();
      });
      return;
    }
    asio::error_code ignore;
    sock.set_option(tcp::no_delay(true), ignore);
    self->on_accept_(std::move(sock));
    self->accept();
  });
}

void refuse(tcp::socket sock, std::string bytes) {
  auto msg = std::make_shared<std::string>(std::move(bytes));
  auto s = std::make_shared<tcp::socket>(std::move(sock));
  asio::async_write(*s, asio::buffer(*msg),
                    [s, msg](asio::error_code, std::size_t) {
                      asio::error_code e;
                      s->shutdown(tcp::socket::shutdown_both, e);
                      s->close(e);
                    });
}

read_result read_available(tcp::socket& sock, std::string* into,
                           std::size_t max) {
  read_result r;
  for (;;) {
    asio::error_code ec;
    auto n = sock.read_some(asio::buffer(read_buffer), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again)
      return r;
    if (ec || n == 0) {
      r.gone = true;
      return r;
    }
    if (into)
      into->append(read_buffer.data(), n);
    r.bytes += n;
    if (n < read_buffer.size() || r.bytes >= max)
      return r;
  }
}

} // namespace spool::io
