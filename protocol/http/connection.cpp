// A connection of the HTTP listener (protocol/http/connection.hpp): reading,
// parsing, pipelining, answers in order, timeouts, the lingering close.

#include "protocol/http/connection.hpp"

#include <array>
#include <utility>

namespace spool::http::detail {

namespace {

bool safe(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

void put_headers(std::string& out, const header_list& headers) {
  for (auto& [k, v] : headers) {
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
}

} // namespace

void serialize_head(std::string& out, const response& r, bool keep_alive,
                    const header_list& common) {
  out += "HTTP/1.1 ";
  out += std::to_string(r.status);
  out += ' ';
  out += reason_phrase(r.status);
  out += "\r\n";
  put_headers(out, common);
  put_headers(out, r.headers);
  if (r.status != 204 && r.status >= 200) {
    out += "Content-Length: ";
    out += std::to_string(r.body.size());
    out += "\r\n";
  }
  if (!keep_alive)
    out += "Connection: close\r\n";
  out += "\r\n";
}

void serialize(std::string& out, const response& r, bool keep_alive,
               const header_list& common) {
  serialize_head(out, r, keep_alive, common);
  if (has_body(r, false))
    out += r.body;
}

connection::connection(std::shared_ptr<server::impl> s, tcp::socket sock) :
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
  auth_deadline = last_activity + srv->limits.auth_timeout;
  handshake_deadline = last_activity + srv->limits.handshake_timeout;
  if (auto ctx = srv->tls.load())
    tls = std::make_unique<tls::channel>(std::move(ctx), true);
  if (srv->head_check)
    parser.set_head_check(
        [this](const request& head) -> std::optional<parse_error> {
          if (!unauthenticated)
            return std::nullopt;
          return srv->head_check(head, peer, client_subject);
        });
}

void connection::start() {
  asio::error_code ec;
  socket.non_blocking(true, ec);
  asio::post(strand, [self = shared_from_this()] { self->wait_readable(); });
}

void connection::drain() {
  asio::post(strand, [self = shared_from_this()] {
    self->draining = true;
    if (self->slots.empty() && !self->writing)
      self->close();
  });
}

void connection::deliver(const std::shared_ptr<slot>& s, response r) {
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

void connection::close() {
  if (closed)
    return;
  closed = true;
  if (unauthenticated) {
    unauthenticated = false;
    srv->pending_auth.fetch_sub(1);
  }
  asio::error_code ec;
  timer.cancel();
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
  // Unanswered requests are abandoned; answers written to no one are
  // reported unwritten.
  for (auto& s : slots) {
    s->latch.abandon();
    if (s->answer && s->answer->on_unwritten)
      s->answer->on_unwritten();
  }
  for (auto& f : in_write)
    if (f)
      f();
  in_write.clear();
  slots.clear();
  srv->conns.remove(shared_from_this());
}

void connection::wait_readable() {
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

void connection::read_available() {
  // At most 1 MiB per wake-up: the strand (its answers, its timers) and the
  // io thread's other connections get their turn.
  // After a `Connection: close` request nothing more is answered: the
  // bytes are dropped, the reading only notices a client that leaves.
  io::read_result r;
  if (tls) {
    auto sr
        = io::read_sealed(socket, *tls, inbuf, [this](std::string_view raw) {
            return open_tls(raw);
          });
    if (sr.ended)
      return;
    r = sr;
  } else {
    r = io::read_available(socket, close_after_write ? nullptr : &inbuf);
  }
  if (r.gone)
    return close(); // the client left (EOF or an error)
  if (r.bytes > 0)
    last_activity = clock_type::now();
  parse();
  wait_readable();
}

bool connection::open_tls(std::string_view raw) {
  if (plain_refusal)
    return false;
  if (std::exchange(first_read, false) && !tls::looks_like_tls(raw)) {
    // Plain HTTP to the HTTPS port: told so in clear, then closed.
    plain_refusal = true;
    response r;
    r.status = 400;
    r.headers.emplace_back("Content-Type", "application/json");
    r.body = R"({"error":"This port speaks HTTPS: use https://"})";
    outbuf.clear();
    serialize(outbuf, r, false, srv->common);
    close_after_write = true;
    ends_here = true;
    if (!writing)
      write_outbuf();
    return false;
  }
  std::string dropped;
  if (!tls->feed(raw, close_after_write ? dropped : inbuf)) {
    // A failed handshake or a bad record: its alert goes out as it is
    // (already a record), then the connection closes.
    if (writing || !tls->has_output())
      return close(), false;
    plain_refusal = true;
    release_written();
    tls->take_output(outbuf);
    close_after_write = true;
    ends_here = true;
    write_outbuf();
    return false;
  }
  if (client_subject.empty() && tls->handshake_done())
    client_subject = tls->peer_subject();
  if (tls->has_output() && !writing)
    write_outbuf(); // the handshake's bytes
  return true;
}

void connection::parse() {
  std::size_t pos = 0;
  while (!closed && !close_after_write && !held
         && slots.size() < srv->limits.max_pipeline && pos < inbuf.size()) {
    bool was_in_request = parser.in_request();
    auto n = parser.feed(std::string_view{inbuf}.substr(pos));
    pos += n;
    if (!was_in_request && (parser.in_request() || parser.ready()))
      request_began = clock_type::now();
    if (auto& err = parser.error()) {
      refuse(err->status, err->message);
      break;
    }
    if (parser.take_continue())
      continue_pending = true;
    send_continue_if_due();
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

bool connection::can_dispatch(std::string_view method) const {
  if (slots.empty())
    return true;
  if (!safe(method))
    return false;
  for (auto& s : slots)
    if (!safe(s->method))
      return false;
  return true;
}

void connection::send_continue_if_due() {
  if (!continue_pending || !slots.empty() || writing || held
      || !parser.in_request())
    return;
  continue_pending = false;
  outbuf = "HTTP/1.1 100 Continue\r\n\r\n";
  write_outbuf();
}

void connection::resume() {
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

void connection::dispatch(request req) {
  if (draining)
    req.keep_alive = false;
  auto s = std::make_shared<slot>(weak_from_this(), request{});
  s->method = req.method;
  s->path = req.path;
  s->keep_alive = req.keep_alive;
  if (!req.keep_alive)
    close_after_write = true; // nothing after it is read
  slots.push_back(s);
  req.peer = peer;
  req.client_subject = client_subject;
  srv->h(std::move(req), s);
  if (unauthenticated && s->authed) { // its token verified
    unauthenticated = false;
    srv->pending_auth.fetch_sub(1);
    arm_timer();
  }
}

void connection::refuse(int status, const std::string& message) {
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
  // The parser's texts hold none of the client's bytes and nothing to
  // escape (fuzz/http_request_fuzz.cpp checks it).
  resp.body = "{\"error\":\"" + message + "\"}";
  s->answer = std::move(resp);
  flush();
}

void connection::flush() {
  if (closed || writing)
    return;
  outbuf.clear();
  bool last = false;
  while (!slots.empty() && slots.front()->answer) {
    auto s = slots.front();
    slots.pop_front();
    // Draining: the last answer in flight closes the connection.
    bool keep = s->keep_alive && !(draining && slots.empty());
    auto& a = *s->answer;
    serialize_head(outbuf, a, keep, srv->common);
    head_ends.push_back(outbuf.size());
    out_bodies.push_back(has_body(a, s->method == "HEAD") ? std::move(a.body)
                                                          : std::string{});
    if (srv->observer)
      srv->observer(
          request_record{s->method, s->path, a.status,
                         std::chrono::duration_cast<std::chrono::microseconds>(
                             clock_type::now() - s->started),
                         peer, a.log_note});
    in_write.push_back(std::move(a.on_unwritten));
    s->answer.reset(); // nothing of it stays on the slot
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
  write_outbuf();
}

void connection::write_outbuf() {
  writing = true;
  write_began = clock_type::now();
  arm_timer();
  // Each answer's head, then its body (a `100 Continue`: a head alone).
  out_seq.clear();
  std::size_t from = 0;
  for (std::size_t i = 0; i < head_ends.size(); ++i) {
    out_seq.push_back(asio::buffer(outbuf.data() + from, head_ends[i] - from));
    if (!out_bodies[i].empty())
      out_seq.push_back(asio::buffer(out_bodies[i]));
    from = head_ends[i];
  }
  if (from < outbuf.size())
    out_seq.push_back(asio::buffer(outbuf.data() + from, outbuf.size() - from));
  if (tls && !plain_refusal) { // one sealed buffer, with the handshake's
    sealed.clear();
    for (auto& b : out_seq)
      tls->seal({static_cast<const char*>(b.data()), b.size()}, sealed);
    tls->take_output(sealed);
    out_seq.assign(1, asio::buffer(sealed));
  }
  asio::async_write(
      socket, out_seq,
      asio::bind_executor(strand, [self = shared_from_this()](
                                      asio::error_code ec, std::size_t) {
        self->writing = false;
        self->release_written();
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
        // What the engine made meanwhile (a key update, tickets).
        if (self->tls && !self->writing && self->tls->has_output())
          self->write_outbuf();
        self->resume();
      }));
}

void connection::release_written() {
  out_seq.clear();
  head_ends.clear();
  out_bodies.clear(); // the bodies are freed as soon as they are written
  sealed.clear();
  if (sealed.capacity() > (1u << 20))
    std::string{}.swap(sealed);
  outbuf.clear();
  if (outbuf.capacity() > (64u << 10)) // many heads: give the room back
    std::string{}.swap(outbuf);
}

void connection::linger_close() {
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

void connection::drain_input() {
  socket.async_wait(tcp::socket::wait_read,
                    asio::bind_executor(strand, [self = shared_from_this()](
                                                    asio::error_code ec) {
                      if (self->closed)
                        return;
                      if (ec)
                        return self->close();
                      // At most 1 MiB per wake-up (the linger timer must get
                      // its turn on this strand).
                      if (io::read_available(self->socket, nullptr).gone)
                        return self->close();
                      self->drain_input();
                    }));
}

void connection::arm_timer() {
  if (closed || lingering)
    return;
  auto deadline = clock_type::time_point::max();
  if (writing) {
    // A client that does not read its answers holds them in memory: it
    // gets the request timeout to take a write, then it is closed.
    deadline = write_began + srv->limits.request_timeout;
  } else if (slots.empty()) {
    deadline = parser.in_request() ? request_began + srv->limits.request_timeout
                                   : last_activity + srv->limits.idle_timeout;
  }
  if (unauthenticated)
    deadline = std::min(deadline, auth_deadline);
  if (tls && !tls->handshake_done())
    deadline = std::min(deadline, handshake_deadline);
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

void connection::on_timer() {
  auto now = clock_type::now();
  if (unauthenticated && now >= auth_deadline)
    return close(); // no valid token in time (docs/security.md)
  if (tls && !tls->handshake_done() && now >= handshake_deadline)
    return close(); // a handshake that stalls ends only its connection
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

void slot::respond(response r) {
  if (!latch.answer())
    return;
  if (auto c = conn.lock()) {
    c->deliver(shared_from_this(), std::move(r));
    return;
  }
  if (r.on_unwritten)
    r.on_unwritten();
}

void slot::on_abandon(std::function<void()> f) {
  latch.on_abandon(std::move(f));
}

} // namespace spool::http::detail
