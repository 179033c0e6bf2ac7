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

void server::set_head_check(head_check check) {
  impl_->head_check = std::move(check);
}

void server::set_tls(std::shared_ptr<const tls::context> ctx) {
  impl_->tls.store(std::move(ctx));
}

void server::impl::take(tcp::socket sock) {
  bool guarded = limits.auth_timeout.count() > 0;
  bool over = guarded && pending_auth.fetch_add(1) >= limits.max_pending;
  std::shared_ptr<connection> c;
  if (!over)
    c = conns.add(limits.max_connections, [&] {
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
  std::string msg;
  response r;
  r.status = 503;
  r.headers.emplace_back("Content-Type", "application/json");
  r.headers.emplace_back("Retry-After", "1");
  r.body = draining ? R"({"error":"Server busy: shutting down"})"
           : over   ? R"({"error":"Server busy: too many connections waiting )"
                      R"(to authenticate"})"
                    : R"({"error":"Server busy: too many connections"})";
  serialize(msg, r, false, common);
  io::refuse(std::move(sock), std::move(msg));
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

void server::set_common_headers(header_list h) {
  impl_->common = std::move(h);
}

void server::set_observer(std::function<void(const request_record&)> f) {
  impl_->observer = std::move(f);
}

std::string server::listen(const std::string& address, std::uint16_t port) {
  return impl_->door->listen(address, port);
}

std::uint16_t server::port() const {
  return impl_->door->port();
}

void server::start(unsigned threads) {
  impl_->door->start();
  if (impl_->own_pool)
    impl_->pool->start(threads);
}

void server::stop_accepting() {
  impl_->draining = true;
  impl_->door->stop();
}

void server::shutdown(std::chrono::milliseconds grace) {
  if (std::exchange(impl_->shut_down, true))
    return; // once (spoold calls it on a signal and again at the end)
  stop_accepting();
  auto running = [this] { return impl_->pool->started(); };
  for (auto& c : impl_->conns.drain())
    c->drain();
  impl_->conns.wait_empty(clock_type::now() + grace, running);
  // An accept racing with this one adds nothing.
  for (auto& c : impl_->conns.close())
    asio::post(c->strand, [c] { c->close(); });
  {
    std::lock_guard lock{impl_->stop_mx};
    impl_->stopped = true; // what was posted before this still runs
  }
  if (impl_->own_pool)
    return impl_->pool->stop(); // never started: the closes run here
  // A shared pool runs on: the posted closes run there; wait for them (a
  // close is short, it abandons what is in flight).
  impl_->conns.wait_empty(clock_type::now() + std::chrono::seconds{5}, running);
}

std::size_t server::connections() const {
  return impl_->conns.size();
}

} // namespace spool::http
