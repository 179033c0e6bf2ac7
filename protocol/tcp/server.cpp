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

void server::impl::take(tcp::socket sock) {
  bool guarded = limits.auth_timeout.count() > 0;
  if (guarded && pending_auth.fetch_add(1) >= limits.max_pending) {
    pending_auth.fetch_sub(1);
    return io::refuse(
        std::move(sock),
        error_frame(0, make_error(errc::unavailable,
                                  "Server busy: too many connections waiting "
                                  "to authenticate")));
  }
  auto c = conns.add(limits.max_connections, [&] {
    auto made
        = std::make_shared<connection>(shared_from_this(), std::move(sock));
    if (guarded) // before anything else can see it
      made->await_auth();
    return made;
  });
  if (c)
    return c->start();
  if (guarded)
    pending_auth.fetch_sub(1);
  io::refuse(std::move(sock),
             error_frame(0, make_error(errc::unavailable,
                                       draining ? "Server busy: shutting down"
                                                : "Server busy: too many "
                                                  "connections")));
}

server::server(server_limits limits, handler h,
               std::shared_ptr<io::pool> pool) :
    impl_(std::make_shared<impl>(limits, std::move(h), std::move(pool))) {
  impl_->door = std::make_shared<io::listener>(
      impl_->pool->context(),
      [w = std::weak_ptr<impl>(impl_)](tcp::socket sock) {
        if (auto i = w.lock())
          i->take(std::move(sock));
      });
}

server::~server() {
  shutdown(std::chrono::milliseconds{0});
}

std::string server::listen(const std::string& address, std::uint16_t port) {
  return impl_->door->listen(address, port);
}

std::uint16_t server::port() const {
  return impl_->door->port();
}

void server::name_http_port(std::uint16_t port) {
  impl_->http_port = port;
}

void server::set_tls(std::shared_ptr<const tls::context> ctx) {
  impl_->tls.store(std::move(ctx));
}

void server::start() {
  impl_->door->start();
}

void server::stop_accepting() {
  impl_->draining = true;
  impl_->door->stop();
}

void server::shutdown(std::chrono::milliseconds grace) {
  if (std::exchange(impl_->shut_down, true))
    return;
  stop_accepting();
  auto running = [this] { return impl_->pool->started(); };
  for (auto& c : impl_->conns.drain())
    c->drain();
  impl_->conns.wait_empty(clock_type::now() + grace, running);
  // An accept racing with this one adds nothing.
  for (auto& c : impl_->conns.close())
    asio::post(c->strand, [c] { c->close(); });
  impl_->conns.wait_empty(clock_type::now() + std::chrono::seconds{5}, running);
}

std::size_t server::connections() const {
  return impl_->conns.size();
}

} // namespace spool::mp
