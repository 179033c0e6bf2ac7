#pragma once

/// Inside the msgpack listener (server.cpp, connection.cpp); nothing else
/// includes this. Each connection runs on a strand of its own: it waits
/// until readable, reads what is there (into a per-thread buffer: an idle
/// connection holds none), cuts frames, hands each decoded request to the
/// handler, and writes answers as they come (`slot` posts them onto the
/// strand), batching those that arrive while a write is under way.

#include <asio.hpp>

#include <atomic>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "protocol/io/conn_set.hpp"
#include "protocol/io/latch.hpp"
#include "protocol/io/listener.hpp"
#include "protocol/io/pool.hpp"
#include "protocol/tcp/server.hpp"
#include "tls/channel.hpp"

namespace spool::mp {

namespace detail {

using tcp = asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

class connection;

/// One request in flight on a connection.
class slot : public exchange, public std::enable_shared_from_this<slot> {
public:
  explicit slot(std::weak_ptr<connection> c) : conn(std::move(c)) {
  }
  void respond(std::string frame, std::function<void()> on_unwritten) override;
  void on_abandon(std::function<void()> f) override;

  std::weak_ptr<connection> conn;
  io::request_latch latch;
};

} // namespace detail

struct server::impl : std::enable_shared_from_this<server::impl> {
  server_limits limits;
  handler h;
  std::shared_ptr<io::pool> pool;
  std::shared_ptr<io::listener> door;
  io::conn_set<detail::connection> conns;
  std::atomic<bool> draining{false};
  /// Connections not yet authenticated (tokens on).
  std::atomic<std::size_t> pending_auth{0};
  /// TLS for new connections (none: plain).
  std::atomic<std::shared_ptr<const tls::context>> tls;
  /// Named to HTTP requests (0: not known); set before `start`.
  std::atomic<std::uint16_t> http_port{0};
  bool shut_down = false;

  impl(server_limits l, handler hh, std::shared_ptr<io::pool> p) :
      limits(l), h(std::move(hh)), pool(std::move(p)) {
  }
  /// Takes an accepted connection, or refuses it (busy, draining).
  void take(detail::tcp::socket sock);
};

namespace detail {

class connection : public std::enable_shared_from_this<connection> {
public:
  connection(std::shared_ptr<server::impl> s, tcp::socket sock);

  void start();
  /// Graceful close: nothing more is read; closes once what is in flight
  /// is answered and written.
  void drain();
  /// Posts the answer of `s` onto the strand (any thread).
  void deliver(std::shared_ptr<slot> s, std::string frame,
               std::function<void()> on_unwritten);
  /// Closes at once: unanswered requests are abandoned. Strand only.
  void close();

  std::shared_ptr<server::impl> srv;
  tcp::socket socket;
  asio::strand<asio::io_context::executor_type> strand;

private:
  /// At `max_in_flight`: no frame is cut, and reading stops at 64 KiB.
  bool full() const {
    return in_flight >= srv->limits.max_in_flight;
  }
  void wait_readable();
  void read_available();
  /// TLS: opens what was read into `inbuf`; false when the connection
  /// ends (its handshake failed, a record did not open, plain text).
  bool open_tls(std::string_view raw);
  /// Cuts and dispatches the whole frames buffered, while fewer than
  /// `max_in_flight` are unanswered.
  void parse();
  void dispatch(std::string_view body);
  /// An answer that is not the handler's (a frame that cannot be decoded);
  /// its request is counted in flight by the caller, until it is written.
  void answer_now(std::string frame);
  void flush();
  /// Ends a connection whose last answer was written: the sending side
  /// first, then what the client still sends is read and dropped until it
  /// closes too (2 s at most), so that its last answer is read, not lost
  /// to a reset.
  void linger_close();
  void drain_input();
  void arm_timer();
  void on_timer();

public:
  /// Counted among the connections not yet authenticated (set by `take`
  /// before `start`).
  void await_auth() {
    unauthenticated = true;
  }

private:
  asio::steady_timer timer;
  session sess;
  std::string inbuf; ///< bytes read, not yet cut into frames
  std::unordered_set<std::shared_ptr<slot>> open; ///< not answered yet
  /// Requests read and not yet written back (answered or not).
  std::size_t in_flight = 0;
  /// Answers waiting for the write under way (each frame as it was made:
  /// a write gathers them, copying none).
  std::vector<std::string> pending;
  std::vector<std::function<void()>> pending_unwritten;
  std::vector<std::string> outbufs; ///< the write under way
  std::vector<std::function<void()>> out_unwritten;
  bool writing = false;
  bool reading = false;
  bool closed = false;
  bool draining = false;
  bool close_after_write = false;
  /// A refused hello: nothing more is read; closes once what is in flight
  /// (that answer included) is written.
  bool close_when_answered = false;
  bool framed = false; ///< a frame was cut: the first bytes are behind
  bool lingering = false;
  /// Tokens on and not yet authenticated: counted in `pending_auth`,
  /// closed at `auth_deadline`.
  bool unauthenticated = false;
  clock_type::time_point auth_deadline;
  /// TLS: the connection's channel (none: plain), its handshake's
  /// deadline, and a refusal written in clear to a client that does not
  /// speak TLS.
  std::unique_ptr<tls::channel> tls;
  clock_type::time_point handshake_deadline;
  bool plain_refusal = false;
  bool first_read = true; ///< TLS: its first bytes are still to come
  /// Answers in the write under way (one sealed buffer holds several).
  std::size_t written_frames = 0;
  clock_type::time_point linger_until;
  clock_type::time_point frame_began; ///< the first byte of `inbuf`
  clock_type::time_point last_activity;
  clock_type::time_point write_began;
};

} // namespace detail

} // namespace spool::mp
