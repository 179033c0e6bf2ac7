// One msgpack connection (protocol/tcp/connection.hpp).

#include "protocol/tcp/connection.hpp"

#include <array>

#include "protocol/msgpack/write.hpp"

namespace spool::mp {

std::string error_frame(std::uint64_t id, const api_error& e) {
  writer w;
  w.begin_object();
  w.kv("id", id);
  w.kv("ok", false);
  w.key("error").begin_object();
  w.kv("code", to_string(e.code));
  w.kv("message", e.message);
  w.end_object();
  if (wire_of(e.code).retry_after) // api.md: 429 and 503 say when to retry
    w.kv("retryAfterMs", 1000);
  w.end_object();
  return w.take_frame();
}

namespace detail {

namespace {

thread_local std::array<char, 64 * 1024> read_buffer;

std::uint32_t be32(const char* p) {
  auto b = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16)
         | (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
}

/// A write that makes no progress this long closes its connection (a
/// client that stopped reading holds at most `max_in_flight` answers
/// meanwhile).
constexpr std::chrono::milliseconds write_timeout{60'000};

} // namespace

void slot::respond(std::string frame, std::function<void()> on_unwritten) {
  {
    std::lock_guard lock{mx};
    if (answered)
      return;
    answered = true;
    abandon_fn = nullptr;
  }
  auto c = conn.lock();
  if (!c) {
    if (on_unwritten)
      on_unwritten();
    return;
  }
  c->deliver(shared_from_this(), std::move(frame), std::move(on_unwritten));
}

void slot::on_abandon(std::function<void()> f) {
  {
    std::lock_guard lock{mx};
    if (answered)
      return;
    if (!abandoned) {
      abandon_fn = std::move(f);
      return;
    }
  }
  f();
}

connection::connection(std::shared_ptr<server::impl> s, tcp::socket sock) :
    srv(std::move(s)),
    socket(std::move(sock)),
    strand(asio::make_strand(srv->pool->context())),
    timer(strand) {
  last_activity = clock_type::now();
}

void connection::start() {
  asio::error_code ec;
  socket.non_blocking(true, ec);
  asio::post(strand, [self = shared_from_this()] {
    self->arm_timer();
    self->wait_readable();
  });
}

void connection::drain() {
  asio::post(strand, [self = shared_from_this()] {
    self->draining = true;
    if (self->in_flight == 0 && !self->writing)
      self->close();
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
    self->pending += frame;
    ++self->pending_count;
    self->pending_unwritten.push_back(std::move(on_unwritten));
    self->flush();
  });
}

void connection::close() {
  if (closed)
    return;
  closed = true;
  asio::error_code ec;
  timer.cancel();
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
  for (auto& s : open) {
    std::function<void()> f;
    {
      std::lock_guard lock{s->mx};
      s->abandoned = true;
      f = std::move(s->abandon_fn);
    }
    if (f)
      f();
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
  srv->remove(shared_from_this());
}

void connection::wait_readable() {
  if (closed || reading || draining || close_after_write
      || in_flight >= srv->limits.max_in_flight)
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
  std::size_t read = 0;
  for (;;) {
    asio::error_code ec;
    auto n = socket.read_some(asio::buffer(read_buffer), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again)
      break;
    if (ec || n == 0)
      return close(); // the client left (EOF or an error)
    last_activity = clock_type::now();
    inbuf.append(read_buffer.data(), n);
    read += n;
    if (n < read_buffer.size() || read >= (1u << 20))
      break;
  }
  parse();
  wait_readable();
}

void connection::parse() {
  std::size_t pos = 0;
  while (!closed && !draining && !close_after_write
         && in_flight < srv->limits.max_in_flight && inbuf.size() - pos >= 4) {
    std::size_t len = be32(inbuf.data() + pos);
    if (len > srv->limits.max_frame_bytes) {
      ++in_flight;
      answer_now(error_frame(0, make_error(errc::too_large, "Frame of ", len,
                                           " bytes exceeds ",
                                           srv->limits.max_frame_bytes,
                                           " bytes (msgpack.maxFrameBytes)")));
      close_after_write = true; // nothing after it can be framed
      inbuf.clear();
      return;
    }
    if (inbuf.size() - pos - 4 < len)
      break;
    dispatch(std::string_view{inbuf}.substr(pos + 4, len));
    pos += 4 + len;
  }
  inbuf.erase(0, pos);
  // A frame begun: room for it whole, once (it is at most max_frame_bytes).
  if (inbuf.size() >= 4)
    inbuf.reserve(4 + std::size_t{be32(inbuf.data())});
  else if (inbuf.empty() && inbuf.capacity() > (1u << 20))
    std::string{}.swap(inbuf); // a big frame's room is not kept
}

void connection::dispatch(std::string_view body) {
  ++in_flight;
  std::uint64_t id = 0;
  auto f = decode_request(body, id);
  if (!f)
    return answer_now(error_frame(id, f.err()));
  auto s = std::make_shared<slot>(weak_from_this());
  open.insert(s);
  srv->h(*f, s, sess);
}

void connection::answer_now(std::string frame) {
  pending += frame;
  ++pending_count;
  pending_unwritten.emplace_back();
  flush();
}

void connection::flush() {
  if (writing || closed || pending.empty())
    return;
  outbuf.swap(pending);
  pending.clear();
  out_count = pending_count;
  pending_count = 0;
  out_unwritten.swap(pending_unwritten);
  pending_unwritten.clear();
  writing = true;
  write_began = clock_type::now();
  asio::async_write(
      socket, asio::buffer(outbuf),
      asio::bind_executor(strand, [self = shared_from_this()](
                                      asio::error_code ec, std::size_t) {
        self->writing = false;
        if (self->closed)
          return;
        if (ec)
          return self->close();
        self->in_flight -= std::min(self->in_flight, self->out_count);
        self->out_count = 0;
        self->out_unwritten.clear();
        if (self->outbuf.capacity() > (1u << 20))
          std::string{}.swap(self->outbuf);
        else
          self->outbuf.clear();
        self->last_activity = clock_type::now();
        // An oversized frame's error is the last thing written; a drained
        // connection closes once nothing is in flight.
        if (self->pending.empty()
            && (self->close_after_write
                || (self->draining && self->in_flight == 0)))
          return self->close();
        self->flush();
        self->parse();
        self->wait_readable();
      }));
}

void connection::arm_timer() {
  auto period = std::min<std::chrono::milliseconds>(srv->limits.idle_timeout,
                                                    write_timeout);
  timer.expires_after(period);
  timer.async_wait([self = shared_from_this()](asio::error_code ec) {
    if (!ec && !self->closed)
      self->on_timer();
  });
}

void connection::on_timer() {
  auto now = clock_type::now();
  if (writing && now - write_began >= write_timeout)
    return close(); // the client stopped reading
  if (in_flight == 0 && now - last_activity >= srv->limits.idle_timeout)
    return close();
  arm_timer();
}

} // namespace detail

} // namespace spool::mp
