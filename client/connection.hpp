#pragma once

/// The client library's asynchronous core: one TCP connection to a Spool
/// node's msgpack door (docs/protocol.md), many requests in flight on it,
/// their answers matched by id in whatever order they come. It runs its own
/// io thread; any thread may send.
///
/// - A request is queued until the connection is up (it says `hello`
///   first), then written; at most the server's `maxInFlight` are in flight,
///   the rest wait in the queue (at most `max_queued`, else refused at once).
/// - Each request has a deadline (`request_timeout`, or its own): past it,
///   its completion gets `unavailable` "timed out after <n> ms" (an answer
///   that comes later is dropped).
/// - A lost connection fails the requests written to it with `unavailable`
///   "connection lost" (they may or may not have been applied: a push with
///   a transactionId is safe to retry); those not written yet go back to
///   the queue. It reconnects with exponential backoff (`backoff_min`
///   doubling to `backoff_max`); queued requests go out once it is back.
/// - A request larger than the server's `maxFrameBytes` (from `hello`) is
///   refused here with `too_large`, alone (the server would close).
/// - A pop that times out here after it was sent may still take a lease
///   on the server: its answer is dropped, the lease ends at its expiry.
/// - Completions run on the io thread, once each, and must not block or
///   throw. One may destroy the connection: nothing more is sent, the
///   requests still open complete with `unavailable` "client closed" (those
///   completions must not use the destroyed object), and the io thread ends
///   by itself.
///
/// No CAF, no server code: only the wire (wire/) and the vocabulary.

#include <msgpack.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>

#include "tls/context.hpp"
#include "vocab/expected.hpp"
#include "wire/writer.hpp"

namespace spool::client {

using namespace std::chrono_literals;

struct options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6690;
  std::chrono::milliseconds connect_timeout = 5s;
  /// A request's deadline unless it names its own.
  std::chrono::milliseconds request_timeout = 30s;
  std::chrono::milliseconds backoff_min = 50ms;
  std::chrono::milliseconds backoff_max = 5s;
  /// Requests waiting for the connection or for room in flight, at most.
  std::size_t max_queued = 100'000;
  /// Until a first connection is made (and greeted), a failed attempt fails
  /// every waiting request at once with its reason, rather than retrying
  /// until their deadlines: a one-shot command (the CLI) is told at once
  /// that nobody listens. Once connected, losses reconnect as usual.
  bool fail_unconnected = false;
  /// Cluster mode: a request refused with `not_leader` naming the slot's
  /// leader is sent again to that leader (the blocking API, client.hpp),
  /// at most this many times in a row (0: never; the error is the answer).
  int max_redirects = 3;
  /// Tokens (docs/security.md): called for each `hello`, it gives the
  /// token to send (a JWT, no `Bearer `); none: no token. A request the
  /// server refuses as `unauthenticated` (the token expired since the
  /// last hello) makes the connection say hello again with a fresh token
  /// and send that request once more (it was refused before it ran).
  std::function<std::string()> token;
  /// TLS (docs/security.md, "TLS"): a client context (tls::context::
  /// client); none: plain. The server's certificate must name `host`.
  std::shared_ptr<const tls::context> tls;
};

/// An answer frame, decoded; its objects refer to `frame` and `zone`.
struct reply {
  std::string frame;
  msgpack::object_handle handle;
  const msgpack::object& root() const {
    return handle.get();
  }
};
using reply_ptr = std::shared_ptr<const reply>;
using completion = std::function<void(expected<reply_ptr>)>;
/// Writes a request's fields (beside `id` and `op`).
using fields_fn = std::function<void(mp::writer&)>;

class connection {
public:
  explicit connection(options o);
  /// Closes; requests not answered get `unavailable` "client closed".
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Sends `op`; `done` gets the answer (`ok: true`), or the error it
  /// carries (`ok: false`: its code and message), or the client's own.
  void request(std::string_view op, const fields_fn& fields, completion done,
               std::optional<std::chrono::milliseconds> timeout = {});
  /// The same, as a future.
  std::future<expected<reply_ptr>>
  request(std::string_view op, const fields_fn& fields,
          std::optional<std::chrono::milliseconds> timeout = {});

  /// Up and greeted now.
  bool connected() const;
  /// Connections made so far (the first one included).
  std::uint64_t connects() const;
  /// Whether a frame of the msgpack door was ever read (an answer, or a
  /// refusal such as "Server busy" before `hello`): false when nothing
  /// listens there, or something that is not this door.
  bool heard_from_server() const;
  /// Whether the server's last hello listed `feature` (docs/protocol.md,
  /// hello): false before the first hello.
  bool supports(std::string_view feature) const;

  struct impl;

private:
  std::shared_ptr<impl> impl_;
};

/// An answer's error, as the client reads it: `ok: false` with its code
/// and message (an unknown code reads as `internal`).
api_error error_of(const msgpack::object& root);

} // namespace spool::client
