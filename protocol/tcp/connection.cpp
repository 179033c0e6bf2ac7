// One msgpack connection (protocol/tcp/connection.hpp).

#include "protocol/tcp/connection.hpp"

#include <simdjson.h>

#include <array>

#include "wire/frame.hpp"
#include "wire/writer.hpp"

namespace spool::mp {

std::string error_frame(std::uint64_t id, const api_error& e) {
  // A message may echo request bytes (an op's name): msgpack's str is
  // UTF-8, so bytes that are not are replaced.
  auto message = e.message;
  if (!simdjson::validate_utf8(message.data(), message.size()))
    for (auto& ch : message)
      if (static_cast<unsigned char>(ch) >= 0x80)
        ch = '?';
  writer w;
  w.begin_object();
  w.kv("id", id);
  w.kv("ok", false);
  w.key("error").begin_object();
  w.kv("code", to_string(e.code));
  w.kv("message", message);
  if (e.leader) { // api.md: where the request belongs
    if (!e.leader->msgpack.empty())
      w.kv("leader", e.leader->msgpack);
    w.kv("leaderNode", e.leader->node);
    w.kv("slot", std::uint64_t{e.leader->slot});
    w.kv("epoch", e.leader->epoch);
  }
  w.end_object();
  if (wire_of(e.code).retry_after) // api.md: 429 and 503 say when to retry
    w.kv("retryAfterMs", 1000);
  w.end_object();
  return w.take_frame();
}

std::optional<std::string> http_refusal(std::string_view first,
                                        std::uint16_t http_port) {
  // Four letters or spaces, a letter first (`GET `, `POST`, `HEAD`): as a
  // length that is over 1 GiB, and a connection's first frame is a small
  // `hello`, so no client of this door starts so.
  if (first.size() < 4 || first[0] < 'A' || first[0] > 'Z')
    return std::nullopt;
  for (char c : first.substr(0, 4))
    if (c != ' ' && (c < 'A' || c > 'Z'))
      return std::nullopt;
  std::string body = "This is Spool's msgpack door: it speaks length-prefixed "
                     "msgpack frames (docs/protocol.md), not HTTP. Send HTTP "
                     "to the HTTP door";
  body += http_port ? ", port " + std::to_string(http_port) + ".\n"
                    : " (port 6632 by default).\n";
  return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
         "Content-Length: "
         + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

namespace detail {

namespace {

/// A write (the answers batched into it) not done this long closes its
/// connection: the client stopped reading (it holds at most
/// `max_in_flight` answers meanwhile).
constexpr std::chrono::milliseconds write_timeout{60'000};

/// At `max_in_flight` the socket is still read until this much waits in
/// the buffer (not cut into frames): a client that leaves is seen (EOF)
/// and its parked requests are cancelled, as HTTP's connection does.
constexpr std::size_t full_read_bytes = std::size_t{64} << 10;

/// A connection not yet authenticated (tokens on) sends frames of at most
/// this (its hello; what it pipelines behind it is cut once the hello has
/// verified).
constexpr std::size_t unauthenticated_frame_bytes = std::size_t{64} << 10;

} // namespace

void slot::respond(std::string frame, std::function<void()> on_unwritten) {
  if (!latch.answer())
    return;
  auto c = conn.lock();
  if (!c) {
    if (on_unwritten)
      on_unwritten();
    return;
  }
  c->deliver(shared_from_this(), std::move(frame), std::move(on_unwritten));
}

void slot::on_abandon(std::function<void()> f) {
  latch.on_abandon(std::move(f));
}

connection::connection(std::shared_ptr<server::impl> s, tcp::socket sock) :
    srv(std::move(s)),
    socket(std::move(sock)),
    strand(asio::make_strand(srv->pool->context())),
    timer(strand) {
  last_activity = clock_type::now();
  auth_deadline = last_activity + srv->limits.auth_timeout;
  handshake_deadline = last_activity + srv->limits.handshake_timeout;
  if (auto ctx = srv->tls.load())
    tls = std::make_unique<tls::channel>(std::move(ctx), true);
  asio::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (!ec)
    sess.peer = ep.address().to_string() + ":" + std::to_string(ep.port());
}

void connection::start() {
  asio::error_code ec;
  socket.non_blocking(true, ec);
  asio::post(strand, [self = shared_from_this()] {
    if (self->closed) // drained or closed before it started
      return;
    self->arm_timer();
    self->wait_readable();
  });
}

void connection::drain() {
  asio::post(strand, [self = shared_from_this()] {
    self->draining = true;
    if (self->in_flight == 0 && !self->writing && !self->lingering)
      self->linger_close();
  });
}

void connection::deliver(std::shared_ptr<slot> s, std::string frame,
                         std::function<void()> on_unwritten) {
  asio::post(strand, [self = shared_from_this(), s = std::move(s),
                      frame = std::move(frame),
                      on_unwritten = std::move(on_unwritten)]() mutable {
    self->open.erase(s);
    if (self->closed) {
      if (on_unwritten)
        on_unwritten();
      return;
    }
    self->pending.push_back(std::move(frame));
    self->pending_unwritten.push_back(std::move(on_unwritten));
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
  for (auto& s : open) {
    s->latch.abandon();
  }
  open.clear();
  for (auto* list : {&out_unwritten, &pending_unwritten})
    for (auto& f : *list)
      if (f)
        f();
  out_unwritten.clear();
  pending_unwritten.clear();
  pending.clear();
  inbuf.clear();
  srv->conns.remove(shared_from_this());
}

void connection::wait_readable() {
  if (closed || reading || draining || close_after_write || close_when_answered
      || (full() && inbuf.size() >= full_read_bytes))
    return;
  reading = true;
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
  // At most 1 MiB per wake-up: the io thread's other connections get
  // their turn.
  bool was_empty = inbuf.empty();
  io::read_result r;
  if (tls) {
    auto sr
        = io::read_sealed(socket, *tls, inbuf, [this](std::string_view raw) {
            return open_tls(raw);
          });
    if (sr.ended)
      return;
    r = sr;
    flush(); // the handshake's bytes, and what waited for its end
  } else {
    r = io::read_available(socket, &inbuf);
  }
  if (r.bytes > 0)
    last_activity = clock_type::now();
  if (r.gone)
    return close(); // the client left (EOF or an error)
  if (r.bytes > 0 && was_empty)
    frame_began = clock_type::now();
  parse();
  wait_readable();
}

bool connection::open_tls(std::string_view raw) {
  if (std::exchange(first_read, false) && !tls::looks_like_tls(raw)) {
    // A client without TLS: told so in clear, then closed.
    plain_refusal = true;
    ++in_flight;
    std::string text = "This is a TLS door: connect with TLS (spool --tls, "
                       "client::options::tls)";
    answer_now(http_refusal(raw, 0)
                   ? "HTTP/1.1 400 Bad Request\r\nContent-Type: "
                     "text/plain\r\nContent-Length: "
                         + std::to_string(text.size() + 1)
                         + "\r\nConnection: close\r\n\r\n" + text + "\n"
                   : error_frame(0, make_error(errc::bad_request, text)));
    close_after_write = true;
    inbuf.clear();
    return false;
  }
  if (plain_refusal)
    return false;
  if (!tls->feed(raw, inbuf)) {
    // Its alert goes out as it is (already a record), and nothing else:
    // answers not written yet are dropped (their leases released).
    for (auto& f : pending_unwritten)
      if (f)
        f();
    pending.clear();
    pending_unwritten.clear();
    plain_refusal = true;
    tls->take_output(pending.emplace_back());
    pending_unwritten.emplace_back();
    ++in_flight;
    close_after_write = true;
    flush();
    return false;
  }
  if (sess.cert_subject.empty() && tls->handshake_done())
    sess.cert_subject = tls->peer_subject();
  return true;
}

void connection::parse() {
  std::size_t pos = 0;
  // Before its token verified, a connection's frames are small (a hello
  // is): it holds no more than this of the server's memory.
  auto max = unauthenticated ? std::min(srv->limits.max_frame_bytes,
                                        unauthenticated_frame_bytes)
                             : srv->limits.max_frame_bytes;
  frame_cut cut;
  while (!closed && !draining && !close_after_write && !close_when_answered
         && !full()) {
    // A connection's first bytes: text where a length belongs is a client
    // speaking HTTP (or typing), whatever the frame limit.
    std::optional<std::string> refusal;
    if (!framed && inbuf.size() >= 4)
      refusal = http_refusal(inbuf, srv->http_port.load());
    cut = cut_frame(std::string_view{inbuf}.substr(pos), max);
    if (refusal || cut.kind == frame_cut::too_large) {
      ++in_flight;
      answer_now(refusal ? std::move(*refusal)
                         : error_frame(
                             0, make_error(errc::too_large, "Frame of ",
                                           cut.length, " bytes exceeds ", max,
                                           " bytes "
                                           "(msgpack.maxFrameBytes)")));
      close_after_write = true; // nothing after it can be framed
      inbuf.clear();
      return;
    }
    if (cut.kind == frame_cut::need_more)
      break;
    framed = true;
    dispatch(std::string_view{inbuf}.substr(pos + 4, cut.length));
    pos += 4 + cut.length;
  }
  if (pos > 0) {
    inbuf.erase(0, pos);
    frame_began = clock_type::now(); // what is left begins the next frame
  }
  // The buffer grows as bytes come (never by a length that is only
  // announced); a big frame's room is not kept.
  if (inbuf.empty() && inbuf.capacity() > (1u << 20))
    std::string{}.swap(inbuf);
}

void connection::dispatch(std::string_view body) {
  ++in_flight;
  std::uint64_t id = 0;
  auto f = decode_request(body, id);
  if (!f)
    return answer_now(error_frame(id, f.err()));
  auto s = std::make_shared<slot>(weak_from_this());
  open.insert(s);
  try {
    srv->h(*f, s, sess);
  } catch (const std::bad_alloc&) { // the request, read, did not fit
    s->respond(
        error_frame(id, make_error(errc::too_large,
                                   "The request does not fit in memory")),
        {});
  } catch (const std::exception& e) {
    s->respond(error_frame(id, make_error(errc::internal, e.what())), {});
  }
  if (unauthenticated && sess.who) { // its hello's token verified
    unauthenticated = false;
    srv->pending_auth.fetch_sub(1);
  }
  if (sess.close_after_answer)
    close_when_answered = true; // nothing more is read
}

void connection::answer_now(std::string frame) {
  pending.push_back(std::move(frame));
  pending_unwritten.emplace_back();
  flush();
}

void connection::flush() {
  if (writing || closed || (pending.empty() && !(tls && tls->has_output())))
    return;
  outbufs.swap(pending);
  pending.clear();
  out_unwritten.swap(pending_unwritten);
  pending_unwritten.clear();
  written_frames = outbufs.size();
  if (tls && !plain_refusal) {
    // One sealed buffer for the answers (and the handshake's bytes).
    std::string sealed;
    for (auto& f : outbufs)
      tls->seal(f, sealed);
    tls->take_output(sealed);
    outbufs.clear();
    outbufs.push_back(std::move(sealed));
  }
  writing = true;
  write_began = clock_type::now();
  std::vector<asio::const_buffer> bufs;
  bufs.reserve(outbufs.size());
  for (auto& f : outbufs)
    bufs.emplace_back(asio::buffer(f));
  asio::async_write(
      socket, bufs,
      asio::bind_executor(strand, [self = shared_from_this()](
                                      asio::error_code ec, std::size_t) {
        self->writing = false;
        if (self->closed)
          return;
        if (ec)
          return self->close();
        bool was_full = self->full();
        self->in_flight -= std::min(self->in_flight, self->written_frames);
        // What waited for room was not the sender's delay: a frame still
        // unfinished is timed from now.
        if (was_full && !self->full())
          self->frame_began = clock_type::now();
        self->outbufs.clear();
        self->out_unwritten.clear();
        self->last_activity = clock_type::now();
        // An oversized frame's error is the last thing written (answers of
        // requests still in flight before it are not waited for); a drained
        // connection closes once nothing is in flight.
        if (self->pending.empty()
            && (self->close_after_write
                || ((self->draining || self->close_when_answered)
                    && self->in_flight == 0)))
          return self->linger_close();
        self->flush();
        self->parse();
        self->wait_readable();
      }));
}

void connection::linger_close() {
  asio::error_code ec;
  socket.shutdown(tcp::socket::shutdown_send, ec);
  if (ec)
    return close();
  lingering = true;
  linger_until = clock_type::now() + std::chrono::seconds{2};
  arm_timer(); // (replaces the wait armed before)
  drain_input();
}

void connection::drain_input() {
  socket.async_wait(tcp::socket::wait_read,
                    asio::bind_executor(strand, [self = shared_from_this()](
                                                    asio::error_code ec) {
                      if (self->closed)
                        return;
                      if (ec || io::read_available(self->socket, nullptr).gone
                          || clock_type::now() >= self->linger_until)
                        return self->close();
                      self->drain_input();
                    }));
}

void connection::arm_timer() {
  auto period = lingering ? std::chrono::milliseconds{250}
                          : std::min({srv->limits.idle_timeout, write_timeout,
                                      srv->limits.frame_timeout});
  auto until = [&](clock_type::time_point t) {
    period = std::max(
        std::min(period, std::chrono::duration_cast<std::chrono::milliseconds>(
                             t - clock_type::now())),
        std::chrono::milliseconds{1});
  };
  if (unauthenticated && !lingering)
    until(auth_deadline);
  if (tls && !tls->handshake_done() && !lingering)
    until(handshake_deadline);
  timer.expires_after(period);
  timer.async_wait([self = shared_from_this()](asio::error_code ec) {
    if (!ec && !self->closed)
      self->on_timer();
  });
}

void connection::on_timer() {
  auto now = clock_type::now();
  if (lingering && now >= linger_until)
    return close();
  // A frame begun and not finished (a slow sender). At maxInFlight frames
  // are neither cut nor (past 64 KiB) read: what waits then is not timed.
  // Not while draining or lingering: what is in flight finishes then.
  if (!inbuf.empty() && !full() && !draining && !lingering
      && now - frame_began >= srv->limits.frame_timeout)
    return close();
  if (writing && now - write_began >= write_timeout)
    return close(); // the client stopped reading
  if (in_flight == 0 && now - last_activity >= srv->limits.idle_timeout)
    return close();
  if (unauthenticated && now >= auth_deadline)
    return close(); // no valid token in time (docs/security.md)
  if (tls && !tls->handshake_done() && now >= handshake_deadline)
    return close(); // a handshake that stalls ends only its connection
  arm_timer();
}

} // namespace detail

} // namespace spool::mp
