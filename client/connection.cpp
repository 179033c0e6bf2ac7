// The client's asynchronous core (client/connection.hpp).

#include "client/connection.hpp"

#include <asio.hpp>

#include <algorithm>
#include <array>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "tls/channel.hpp"
#include "wire/find.hpp"
#include "wire/frame.hpp"

namespace spool::client {

namespace {

using tcp = asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

/// The protocol version this client speaks.
constexpr std::uint64_t protocol_version = 1;
/// Where a request frame's id (uint64, 0xcf + 8 bytes) sits: after the
/// length (4), the map32 header (5), the key "id" (3) and the marker (1).
constexpr std::size_t id_at = 13;

/// A request frame with `id` 0 to patch, `op`, and the fields.
std::string build_frame(std::string_view op, const fields_fn& fields) {
  mp::writer w;
  w.begin_object();
  w.key("id").raw(std::string_view{"\xcf\0\0\0\0\0\0\0\0", 9});
  w.kv("op", op);
  if (fields)
    fields(w);
  w.end_object();
  return w.take_frame();
}

void patch_id(std::string& frame, std::uint64_t id) {
  for (int i = 0; i < 8; ++i)
    frame[id_at + static_cast<std::size_t>(i)]
        = static_cast<char>(id >> (56 - 8 * i));
}

bool refer(msgpack::type::object_type, std::size_t, void*) {
  return true;
}

} // namespace

api_error error_of(const msgpack::object& root) {
  api_error e{errc::internal, "malformed error answer"};
  auto err = mp::find(root, "error");
  if (!err)
    return e;
  auto str = [&](std::string_view k) {
    auto v = mp::find(*err, k);
    return v && v->type == msgpack::type::STR
               ? std::string{v->via.str.ptr, v->via.str.size}
               : std::string{};
  };
  auto code = str("code");
  e.message = str("message");
  for (int i = 1; i <= static_cast<int>(last_errc); ++i)
    if (auto c = static_cast<errc>(i); to_string(c) == code)
      e.code = c;
  if (e.code == errc::not_leader && mp::find(*err, "leaderNode")) {
    auto num = [&](std::string_view k) -> std::uint64_t {
      auto v = mp::find(*err, k);
      return v && v->type == msgpack::type::POSITIVE_INTEGER ? v->via.u64 : 0;
    };
    e.leader = leader_ref{static_cast<std::uint32_t>(num("slot")),
                          num("epoch"),
                          str("leaderNode"),
                          {},
                          str("leader")};
  }
  return e;
}

struct connection::impl : std::enable_shared_from_this<impl> {
  explicit impl(options o) : opt(std::move(o)), backoff(opt.backoff_min) {
  }

  options opt;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
      work{asio::make_work_guard(io)};
  std::thread thread;
  tcp::resolver resolver{io};
  tcp::socket sock{io};
  asio::steady_timer connect_timer{io};
  asio::steady_timer retry{io};
  asio::steady_timer ticker{io};
  bool ticking = false;

  enum class state { idle, connecting, greeting, ready, closed };
  state st = state::idle;
  std::atomic<bool> up{false};
  std::atomic<std::uint64_t> connects{0};
  std::atomic<bool> heard{false}; ///< a frame was ever read
  /// The last hello's `features` (read by other threads: `supports`).
  mutable std::mutex features_mx;
  std::vector<std::string> features;
  std::uint64_t epoch = 0; ///< counts connections: stale handlers see it
  std::chrono::milliseconds backoff;
  std::size_t max_in_flight = 1024;
  std::size_t max_frame_bytes = std::size_t{64} << 20; ///< hello's
  bool retry_armed = false;
  std::string last_error; ///< why the last connection ended or failed
  std::uint64_t next_id = 1;
  std::uint64_t hello_id = 0;

  struct waiting {
    std::uint64_t id;
    std::string frame;
    completion done;
    clock_type::time_point deadline;
    std::chrono::milliseconds timeout;
    bool resent = false; ///< sent again after a fresh hello already
  };
  std::deque<waiting> queue;
  /// Refused as `unauthenticated`: sent again, in order, after the next
  /// hello.
  std::deque<waiting> reauth;
  struct sent {
    completion done;
    clock_type::time_point deadline;
    std::chrono::milliseconds timeout;
    std::string frame; ///< until it is handed to the socket
    bool written = false;
    /// With a token source: the frame kept once written, to send again if
    /// it is refused as `unauthenticated` (once: `resent`).
    std::string kept;
    bool resent = false;
  };
  std::unordered_map<std::uint64_t, sent> in_flight;

  /// Requests in flight not handed to the socket yet, in order: a write
  /// takes those still in flight (one that timed out meanwhile is never
  /// sent), and a lost connection puts them back in the queue (they were
  /// never sent: no doubt about them).
  std::deque<std::uint64_t> unsent;
  std::string outbuf; ///< the write under way
  bool writing = false;
  std::string inbuf;
  std::array<char, 64 * 1024> chunk;
  /// TLS: this connection's channel (a new one per connection).
  std::unique_ptr<tls::channel> secure;

  void submit(std::string frame, completion done,
              std::chrono::milliseconds timeout) {
    if (st == state::closed)
      return done(make_error(errc::unavailable, "client closed"));
    if (queue.size() >= opt.max_queued)
      return done(make_error(errc::unavailable, "too many requests queued (",
                             opt.max_queued, ")"));
    // (a deadline past ~35 years would overflow the clock's arithmetic)
    timeout
        = std::min(timeout, std::chrono::milliseconds{std::int64_t{1} << 40});
    auto id = next_id++;
    patch_id(frame, id);
    queue.push_back({id, std::move(frame), std::move(done),
                     clock_type::now() + timeout, timeout});
    tick();
    if (st == state::idle && !retry_armed)
      connect();
    pump();
  }

  /// Moves queued requests into flight while there is room.
  void pump() {
    if (st != state::ready)
      return;
    while (!queue.empty() && in_flight.size() < max_in_flight) {
      auto w = std::move(queue.front());
      queue.pop_front();
      // A frame the server would refuse whole (and close for): refused
      // here, alone (the length counts the body: the frame less 4 bytes).
      if (w.frame.size() - 4 > max_frame_bytes) {
        w.done(make_error(errc::too_large, "Request of ", w.frame.size() - 4,
                          " bytes exceeds the server's maxFrameBytes (",
                          max_frame_bytes, ")"));
        continue;
      }
      unsent.push_back(w.id);
      in_flight.emplace(w.id, sent{std::move(w.done),
                                   w.deadline,
                                   w.timeout,
                                   std::move(w.frame),
                                   false,
                                   {},
                                   w.resent});
    }
    write();
  }

  void write() {
    if (writing)
      return;
    outbuf.clear();
    for (auto id : unsent)
      if (auto it = in_flight.find(id); it != in_flight.end()) {
        outbuf += it->second.frame;
        if (opt.token && id != hello_id)
          it->second.kept = std::move(it->second.frame);
        it->second.frame.clear();
        it->second.frame.shrink_to_fit();
        it->second.written = true;
      }
    unsent.clear();
    if (secure) { // sealed, with what the handshake wants sent
      std::string sealed;
      secure->seal(outbuf, sealed);
      outbuf = std::move(sealed);
    }
    if (outbuf.empty())
      return;
    writing = true;
    asio::async_write(sock, asio::buffer(outbuf),
                      [self = shared_from_this(),
                       e = epoch](asio::error_code ec, std::size_t) {
                        if (e != self->epoch)
                          return;
                        self->writing = false;
                        self->outbuf.clear();
                        if (ec)
                          return self->lost("write failed: " + ec.message());
                        self->write();
                      });
  }

  void connect() {
    st = state::connecting;
    ++epoch;
    resolver.async_resolve(
        opt.host, std::to_string(opt.port),
        [self = shared_from_this(),
         e = epoch](asio::error_code ec, tcp::resolver::results_type eps) {
          if (e != self->epoch || self->st != state::connecting)
            return;
          if (ec)
            return self->lost("cannot resolve " + self->opt.host + ": "
                              + ec.message());
          self->connect_timer.expires_after(self->opt.connect_timeout);
          self->connect_timer.async_wait([self, e](asio::error_code t) {
            if (!t && e == self->epoch && self->st == state::connecting) {
              asio::error_code ignore;
              self->sock.close(ignore); // the connect completes aborted
            }
          });
          asio::async_connect(
              self->sock, eps,
              [self, e](asio::error_code c, const tcp::endpoint&) {
                self->connect_timer.cancel();
                if (e != self->epoch || self->st != state::connecting)
                  return;
                if (c)
                  return self->lost("cannot connect to " + self->opt.host + ":"
                                    + std::to_string(self->opt.port) + ": "
                                    + c.message());
                asio::error_code ignore;
                self->sock.set_option(tcp::no_delay(true), ignore);
                if (self->opt.tls) { // hello waits in it for the handshake
                  self->secure = std::make_unique<tls::channel>(
                      self->opt.tls, false, self->opt.host);
                  if (!self->secure->start())
                    return self->lost("TLS: " + self->secure->error());
                }
                self->greet();
                self->read();
              });
        });
  }

  void greet() {
    st = state::greeting;
    hello_id = next_id++;
    std::string token = opt.token ? opt.token() : std::string{};
    auto frame = build_frame("hello", [&](mp::writer& w) {
      w.kv("version", protocol_version);
      w.kv("client", "spool-cpp");
      if (!token.empty())
        w.kv("token", token);
    });
    patch_id(frame, hello_id);
    unsent.push_front(hello_id);
    in_flight.emplace(hello_id,
                      sent{[self = shared_from_this()](expected<reply_ptr> r) {
                             self->greeted(std::move(r));
                           },
                           clock_type::now() + opt.connect_timeout,
                           opt.connect_timeout,
                           std::move(frame),
                           false,
                           {},
                           false});
    tick();
    write();
  }

  void greeted(expected<reply_ptr> r) {
    if (!r) {
      // A refusal (a version this server does not speak) fails what waits;
      // the connection is tried again later (the server may change).
      auto err = r.err();
      for (auto* list : {&reauth, &queue}) {
        for (auto& w : *list)
          w.done(err);
        list->clear();
      }
      return lost(err.message);
    }
    auto& root = (*r)->root();
    std::vector<std::string> said;
    if (auto f = mp::find(root, "features");
        f && f->type == msgpack::type::ARRAY)
      for (std::uint32_t j = 0; j < f->via.array.size; ++j)
        if (auto& s = f->via.array.ptr[j]; s.type == msgpack::type::STR)
          said.emplace_back(s.via.str.ptr, s.via.str.size);
    auto count = [&](std::string_view k) -> std::optional<std::uint64_t> {
      auto v = mp::find(root, k);
      if (v && v->type == msgpack::type::POSITIVE_INTEGER)
        return v->via.u64;
      return std::nullopt;
    };
    if (auto n = count("maxInFlight"))
      max_in_flight = std::max<std::size_t>(1, *n);
    if (auto n = count("maxFrameBytes"))
      max_frame_bytes = std::min<std::uint64_t>(*n, 0xffffffff);
    {
      std::lock_guard lock{features_mx};
      features = std::move(said);
    }
    last_error.clear();
    st = state::ready;
    up = true;
    ++connects;
    backoff = opt.backoff_min;
    // What the server refused for an expired token goes first, in order.
    while (!reauth.empty()) {
      queue.push_front(std::move(reauth.back()));
      reauth.pop_back();
    }
    pump();
  }

  void read() {
    sock.async_read_some(
        asio::buffer(chunk), [self = shared_from_this(),
                              e = epoch](asio::error_code ec, std::size_t n) {
          if (e != self->epoch)
            return;
          if (ec)
            return self->lost(ec == asio::error::eof
                                  ? std::string{"the server closed"}
                                  : ec.message());
          if (self->secure) {
            if (!self->secure->feed({self->chunk.data(), n}, self->inbuf))
              return self->lost("TLS: " + self->secure->error());
            self->write(); // the handshake's bytes, and what it held
          } else {
            self->inbuf.append(self->chunk.data(), n);
          }
          if (self->st == state::greeting && self->inbuf.starts_with("HTTP/"))
            return self->lost("the server at " + self->opt.host + ":"
                              + std::to_string(self->opt.port)
                              + " answered in HTTP: that is an HTTP port, "
                                "not a msgpack door");
          if (!self->take_frames())
            return;
          self->read();
        });
  }

  /// Answers the whole frames read; false when the connection was lost.
  bool take_frames() {
    std::size_t pos = 0;
    for (;;) {
      auto cut = mp::cut_frame(std::string_view{inbuf}.substr(pos),
                               std::size_t{0xffffffff});
      if (cut.kind != mp::frame_cut::whole)
        break;
      auto rep = std::make_shared<reply>();
      rep->frame.assign(inbuf, pos + 4, cut.length);
      pos += 4 + cut.length;
      try {
        // One zone chunk for the whole tree (about three bytes of objects
        // per byte of a pop's answer, up to 16 MiB), not 8 KiB at a time.
        auto z = std::make_unique<msgpack::zone>(std::clamp<std::size_t>(
            3 * cut.length, MSGPACK_ZONE_CHUNK_SIZE, std::size_t{16} << 20));
        auto root
            = msgpack::unpack(*z, rep->frame.data(), rep->frame.size(), &refer);
        rep->handle = msgpack::object_handle(root, std::move(z));
      } catch (const std::exception& ex) {
        lost(std::string{"undecodable answer: "} + ex.what());
        return false;
      }
      heard = true;
      answer(std::move(rep));
      if (st == state::closed || st == state::idle)
        return false;
    }
    inbuf.erase(0, pos);
    return true;
  }

  void answer(reply_ptr rep) {
    auto& root = rep->root();
    if (root.type != msgpack::type::MAP)
      return lost("an answer that is not a map");
    std::optional<std::uint64_t> id;
    bool ok = false;
    for (std::uint32_t i = 0; i < root.via.map.size; ++i) {
      auto& kv = root.via.map.ptr[i];
      if (kv.key.type != msgpack::type::STR)
        continue;
      std::string_view k{kv.key.via.str.ptr, kv.key.via.str.size};
      if (k == "id" && kv.val.type == msgpack::type::POSITIVE_INTEGER)
        id = kv.val.via.u64;
      else if (k == "ok" && kv.val.type == msgpack::type::BOOLEAN)
        ok = kv.val.via.boolean;
    }
    if (id == std::uint64_t{0} && !ok) // a frame-level refusal (too large)
      return lost(error_of(root).message);
    if (!id)
      return lost("an answer without an id");
    auto it = in_flight.find(*id);
    if (it == in_flight.end())
      return; // timed out before: dropped
    if (!ok && opt.token && *id != hello_id && !it->second.resent
        && !it->second.kept.empty()) {
      auto err = error_of(root);
      if (err.code == errc::unauthenticated) {
        // Refused before it ran: said again after a fresh hello.
        auto& s = it->second;
        reauth.push_back({*id, std::move(s.kept), std::move(s.done), s.deadline,
                          s.timeout, true});
        in_flight.erase(it);
        // What was sent after it but not written yet goes back to the
        // queue, behind it: nothing overtakes a request said again.
        std::deque<std::uint64_t> keep; // a hello waiting to be written
        for (auto u = unsent.rbegin(); u != unsent.rend(); ++u) {
          auto f = in_flight.find(*u);
          if (*u == hello_id)
            keep.push_front(*u);
          else if (f != in_flight.end() && !f->second.written) {
            auto& w = f->second;
            queue.push_front({*u, std::move(w.frame), std::move(w.done),
                              w.deadline, w.timeout, w.resent});
            in_flight.erase(f);
          }
        }
        unsent = std::move(keep);
        if (st == state::ready)
          greet();
        return;
      }
    }
    auto done = std::move(it->second.done);
    in_flight.erase(it);
    if (ok)
      done(std::move(rep));
    else
      done(error_of(root));
    pump();
  }

  /// The connection ended: what is in flight fails, the rest waits for
  /// the next one, tried after the backoff.
  void lost(const std::string& why) {
    if (st == state::closed)
      return;
    ++epoch;
    up = false;
    st = state::idle;
    last_error = why;
    asio::error_code ignore;
    sock.close(ignore);
    writing = false;
    unsent.clear();
    outbuf.clear();
    inbuf.clear();
    secure.reset();
    // Written: may or may not have been applied. Never written: back to
    // the queue, in order, for the next connection.
    auto failed = std::move(in_flight);
    in_flight.clear();
    std::vector<std::pair<std::uint64_t, sent>> back;
    for (auto& [id, s] : failed) {
      if (id == hello_id)
        continue;
      if (s.written)
        s.done(make_error(errc::unavailable, "connection lost: ", why));
      else
        back.emplace_back(id, std::move(s));
    }
    std::sort(back.begin(), back.end(),
              [](auto& a, auto& b) { return a.first > b.first; });
    for (auto& [id, s] : back)
      queue.push_front({id, std::move(s.frame), std::move(s.done), s.deadline,
                        s.timeout, s.resent});
    while (!reauth.empty()) { // refused before they ran: sent again
      queue.push_front(std::move(reauth.back()));
      reauth.pop_back();
    }
    if (opt.fail_unconnected && connects.load() == 0) {
      auto waiting = std::move(queue);
      queue.clear();
      for (auto& w : waiting)
        w.done(make_error(errc::unavailable, why));
      return;
    }
    if (queue.empty())
      return; // reconnect when something is sent
    retry_armed = true;
    retry.expires_after(backoff);
    backoff = std::min(backoff * 2, opt.backoff_max);
    retry.async_wait([self = shared_from_this()](asio::error_code ec) {
      self->retry_armed = false;
      if (!ec && self->st == state::idle)
        self->connect();
    });
  }

  /// Deadlines, checked every 20 ms while anything waits.
  void tick() {
    if (ticking)
      return;
    ticking = true;
    ticker.expires_after(20ms);
    ticker.async_wait([self = shared_from_this()](asio::error_code ec) {
      self->ticking = false;
      if (ec || self->st == state::closed)
        return;
      self->expire();
      if (!self->queue.empty() || !self->in_flight.empty())
        self->tick();
    });
  }

  void expire() {
    auto now = clock_type::now();
    auto timed_out = [this](std::chrono::milliseconds t) {
      if (st != state::ready && !last_error.empty()) // say why, too
        return make_error(errc::unavailable, "timed out after ", t.count(),
                          " ms (", last_error, ")");
      return make_error(errc::unavailable, "timed out after ", t.count(),
                        " ms");
    };
    for (auto* list : {&reauth, &queue})
      for (auto it = list->begin(); it != list->end();)
        if (it->deadline <= now) {
          auto done = std::move(it->done);
          auto t = it->timeout;
          it = list->erase(it);
          done(timed_out(t));
        } else {
          ++it;
        }
    for (auto it = in_flight.begin(); it != in_flight.end();)
      if (it->second.deadline <= now) {
        auto done = std::move(it->second.done);
        auto t = it->second.timeout;
        bool hello = it->first == hello_id;
        it = in_flight.erase(it);
        if (hello) {
          lost("no answer to hello");
          return;
        }
        done(timed_out(t));
      } else {
        ++it;
      }
    pump();
  }

  void close() {
    st = state::closed;
    up = false;
    ++epoch;
    asio::error_code ignore;
    sock.close(ignore);
    resolver.cancel();
    retry.cancel();
    ticker.cancel();
    connect_timer.cancel();
    auto failed = std::move(in_flight);
    in_flight.clear();
    for (auto& [id, s] : failed)
      if (id != hello_id)
        s.done(make_error(errc::unavailable, "client closed"));
    for (auto& w : reauth)
      w.done(make_error(errc::unavailable, "client closed"));
    reauth.clear();
    for (auto& w : queue)
      w.done(make_error(errc::unavailable, "client closed"));
    queue.clear();
  }
};

connection::connection(options o) :
    impl_(std::make_shared<impl>(std::move(o))) {
  impl_->thread = std::thread{[i = impl_] { i->io.run(); }};
}

connection::~connection() {
  asio::post(impl_->io, [i = impl_] {
    i->close();
    i->work.reset();
  });
  // Destroyed in one of its own completions, on the io thread, which
  // cannot join itself: it ends by itself once the close has run (its
  // lambda holds the impl until then). Closed at once, so that the rest of
  // the handler that ran the completion sends nothing more.
  if (std::this_thread::get_id() == impl_->thread.get_id()) {
    impl_->st = impl::state::closed;
    impl_->up = false;
    impl_->thread.detach();
  } else {
    impl_->thread.join();
  }
}

void connection::request(std::string_view op, const fields_fn& fields,
                         completion done,
                         std::optional<std::chrono::milliseconds> timeout) {
  auto frame = build_frame(op, fields);
  auto t = timeout.value_or(impl_->opt.request_timeout);
  asio::post(impl_->io, [i = impl_, frame = std::move(frame),
                         done = std::move(done), t]() mutable {
    i->submit(std::move(frame), std::move(done), t);
  });
}

std::future<expected<reply_ptr>>
connection::request(std::string_view op, const fields_fn& fields,
                    std::optional<std::chrono::milliseconds> timeout) {
  auto p = std::make_shared<std::promise<expected<reply_ptr>>>();
  auto f = p->get_future();
  request(
      op, fields, [p](expected<reply_ptr> r) { p->set_value(std::move(r)); },
      timeout);
  return f;
}

bool connection::connected() const {
  return impl_->up.load();
}

std::uint64_t connection::connects() const {
  return impl_->connects.load();
}

bool connection::heard_from_server() const {
  return impl_->heard.load();
}

bool connection::supports(std::string_view feature) const {
  std::lock_guard lock{impl_->features_mx};
  auto& f = impl_->features;
  return std::find(f.begin(), f.end(), feature) != f.end();
}

} // namespace spool::client
