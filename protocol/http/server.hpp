#pragma once

/// The HTTP/1.1 listener on standalone Asio: accepts connections, parses
/// requests (protocol/http/parser.hpp), hands each to the handler with an
/// `exchange` to answer it on, and writes the answers in request order
/// (pipelining). Nothing here blocks an io thread: a handler returns at
/// once and answers later, from any thread.
///
/// Per connection it answers at most `max_pipeline` requests at once and
/// reads no further meanwhile (back-pressure); it closes a connection idle
/// for `idle_timeout` and answers 408 to a request not complete within
/// `request_timeout` of its first byte. Beyond `max_connections` a new
/// connection gets 503 and is closed. A client that leaves (EOF, reset)
/// abandons its unanswered requests: their `on_abandon` callbacks run (a
/// parked pop is cancelled there), and an answer that comes later is not
/// written: its `on_unwritten` runs (a lease it carries is released).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/http/message.hpp"
#include "protocol/http/parser.hpp"
#include "tls/context.hpp"

namespace spool::io {
class pool;
}

namespace spool::http {

struct server_limits {
  std::size_t max_connections = 20'000;
  std::size_t max_pipeline = 16;
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds request_timeout{30'000};
  parser_limits parser;
  /// Tokens on (docs/security.md): a connection closes unless one of its
  /// requests carries a valid token this soon after it is accepted, and
  /// at most `max_pending` connections wait so (503 beyond). 0: off.
  std::chrono::milliseconds auth_timeout{0};
  std::size_t max_pending = 256;
  /// TLS on (`set_tls`): a handshake not done this soon after the accept
  /// closes its connection (and only it).
  std::chrono::milliseconds handshake_timeout{10'000};
};

/// One request's answer.
class exchange {
public:
  virtual ~exchange() = default;
  /// Answers the request (the first call counts). Any thread.
  virtual void respond(response r) = 0;
  /// `f` runs once if the client leaves before the answer is written (at
  /// once if it has left already). Any thread.
  virtual void on_abandon(std::function<void()> f) = 0;
  /// The request's token verified: its connection is authenticated (no
  /// longer closed at the auth timeout). Called by the handler before it
  /// returns, on the connection's thread.
  virtual void authenticated() {
  }
};

using handler = std::function<void(request, std::shared_ptr<exchange>)>;

/// What the server reports per answered request (access log, metrics).
struct request_record {
  std::string_view method;
  std::string_view path;
  int status = 0;
  std::chrono::microseconds duration{0};
  std::string_view peer;
  std::string_view note; ///< the response's `log_note`
};

class server {
public:
  /// On the io threads of `pool` (shared with the other door), or on its
  /// own when none.
  server(server_limits limits, handler h,
         std::shared_ptr<io::pool> pool = nullptr);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Headers added to every response (CORS).
  void set_common_headers(header_list h);
  /// Called after each response is written, on an io thread.
  void set_observer(std::function<void(const request_record&)> f);
  /// Tokens on: asked with each request's head (and the client's
  /// address) while its connection has not authenticated, before the body
  /// is read; an error answers it and closes the connection, so a client
  /// without a valid token sends no body into the server's memory.
  using head_check = std::function<std::optional<parse_error>(
      const request&, std::string_view peer, std::string_view client_subject)>;
  void set_head_check(head_check check);

  /// Binds `address:port` (port 0: a free one) and listens; "" on success,
  /// else why not.
  std::string listen(const std::string& address, std::uint16_t port);
  /// The bound port.
  std::uint16_t port() const;
  /// TLS from now on (docs/security.md, "TLS"): each new connection
  /// takes `ctx`, which a reload (SIGHUP) replaces; connections keep the
  /// one they started with. Set before `start` to speak TLS only.
  void set_tls(std::shared_ptr<const tls::context> ctx);
  /// Starts accepting, and `threads` io threads when the pool is its own
  /// (a shared pool is started by its owner).
  void start(unsigned threads);

  /// Graceful close, step 1: stops accepting.
  void stop_accepting();
  /// Step 2: every connection closes once its unanswered requests are
  /// answered and written (new requests on it get `Connection: close`);
  /// after `grace`, the rest are closed. Then its own io threads end
  /// (joined); on a shared pool it returns once every connection closed.
  void shutdown(std::chrono::milliseconds grace);

  /// Open connections now.
  std::size_t connections() const;

  struct impl;

private:
  std::shared_ptr<impl> impl_;
};

} // namespace spool::http
