#pragma once

/// The node's peer links over TCP (docs/cluster.md, "Peer links"). Each
/// node dials every other node once and sends its replication messages on
/// that connection; it receives on the connections the others dialed. So
/// each pair has one connection per direction, and no race decides which
/// of two crossing dials survives.
///
/// A connection admits its peer first (handshake.hpp: hello with the
/// protocol version, then an HMAC proof each way): before that, nothing
/// but the handshake is read or sent, and a refusal is logged and closes
/// it. After it, every message must come from that peer, to this node.
///
/// With TLS (`tls_server`, `tls_client`), every link is mutual TLS first,
/// then the same handshake inside it (peer/stream.hpp carries the bytes).
/// A handshake, TLS's and ours, must end within `handshake_timeout` on
/// both sides; a failed one closes only its own connection, with a line.
///
/// Bounds: a handshake frame is at most 4 KiB; a frame is at most
/// `max_frame` bytes (refused and closed past
/// it); messages waiting to be sent to a peer are at most
/// `max_queued_bytes` (past it new ones are dropped and counted:
/// replication sends again on its retry timer); received messages not yet
/// consumed (`consumed`) are at most `max_pending_in` bytes, past which the
/// links stop reading (TCP's window then slows the sender). A broken
/// outgoing connection is dialed again with backoff. Runs on one Asio
/// io_context thread; `send` and `consumed` may be called from any thread.

#include <asio.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "cluster/messages.hpp"
#include "tls/context.hpp"

namespace spool::peer {

struct peer_address {
  std::string host;
  std::uint16_t port = 0;
};

struct links_config {
  cluster::node_id self{};
  /// Every node of `--peers`, this one included (it listens on its own).
  std::map<cluster::node_id, peer_address> nodes;
  std::string cluster_id;
  std::string secret;
  std::size_t max_frame = std::size_t{256} << 20;
  std::size_t max_queued_bytes = std::size_t{64} << 20;
  std::size_t max_pending_in = std::size_t{64} << 20;
  std::chrono::milliseconds reconnect_min{100};
  std::chrono::milliseconds reconnect_max{2000};
  std::chrono::milliseconds handshake_timeout{5000};
  /// TLS on every link (docs/security.md, "TLS on the peer links"), both
  /// or neither: the server side requires a client certificate (mutual
  /// TLS); the client side checks that the peer's carries its `--peers`
  /// host. None: the links are plain TCP.
  std::shared_ptr<const tls::context> tls_server;
  std::shared_ptr<const tls::context> tls_client;
  /// Where this node's clients reach it (host:port of its doors), told in
  /// its hello.
  std::string http;
  std::string msgpack;
  /// A peer admitted (on the io thread), with the client addresses its
  /// hello told (proven with the secret).
  std::function<void(cluster::node_id, const std::string& http,
                     const std::string& msgpack)>
      on_admitted;
};

struct links_stats {
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  /// Dropped: the peer's queue was full, or not from the link's peer.
  std::uint64_t dropped = 0;
  /// Connections refused by a handshake (either side).
  std::uint64_t refused = 0;
  std::uint64_t connects = 0;
};

class links : public std::enable_shared_from_this<links> {
public:
  /// A message received (on the io thread) and its size, to hand to
  /// `consumed` once the host took it.
  using receive_fn = std::function<void(cluster::slot_message, std::size_t)>;
  using log_fn = std::function<void(const std::string&)>;

  links(asio::io_context& io, links_config cfg, receive_fn on_receive,
        log_fn log);
  ~links();

  /// Binds this node's address (port 0: a free one): "" or why not.
  std::string listen();
  std::uint16_t port() const;
  /// Where node `n` listens (before `start`: a port learned after the
  /// configuration was made, as in tests that listen on port 0).
  void set_address(cluster::node_id n, peer_address a);
  /// Whether this node's link to `n` is up and admitted now (any thread).
  bool up(cluster::node_id n) const;
  /// Before `start`: where this node's clients reach it (its hello).
  void set_client_addresses(std::string http, std::string msgpack);
  /// Accepts, and dials every other node.
  void start();
  /// Queues `m` for its addressee (any thread).
  void send(cluster::slot_message m);
  /// The host took `bytes` of received messages (any thread).
  void consumed(std::size_t bytes);
  /// Closes every connection (any thread; completes on the io thread).
  void stop();
  /// New TLS contexts (a reload, any thread): connections made from now
  /// on use them, open ones keep theirs.
  void set_tls(std::shared_ptr<const tls::context> server,
               std::shared_ptr<const tls::context> client);
  links_stats stats() const;

  struct outgoing;
  struct incoming;

private:
  void accept();
  void dial(const std::shared_ptr<outgoing>& o);
  using fail_fn = std::function<void(const std::string&)>;
  void handshake_out(const std::shared_ptr<outgoing>& o, std::uint64_t gen,
                     const fail_fn& fail);
  void admitted(const std::shared_ptr<outgoing>& o, std::uint64_t gen,
                const fail_fn& fail);
  void redial(const std::shared_ptr<outgoing>& o);
  void write_next(const std::shared_ptr<outgoing>& o);
  void resume_reading();
  friend struct incoming;
  friend struct outgoing;

  asio::io_context& io_;
  links_config cfg_;
  receive_fn on_receive_;
  log_fn log_;
  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  std::map<cluster::node_id, std::shared_ptr<outgoing>> out_;
  std::vector<std::weak_ptr<incoming>> in_;
  std::atomic<std::size_t> pending_in_{0};
  bool stopped_ = false;
  struct counters {
    std::atomic<std::uint64_t> sent{0}, received{0}, dropped{0}, refused{0},
        connects{0};
  } n_;
};

/// Fresh random bytes for a nonce (OpenSSL's generator); empty when it
/// has none (the other side then refuses the hello as too short).
std::string random_nonce(std::size_t bytes = 16) noexcept;

} // namespace spool::peer
