#pragma once

/// The msgpack/TCP listener (api.md, last section; docs/protocol.md): frames
/// of a 4-byte big-endian length and one msgpack map. Each frame is decoded
/// (protocol/msgpack/read.hpp) and handed to the handler with an `exchange`
/// to answer it on; answers go out as they come, in any order (the client
/// matches them by id). Nothing here blocks an io thread.
///
/// Per connection at most `max_in_flight` requests are unanswered (an
/// answer counts until it is written): then no frame is cut and the
/// connection is read only until 64 KiB wait (to see a client leave), so a
/// client that sends without reading holds at most that many answers and
/// what was read (64 KiB plus one read of 1 MiB at most) in the server. A
/// frame that cannot be decoded gets an error answer and the connection goes
/// on; a length over `max_frame_bytes` gets an error frame, then that
/// connection closes. A client that leaves abandons its unanswered requests:
/// their `on_abandon` run (a parked pop is cancelled), and an answer that comes
/// later is not written (its `on_unwritten` runs: a lease it carries is
/// released).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "auth/principal.hpp"
#include "protocol/msgpack/read.hpp"
#include "tls/context.hpp"

namespace spool::io {
class pool;
}

namespace spool::mp {

struct server_limits {
  std::size_t max_connections = 20'000;
  std::size_t max_in_flight = 1024;
  std::size_t max_frame_bytes = std::size_t{64} << 20;
  /// A connection with nothing in flight closes after this long without a
  /// byte read or written (a frame begun and stalled included); the
  /// timeouts are checked every min(this, frame_timeout, 60 s).
  std::chrono::milliseconds idle_timeout{600'000};
  /// A frame must arrive whole this soon after its first byte (HTTP's
  /// request timeout): a sender trickling a big frame holds its buffer no
  /// longer. Whole frames waiting for room in flight are not timed.
  std::chrono::milliseconds frame_timeout{30'000};
  /// Tokens on (docs/security.md): a connection must authenticate (a
  /// `hello` with a valid token) this soon after it is accepted, else it
  /// closes; and at most `max_pending` connections wait so, beyond which
  /// a new one is refused (`unavailable`). 0: tokens are off.
  std::chrono::milliseconds auth_timeout{0};
  std::size_t max_pending = 256;
  /// TLS on (`set_tls`): a handshake not done this soon after the accept
  /// closes its connection (and only it).
  std::chrono::milliseconds handshake_timeout{10'000};
};

/// What this door answers to a connection whose first bytes are an HTTP
/// request line (`GET /…`, `POST`; four capital letters or spaces, a
/// letter first): an HTTP 400 whose body is one line saying that this is
/// the msgpack door and where the HTTP door is, so that curl prints it.
/// None when `first` does not start so. A client of this door never does:
/// read as a length, those bytes are over 1 GiB, and its first frame is a
/// small `hello`.
std::optional<std::string> http_refusal(std::string_view first,
                                        std::uint16_t http_port);

/// One request's answer.
class exchange {
public:
  virtual ~exchange() = default;
  /// Answers with `frame` (mp::writer::take_frame; the first call counts).
  /// `on_unwritten` runs if it cannot be written (the client left). Any
  /// thread.
  virtual void respond(std::string frame,
                       std::function<void()> on_unwritten = {})
      = 0;
  /// `f` runs once if the client leaves before the answer is written (at
  /// once if it has left already). Any thread.
  virtual void on_abandon(std::function<void()> f) = 0;
};

/// What a connection remembers between its requests (its io strand only).
struct session {
  bool greeted = false; ///< `hello` answered
  std::uint64_t version = 0;
  /// Who its last `hello`'s token names (tokens on); none before, or
  /// after a `hello` whose token was refused.
  std::optional<auth::principal> who;
  /// The token `who` came from, and the gate's key generation it was
  /// verified under (a reload verifies it again).
  std::string token;
  std::uint64_t key_generation = 0;
  /// The handler sets it to close the connection once its answer is
  /// written (a refused `hello`).
  bool close_after_answer = false;
  std::string peer; ///< host:port of the client
  /// The client's verified TLS certificate subject, RFC 2253 (""), set
  /// when the handshake ends: without a token, `hello` maps it to a role.
  std::string cert_subject;
};

/// Takes a decoded request. The frame's objects refer to the connection's
/// buffer: the handler reads what it needs before it returns.
using handler
    = std::function<void(request_frame&, std::shared_ptr<exchange>, session&)>;

/// The error frame for a request that never reached the handler.
std::string error_frame(std::uint64_t id, const api_error& e);

class server {
public:
  server(server_limits limits, handler h, std::shared_ptr<io::pool> pool);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Binds `address:port` (port 0: a free one); "" on success, else why.
  std::string listen(const std::string& address, std::uint16_t port);
  std::uint16_t port() const;
  /// The HTTP door's port, named in the answer to an HTTP request sent to
  /// this door (`http_refusal`). Before `start`.
  void name_http_port(std::uint16_t port);
  /// TLS from now on (docs/security.md, "TLS"): each new connection
  /// takes `ctx`, which a reload (SIGHUP) replaces; connections keep the
  /// one they started with. Set before `start` to speak TLS only.
  void set_tls(std::shared_ptr<const tls::context> ctx);
  /// Starts accepting (the pool's threads are its owner's).
  void start();
  /// Graceful close, step 1: stops accepting.
  void stop_accepting();
  /// Step 2: connections close once their requests in flight are answered
  /// and written (nothing more is read); after `grace` the rest close.
  /// Returns once every connection closed.
  void shutdown(std::chrono::milliseconds grace);
  std::size_t connections() const;

  struct impl;

private:
  std::shared_ptr<impl> impl_;
};

} // namespace spool::mp
