#pragma once

/// Inside the HTTP listener (server.cpp, connection.cpp); nothing else
/// includes this. Each connection runs on a strand of its own: reads (wait
/// until readable, then read what is there into a per-thread buffer, so an
/// idle connection holds no read buffer), parses up to `max_pipeline`
/// requests, dispatches them and writes their answers in order as they come
/// (`flush`). Answers arrive from any thread through the exchange (`slot`),
/// which posts them onto the strand.

#include <asio.hpp>

#include <atomic>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "protocol/http/server.hpp"
#include "protocol/io/conn_set.hpp"
#include "protocol/io/latch.hpp"
#include "protocol/io/listener.hpp"
#include "protocol/io/pool.hpp"
#include "tls/channel.hpp"

namespace spool::http {

namespace detail {

using tcp = asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

class connection;

/// Writes `r`'s status line and headers as an HTTP/1.1 answer; whether a
/// body follows is `has_body`.
void serialize_head(std::string& out, const response& r, bool keep_alive,
                    const header_list& common);
/// A 204 has no body, nor has a HEAD answer (RFC 9110).
inline bool has_body(const response& r, bool head) {
  return r.status != 204 && !head;
}
/// The head, then the body (an answer made whole at once: the refusals).
void serialize(std::string& out, const response& r, bool keep_alive,
               const header_list& common);

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
  void authenticated() override {
    authed = true; // (the dispatch that made it reads it)
  }

  std::weak_ptr<connection> conn;
  bool authed = false;
  std::string method;
  std::string path;
  bool keep_alive;
  clock_type::time_point started;
  std::optional<response> answer; ///< strand only
  io::request_latch latch;
};

} // namespace detail

struct server::impl : std::enable_shared_from_this<server::impl> {
  server_limits limits;
  handler h;
  header_list common;
  std::function<void(const request_record&)> observer;
  /// The io threads: shared with the other door, or its own (`own_pool`).
  std::shared_ptr<io::pool> pool;
  bool own_pool;
  asio::io_context& io{pool->context()};
  std::shared_ptr<io::listener> door;
  io::conn_set<detail::connection> conns;
  std::atomic<bool> draining{false};
  /// Connections not yet authenticated (tokens on).
  std::atomic<std::size_t> pending_auth{0};
  /// TLS for new connections (none: plain).
  std::atomic<std::shared_ptr<const tls::context>> tls;
  server::head_check head_check; ///< set before `start`
  std::mutex stop_mx;
  bool stopped = false; ///< under stop_mx: nothing posted will run
  bool shut_down = false;

  impl(server_limits l, handler hh, std::shared_ptr<io::pool> p) :
      limits(l),
      h(std::move(hh)),
      pool(p ? p : std::make_shared<io::pool>()),
      own_pool(!p) {
  }
  /// Takes an accepted connection, or refuses it (busy, draining).
  void take(detail::tcp::socket sock);
};

namespace detail {

class connection : public std::enable_shared_from_this<connection> {
public:
  connection(std::shared_ptr<server::impl> s, tcp::socket sock);

  void start();
  /// Counted among the connections not yet authenticated (set by `take`
  /// before `start`).
  void await_auth() {
    unauthenticated = true;
  }
  /// Graceful close: answer what is in flight, then close.
  void drain();
  /// Posts `r`, the answer of `s`, onto the strand (any thread).
  void deliver(const std::shared_ptr<slot>& s, response r);
  /// Closes at once: unanswered requests are abandoned. Strand only.
  void close();

  std::shared_ptr<server::impl> srv;
  tcp::socket socket;
  asio::strand<asio::io_context::executor_type> strand;

private:
  /// Reads while requests can be taken, and a little beyond (so that a
  /// client that leaves is noticed during a long poll): past 64 KiB of
  /// unparsed bytes a full pipeline or a held request stops the reading.
  void wait_readable();
  void read_available();
  /// TLS: opens what was read into `inbuf` (or drops it); false when the
  /// connection ends (its handshake failed, a record did not open, plain
  /// text: answered in clear).
  bool open_tls(std::string_view raw);
  void parse();
  /// RFC 9112 §9.3.2: only safe requests are processed side by side; a
  /// request that changes something waits until every earlier one is
  /// answered, and nothing after it starts before its answer (a pipelined
  /// push sequence is applied in order).
  bool can_dispatch(std::string_view method) const;
  /// `100 Continue` for the request being read, once it is next in line
  /// (the client waits for it before it sends the body).
  void send_continue_if_due();
  /// After an answer went out: the held request, if its turn came, then
  /// the buffered ones, then more reading.
  void resume();
  void dispatch(request req);
  /// Answers a request that cannot be parsed, then closes.
  void refuse(int status, const std::string& message);
  /// Writes the answers ready at the head of the line.
  void flush();
  /// Writes `outbuf` and `out_bodies` (answers, or a `100 Continue`), then
  /// goes on reading
  /// and answering; a write that takes over the request timeout closes.
  void write_outbuf();
  /// After a write: what it wrote is freed.
  void release_written();
  /// Ends a connection whose last answer was written: the sending side
  /// first, then what the client still sends is read and dropped until it
  /// closes too (at most 2 s), so that a client still sending a refused
  /// body reads the answer instead of a reset (a "lingering close").
  void linger_close();
  void drain_input();
  void arm_timer();
  void on_timer();

  asio::steady_timer timer;
  request_parser parser;
  std::string peer;
  /// The verified client certificate's subject, once the handshake ended.
  std::string client_subject;
  std::string inbuf; ///< bytes read, not yet parsed
  std::deque<std::shared_ptr<slot>> slots;
  std::optional<request> held; ///< parsed, waiting for its turn
  /// The request being read asked for `100 Continue`, not sent yet.
  bool continue_pending = false;
  clock_type::time_point write_began;
  /// The `on_unwritten` of the answers being written (their leases).
  std::vector<std::function<void()>> in_write;
  /// The answers being written: their status lines and headers in
  /// `outbuf`, their bodies moved here (never copied into `outbuf`: a big
  /// pop answer exists once), written together with one gathered write and
  /// freed once written.
  std::string outbuf;
  std::vector<std::string> out_bodies;
  std::vector<std::size_t> head_ends; ///< where each answer's head ends
  std::vector<asio::const_buffer> out_seq;
  bool writing = false;
  bool reading = false;
  bool closed = false;
  bool draining = false;
  bool close_after_write = false;
  bool ends_here = false; ///< the write in progress ends the connection
  bool lingering = false; ///< answered and half-closed: input is dropped
  /// Tokens on and no request of it authenticated yet: counted in
  /// `pending_auth`, closed at `auth_deadline`.
  bool unauthenticated = false;
  clock_type::time_point auth_deadline;
  /// TLS: the connection's channel (none: plain), its handshake's
  /// deadline, the write's sealed bytes, and a refusal written in clear to
  /// a client that does not speak TLS.
  std::unique_ptr<tls::channel> tls;
  clock_type::time_point handshake_deadline;
  std::string sealed;
  bool plain_refusal = false;
  bool first_read = true; ///< TLS: its first bytes are still to come
  clock_type::time_point last_activity;
  clock_type::time_point request_began;
};

} // namespace detail

} // namespace spool::http
