// The listener and its connections. Each connection runs on a strand of its
// own: reads (wait until readable, then read what is there into a per-thread
// buffer, so an idle connection holds no read buffer), parses up to
// `max_pipeline` requests, dispatches them and writes their answers in
// order as they come (`flush`). Answers arrive from any thread through the
// exchange, which posts them onto the strand.

#include "protocol/http/server.hpp"

#include <asio.hpp>

#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

namespace spool::http {

namespace {

using tcp = asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

class connection;

/// One request in flight on a connection, its answer once it comes.
class slot : public exchange, public std::enable_shared_from_this<slot> {
public:
  slot(std::weak_ptr<connection> c, request r) :
      conn(std::move(c)),
      method(std::move(r.method)),
      path(std::move(r.path)),
      keep_alive(r.keep_alive),
      started(clock_type::now()) {
  }
  void respond(response r) override;
  void on_abandon(std::function<void()> f) override;

  std::weak_ptr<connection> conn;
  std::string method;
  std::string path;
  bool keep_alive;
  clock_type::time_point started;
  std::optional<response> answer; ///< strand only
  std::mutex mx;
  bool answered = false;            ///< under mx
  bool abandoned = false;           ///< under mx
  std::function<void()> abandon_fn; ///< under mx
};

} // namespace

struct server::impl : std::enable_shared_from_this<server::impl> {
  server_limits limits;
  handler h;
  header_list common;
  std::function<void(const request_record&)> observer;
  asio::io_context io;
  /// The acceptor's handlers and its close run on this strand.
  asio::strand<asio::io_context::executor_type> accept_strand{
      asio::make_strand(io)};
  tcp::acceptor acceptor{accept_strand};
  asio::steady_timer accept_retry{accept_strand};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
      work{asio::make_work_guard(io)};
  std::vector<std::thread> threads;
  std::mutex mx;
  std::unordered_set<std::shared_ptr<connection>> conns;
  std::atomic<std::size_t> count{0};
  std::atomic<bool> draining{false};
  bool closing = false; ///< under mx: no connection is added any more
  std::mutex stop_mx;
  bool stopped = false; ///< under stop_mx: nothing posted will run
  bool shut_down = false;

  impl(server_limits l, handler hh) : limits(l), h(std::move(hh)) {
  }
  void accept();
  void remove(const std::shared_ptr<connection>& c);
};

namespace {

thread_local std::array<char, 64 * 1024> read_buffer;

void serialize(std::string& out, const response& r, bool keep_alive,
               const header_list& common, bool head = false) {
  out += "HTTP/1.1 ";
  out += std::to_string(r.status);
  out += ' ';
  out += reason_phrase(r.status);
  out += "\r\n";
  for (auto& [k, v] : common) {
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  for (auto& [k, v] : r.headers) {
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  if (r.status != 204 && r.status >= 200) {
    out += "Content-Length: ";
    out += std::to_string(r.body.size());
    out += "\r\n";
  }
  if (!keep_alive)
    out += "Connection: close\r\n";
  out += "\r\n";
  if (r.status != 204 && !head) // a HEAD answer has no body (RFC 9110)
    out += r.body;
}

class connection : public std::enable_shared_from_this<connection> {
public:
  connection(std::shared_ptr<server::impl> s, tcp::socket sock) :
      srv(std::move(s)),
      socket(std::move(sock)),
      strand(asio::make_strand(srv->io)),
      timer(strand),
      parser(srv->limits.parser) {
    asio::error_code ec;
    auto ep = socket.remote_endpoint(ec);
    if (!ec)
      peer = ep.address().to_string() + ":" + std::to_string(ep.port());
    last_activity = clock_type::now();
  }

  void start() {
    asio::error_code ec;
    socket.non_blocking(true, ec);
    asio::post(strand, [self = shared_from_this()] { self->wait_readable(); });
  }

  /// Graceful close: answer what is in flight, then close.
  void drain() {
    asio::post(strand, [self = shared_from_this()] {
      self->draining = true;
      if (self->slots.empty() && !self->writing)
        self->close();
    });
  }

  void deliver(const std::shared_ptr<slot>& s, response r) {
    // Posted under the server's stop lock, so that a post either runs or
    // finds the server stopped (then the answer is not written: its lease
    // is released here).
    std::unique_lock lock{srv->stop_mx};
    if (srv->stopped) {
      lock.unlock();
      if (r.on_unwritten)
        r.on_unwritten();
      return;
    }
    asio::post(strand,
               [self = shared_from_this(), s, r = std::move(r)]() mutable {
                 if (self->closed) {
                   if (r.on_unwritten)
                     r.on_unwritten();
                   return;
                 }
                 s->answer = std::move(r);
                 self->flush();
               });
  }

  void close() {
    if (closed)
      return;
    closed = true;
    asio::error_code ec;
    timer.cancel();
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
    // Unanswered requests are abandoned; answers written to no one are
    // reported unwritten.
    for (auto& s : slots) {
      std::function<void()> f;
      {
        std::lock_guard lock{s->mx};
        s->abandoned = true;
        f = std::move(s->abandon_fn);
      }
      if (f)
        f();
      if (s->answer && s->answer->on_unwritten)
        s->answer->on_unwritten();
    }
    for (auto& f : in_write)
      if (f)
        f();
    in_write.clear();
    slots.clear();
    srv->remove(shared_from_this());
  }

  std::shared_ptr<server::impl> srv;
  tcp::socket socket;
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer timer;
  request_parser parser;
  std::string peer;
  std::string inbuf; ///< bytes read, not yet parsed
  std::deque<std::shared_ptr<slot>> slots;
  std::optional<request> held; ///< parsed, waiting for its turn
  /// The request being read asked for `100 Continue`, not sent yet.
  bool continue_pending = false;
  clock_type::time_point write_began;
  /// The `on_unwritten` of the answers being written (their leases).
  std::vector<std::function<void()>> in_write;
  std::string outbuf;
  bool writing = false;
  bool reading = false;
  bool closed = false;
  bool draining = false;
  bool close_after_write = false;
  bool ends_here = false; ///< the write in progress ends the connection
  bool lingering = false; ///< answered and half-closed: input is dropped
  clock_type::time_point last_activity;
  clock_type::time_point request_began;
  bool timer_armed_for_request = false;

private:
  /// Reads while requests can be taken, and a little beyond (so that a
  /// client that leaves is noticed during a long poll): past 64 KiB of
  /// unparsed bytes a full pipeline or a held request stops the reading.
  void wait_readable() {
    bool full = held || slots.size() >= srv->limits.max_pipeline;
    if (closed || reading || lingering || (full && inbuf.size() >= (64u << 10)))
      return;
    reading = true;
    arm_timer();
    socket.async_wait(tcp::socket::wait_read,
                      asio::bind_executor(strand, [self = shared_from_this()](
                                                      asio::error_code ec) {
                        self->reading = false;
                        if (self->closed)
                          return;
                        if (ec)
                          return self->close();
                        self->read_available();
                      }));
  }

  void read_available() {
    // At most 1 MiB per wake-up: the strand (its answers, its timers) and the
    // io thread's other connections get their turn.
    std::size_t read = 0;
    for (;;) {
      asio::error_code ec;
      auto n = socket.read_some(asio::buffer(read_buffer), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again)
        break;
      if (ec || n == 0)
        return close(); // the client left (EOF or an error)
      last_activity = clock_type::now();
      // After a `Connection: close` request nothing more is answered: the
      // bytes are dropped, the reading only notices a client that leaves.
      if (!close_after_write)
        inbuf.append(read_buffer.data(), n);
      read += n;
      if (n < read_buffer.size() || read >= (1u << 20))
        break;
    }
    parse();
    wait_readable();
  }

  void parse() {
    std::size_t pos = 0;
    while (!closed && !close_after_write && !held
           && slots.size() < srv->limits.max_pipeline && pos < inbuf.size()) {
      bool was_in_request = parser.in_request();
      auto n = parser.feed(std::string_view{inbuf}.substr(pos));
      pos += n;
      if (!was_in_request && (parser.in_request() || parser.ready()))
        request_began = clock_type::now();
      if (parser.take_continue())
        continue_pending = true;
      send_continue_if_due();
      if (auto& err = parser.error()) {
        refuse(err->status, err->message);
        break;
      }
      if (!parser.ready()) {
        if (n == 0)
          break;
        continue;
      }
      continue_pending = false; // its request is whole: no 100 for it now
      auto req = parser.take();
      if (!can_dispatch(req.method)) {
        held = std::move(req);
        break;
      }
      dispatch(std::move(req));
    }
    inbuf.erase(0, pos);
    if (parser.error())
      inbuf.clear();
  }

  /// RFC 9112 §9.3.2: only safe requests are processed side by side; a
  /// request that changes something waits until every earlier one is
  /// answered, and nothing after it starts before its answer (a pipelined
  /// push sequence is applied in order).
  static bool safe(std::string_view method) {
    return method == "GET" || method == "HEAD" || method == "OPTIONS";
  }
  bool can_dispatch(std::string_view method) const {
    if (slots.empty())
      return true;
    if (!safe(method))
      return false;
    for (auto& s : slots)
      if (!safe(s->method))
        return false;
    return true;
  }

  /// After an answer went out: the held request, if its turn came, then
  /// the buffered ones, then more reading.
  /// `100 Continue` for the request being read, once it is next in line
  /// (the client waits for it before it sends the body).
  void send_continue_if_due() {
    if (!continue_pending || !slots.empty() || writing || held
        || !parser.in_request())
      return;
    continue_pending = false;
    writing = true;
    write_began = clock_type::now();
    outbuf = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(
        socket, asio::buffer(outbuf),
        asio::bind_executor(strand, [self = shared_from_this()](
                                        asio::error_code ec, std::size_t) {
          self->writing = false;
          if (self->closed)
            return;
          if (ec)
            return self->close();
          self->flush();
          self->resume();
        }));
  }

  void resume() {
    send_continue_if_due();
    if (held && can_dispatch(held->method)) {
      auto req = std::move(*held);
      held.reset();
      dispatch(std::move(req));
    }
    parse();
    wait_readable();
    arm_timer();
  }

  void dispatch(request req) {
    if (draining)
      req.keep_alive = false;
    auto s = std::make_shared<slot>(weak_from_this(), request{});
    s->method = req.method;
    s->path = req.path;
    s->keep_alive = req.keep_alive;
    if (!req.keep_alive)
      close_after_write = true; // nothing after it is read
    slots.push_back(s);
    srv->h(std::move(req), s);
  }

  /// Answers a request that cannot be parsed, then closes.
  void refuse(int status, const std::string& message) {
    continue_pending = false;
    request r;
    r.method = "-";
    r.path = "-";
    r.keep_alive = false;
    auto s = std::make_shared<slot>(weak_from_this(), std::move(r));
    close_after_write = true;
    slots.push_back(s);
    response resp;
    resp.status = status;
    resp.headers.emplace_back("Content-Type", "application/json");
    resp.body = "{\"error\":\"" + message + "\"}"; // parser texts: no quotes
    s->answer = std::move(resp);
    flush();
  }

public:
  /// Writes the answers ready at the head of the line.
  void flush() {
    if (closed || writing)
      return;
    outbuf.clear();
    bool last = false;
    while (!slots.empty() && slots.front()->answer) {
      auto s = slots.front();
      slots.pop_front();
      // Draining: the last answer in flight closes the connection.
      bool keep = s->keep_alive && !(draining && slots.empty());
      serialize(outbuf, *s->answer, keep, srv->common, s->method == "HEAD");
      if (srv->observer)
        srv->observer(request_record{
            s->method, s->path, s->answer->status,
            std::chrono::duration_cast<std::chrono::microseconds>(
                clock_type::now() - s->started),
            peer});
      in_write.push_back(std::move(s->answer->on_unwritten));
      if (!keep) {
        last = true;
        break;
      }
    }
    if (outbuf.empty()) {
      if (draining && slots.empty())
        close();
      return;
    }
    if (last) {
      close_after_write = true;
      ends_here = true;
    }
    writing = true;
    write_began = clock_type::now();
    arm_timer();
    asio::async_write(
        socket, asio::buffer(outbuf),
        asio::bind_executor(strand, [self = shared_from_this()](
                                        asio::error_code ec, std::size_t) {
          self->writing = false;
          if (self->closed)
            return;
          if (ec)
            return self->close();
          self->in_write.clear();
          self->last_activity = clock_type::now();
          // A `Connection: close` answer ends the connection; requests
          // pipelined after it are not answered (RFC 9112 §9.6).
          if (self->close_after_write && self->ends_here)
            return self->linger_close();
          if (self->draining && self->slots.empty())
            return self->close();
          self->flush();
          self->resume();
        }));
  }

  /// Ends a connection whose last answer was written: the sending side
  /// first, then what the client still sends is read and dropped until it
  /// closes too (at most 2 s), so that a client still sending a refused
  /// body reads the answer instead of a reset (a "lingering close").
  void linger_close() {
    asio::error_code ec;
    socket.shutdown(tcp::socket::shutdown_send, ec);
    if (ec)
      return close();
    lingering = true;
    timer.expires_after(std::chrono::seconds{2});
    timer.async_wait(asio::bind_executor(
        strand, [self = shared_from_this()](asio::error_code e) {
          if (!e)
            self->close();
        }));
    drain_input();
  }

  void drain_input() {
    socket.async_wait(
        tcp::socket::wait_read,
        asio::bind_executor(
            strand, [self = shared_from_this()](asio::error_code ec) {
              if (self->closed)
                return;
              if (ec)
                return self->close();
              // At most 1 MiB per wake-up (the linger timer must get its
              // turn on this strand).
              for (std::size_t read = 0; read < (1u << 20);) {
                asio::error_code rec;
                auto n = self->socket.read_some(asio::buffer(read_buffer), rec);
                if (rec == asio::error::would_block
                    || rec == asio::error::try_again)
                  break;
                if (rec || n == 0)
                  return self->close();
                read += n;
              }
              self->drain_input();
            }));
  }

  void arm_timer() {
    if (closed || lingering)
      return;
    auto deadline = clock_type::time_point::max();
    if (writing) {
      // A client that does not read its answers holds them in memory: it
      // gets the request timeout to take a write, then it is closed.
      deadline = write_began + srv->limits.request_timeout;
    } else if (slots.empty()) {
      deadline = parser.in_request()
                     ? request_began + srv->limits.request_timeout
                     : last_activity + srv->limits.idle_timeout;
    }
    if (deadline == clock_type::time_point::max()) {
      timer.cancel();
      return;
    }
    timer.expires_at(deadline);
    timer.async_wait(asio::bind_executor(
        strand, [self = shared_from_this()](asio::error_code ec) {
          if (ec || self->closed)
            return;
          self->on_timer();
        }));
  }

  void on_timer() {
    auto now = clock_type::now();
    if (writing) {
      if (now >= write_began + srv->limits.request_timeout)
        return close(); // the client stopped reading
      return arm_timer();
    }
    if (!slots.empty())
      return; // answers are due: the handler's own timeouts apply
    if (parser.in_request()) {
      if (now >= request_began + srv->limits.request_timeout) {
        refuse(408, "Request not complete within "
                        + std::to_string(srv->limits.request_timeout.count())
                        + " ms");
        return;
      }
    } else if (now >= last_activity + srv->limits.idle_timeout) {
      return close();
    }
    arm_timer();
  }
};

void slot::respond(response r) {
  {
    std::lock_guard lock{mx};
    if (answered)
      return;
    answered = true;
  }
  if (auto c = conn.lock()) {
    c->deliver(shared_from_this(), std::move(r));
    return;
  }
  if (r.on_unwritten)
    r.on_unwritten();
}

void slot::on_abandon(std::function<void()> f) {
  {
    std::lock_guard lock{mx};
    if (!abandoned) {
      abandon_fn = std::move(f);
      return;
    }
  }
  f();
}

} // namespace

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

server::server(server_limits limits, handler h) :
    impl_(std::make_shared<impl>(limits, std::move(h))) {
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
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    impl_->threads.emplace_back([s = impl_] { s->io.run(); });
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
         && !impl_->threads.empty())
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
  impl_->work.reset();
  if (impl_->threads.empty())
    impl_->io.run(); // never started: run the posted closes here
  for (auto& t : impl_->threads)
    t.join();
  impl_->threads.clear();
}

std::size_t server::connections() const {
  return impl_->count.load();
}

} // namespace spool::http
