// The listener (protocol/http/server.hpp): accepting, the connection
// limit, graceful close. The connections are in protocol/http/connection.*.

#include "protocol/http/server.hpp"

#include <utility>

#include "protocol/http/connection.hpp"

namespace spool::http {

using detail::clock_type;
using detail::connection;
using detail::serialize;
using detail::tcp;

void server::impl::accept() {
  acceptor.async_accept(
      [self = shared_from_this()](asio::error_code ec, tcp::socket sock) {
        if (ec) {
          if (ec == asio::error::operation_aborted || !self->acceptor.is_open())
            return;
          // Out of descriptors, say: the connection waits in the backlog, so
          // accepting again at once would spin; come back shortly.
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
          auto msg = std::make_shared<std::string>();
          response r;
          r.status = 503;
          r.headers.emplace_back("Content-Type", "application/json");
          r.headers.emplace_back("Retry-After", "1");
          r.body = self->draining
                       ? R"({"error":"Server busy: shutting down"})"
                       : R"({"error":"Server busy: too many connections"})";
          serialize(*msg, r, false, self->common);
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

void server::set_common_headers(header_list h) {
  impl_->common = std::move(h);
}

void server::set_observer(std::function<void(const request_record&)> f) {
  impl_->observer = std::move(f);
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

void server::start(unsigned threads) {
  impl_->accept();
  if (impl_->own_pool)
    impl_->pool->start(threads);
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
    return; // once (spoold calls it on a signal and again at the end)
  stop_accepting();
  std::vector<std::shared_ptr<connection>> all;
  {
    std::lock_guard lock{impl_->mx};
    all.assign(impl_->conns.begin(), impl_->conns.end());
  }
  for (auto& c : all)
    c->drain();
  auto deadline = clock_type::now() + grace;
  while (impl_->count.load() > 0 && clock_type::now() < deadline
         && impl_->pool->started())
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  {
    std::lock_guard lock{impl_->mx};
    impl_->closing = true; // an accept racing with this one adds nothing
    all.assign(impl_->conns.begin(), impl_->conns.end());
  }
  for (auto& c : all)
    asio::post(c->strand, [c] { c->close(); });
  {
    std::lock_guard lock{impl_->stop_mx};
    impl_->stopped = true; // what was posted before this still runs
  }
  if (impl_->own_pool) {
    impl_->pool->stop(); // never started: the posted closes run here
    return;
  }
  // A shared pool runs on: the posted closes run there; wait for them (a
  // close is short, it abandons what is in flight).
  auto closes_by = clock_type::now() + std::chrono::seconds{5};
  while (impl_->count.load() > 0 && impl_->pool->started()
         && clock_type::now() < closes_by)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
}

std::size_t server::connections() const {
  return impl_->count.load();
}

} // namespace spool::http
