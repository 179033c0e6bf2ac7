// The msgpack listener (protocol/tcp/server.hpp): accepting, the
// connection limit, graceful close. Connections: connection.cpp.

#include "protocol/tcp/server.hpp"

#include <thread>
#include <utility>

#include "protocol/tcp/connection.hpp"

namespace spool::mp {

using detail::clock_type;
using detail::connection;
using detail::tcp;

void server::impl::accept() {
  acceptor.async_accept([self = shared_from_this()](asio::error_code ec,
                                                    tcp::socket sock) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !self->acceptor.is_open())
        return;
      // Out of descriptors, say: come back shortly instead of spinning.
      self->accept_retry.expires_after(std::chrono::milliseconds{50});
      self->accept_retry.async_wait([self](asio::error_code e) {
        if (!e && self->acceptor.is_open())
          self->accept();
      });
      return;
    }
    asio::error_code ignore;
    sock.set_option(tcp::no_delay(true), ignore);
    std::shared_ptr<connection> c;
    bool busy = false;
    {
      std::lock_guard lock{self->mx};
      busy = self->closing || self->draining
             || self->count.load() >= self->limits.max_connections;
      if (!busy) {
        c = std::make_shared<connection>(self, std::move(sock));
        self->conns.insert(c);
        self->count.fetch_add(1);
      }
    }
    if (busy) {
      auto msg = std::make_shared<std::string>(error_frame(
          0, make_error(errc::unavailable, self->draining
                                               ? "Server busy: shutting down"
                                               : "Server busy: too many "
                                                 "connections")));
      auto s = std::make_shared<tcp::socket>(std::move(sock));
      asio::async_write(*s, asio::buffer(*msg),
                        [s, msg](asio::error_code, std::size_t) {
                          asio::error_code e;
                          s->shutdown(tcp::socket::shutdown_both, e);
                          s->close(e);
                        });
      return self->accept();
    }
    c->start();
    self->accept();
  });
}

void server::impl::remove(const std::shared_ptr<connection>& c) {
  std::lock_guard lock{mx};
  if (conns.erase(c) > 0)
    count.fetch_sub(1);
}

server::server(server_limits limits, handler h,
               std::shared_ptr<io::pool> pool) :
    impl_(std::make_shared<impl>(limits, std::move(h), std::move(pool))) {
}

server::~server() {
  shutdown(std::chrono::milliseconds{0});
}

std::string server::listen(const std::string& address, std::uint16_t port) {
  asio::error_code ec;
  auto addr = asio::ip::make_address(address, ec);
  if (ec)
    return "bad listen address " + address + ": " + ec.message();
  tcp::endpoint ep{addr, port};
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec)
    a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec)
    a.bind(ep, ec);
  if (!ec)
    a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return "cannot listen on " + address + ":" + std::to_string(port) + ": "
           + ec.message();
  return {};
}

std::uint16_t server::port() const {
  asio::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void server::start() {
  impl_->accept();
}

void server::stop_accepting() {
  impl_->draining = true;
  asio::post(impl_->accept_strand, [s = impl_] {
    asio::error_code ec;
    s->acceptor.close(ec);
    s->accept_retry.cancel();
  });
}

void server::shutdown(std::chrono::milliseconds grace) {
  if (std::exchange(impl_->shut_down, true))
    return;
  stop_accepting();
  auto snapshot = [this] {
    std::lock_guard lock{impl_->mx};
    return std::vector<std::shared_ptr<connection>>(impl_->conns.begin(),
                                                    impl_->conns.end());
  };
  for (auto& c : snapshot())
    c->drain();
  auto wait_until = [this](clock_type::time_point deadline) {
    while (impl_->count.load() > 0 && impl_->pool->started()
           && clock_type::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds{2});
  };
  wait_until(clock_type::now() + grace);
  {
    std::lock_guard lock{impl_->mx};
    impl_->closing = true; // an accept racing with this one adds nothing
  }
  for (auto& c : snapshot())
    asio::post(c->strand, [c] { c->close(); });
  wait_until(clock_type::now() + std::chrono::seconds{5});
}

std::size_t server::connections() const {
  return impl_->count.load();
}

} // namespace spool::mp
