#include "peer/links.hpp"

#include <openssl/rand.h>

#include <array>
#include <deque>
#include <optional>

#include "peer/codec.hpp"
#include "peer/handshake.hpp"
#include "peer/stream.hpp"

namespace spool::peer {

using asio::ip::tcp;
using namespace std::chrono_literals;

std::string random_nonce(std::size_t bytes) noexcept {
  std::string out(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()),
                 static_cast<int>(bytes))
      != 1)
    return {}; // a short nonce: the other side refuses the hello
  return out;
}

namespace {

/// A frame before the peer is admitted: a hello or a proof.
constexpr std::size_t max_handshake_frame = 4096;

std::string node_name(cluster::node_id n) {
  return "n" + std::to_string(cluster::index_of(n) + 1);
}

handshake_config handshake_of(const links_config& c) {
  handshake_config h;
  h.self = c.self;
  h.cluster_id = c.cluster_id;
  h.secret = c.secret;
  for (auto& [n, a] : c.nodes)
    h.members.insert(n);
  h.http = c.http;
  h.msgpack = c.msgpack;
  return h;
}

/// How an admitted link is secured, for its log line.
std::string secured_by(const stream& s) {
  if (!s.secured())
    return "";
  auto who = s.peer_subject();
  return " over TLS" + (who.empty() ? std::string{} : " (" + who + ")");
}

} // namespace

struct links::outgoing {
  cluster::node_id peer{};
  peer_address addr;
  tcp::socket sock; ///< dialing; moved into `conn` once connected
  std::shared_ptr<stream> conn;
  tcp::resolver resolver;
  asio::steady_timer timer; ///< the backoff, then the handshake's deadline
  std::deque<std::string> queue;
  std::size_t queued = 0;
  std::atomic<bool> ready{false}; ///< admitted (read by `up`, any thread)
  bool writing = false;
  std::uint64_t generation = 0;
  std::chrono::milliseconds backoff;
  std::optional<handshake> hs;

  outgoing(asio::io_context& io, cluster::node_id p, peer_address a,
           std::chrono::milliseconds b) :
      peer(p),
      addr(std::move(a)),
      sock(io),
      resolver(io),
      timer(io),
      backoff(b) {
  }
  void close() {
    std::error_code ec;
    sock.close(ec);
    if (conn)
      conn->close();
  }
};

struct links::incoming : std::enable_shared_from_this<links::incoming> {
  std::shared_ptr<links> owner;
  std::string where;
  std::shared_ptr<stream> conn;
  asio::steady_timer timer;
  handshake hs;
  std::optional<cluster::node_id> peer;
  bool paused = false;

  incoming(std::shared_ptr<links> o, tcp::socket s) :
      owner(std::move(o)),
      where(endpoint_of(s)),
      conn(
          std::make_shared<stream>(std::move(s), owner->cfg_.tls_server, true)),
      timer(owner->io_),
      hs(handshake_of(owner->cfg_), random_nonce()) {
  }

  static std::string endpoint_of(const tcp::socket& s) {
    std::error_code ec;
    auto ep = s.remote_endpoint(ec);
    return ec ? std::string{"?"}
              : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void close(const std::string& why) {
    if (!conn->is_open())
      return;
    if (!why.empty())
      owner->log_("peer link from " + where
                  + (peer ? " (" + node_name(*peer) + ")" : std::string{})
                  + " closed: " + why);
    conn->close();
    timer.cancel();
  }

  void refuse(const std::string& why) {
    ++owner->n_.refused;
    close("refused: " + why);
  }

  void start() {
    timer.expires_after(owner->cfg_.handshake_timeout);
    timer.async_wait([self = shared_from_this()](std::error_code ec) {
      if (!ec && !self->peer)
        self->refuse("no handshake within the timeout");
    });
    next();
  }

  void next() {
    conn->read_frame(
        peer ? owner->cfg_.max_frame : max_handshake_frame,
        [self = shared_from_this()](read_status s, const std::string& why) {
          self->on_frame(s, why);
        });
  }

  void on_frame(read_status s, const std::string& why) {
    if (s == read_status::closed) // a probe that left says nothing
      return close(peer ? "closed: " + why : std::string{});
    if (s == read_status::refused)
      return refuse(why);
    auto& body = conn->body();
    auto f = decode(body);
    if (!f)
      return refuse("an undecodable frame: " + f.err().message);
    if (!peer) {
      if (auto* h = std::get_if<hello>(&*f)) {
        auto p = hs.on_hello(*h);
        if (!p)
          return refuse(p.err().message);
        conn->write(encode_frame(hs.start()) + encode_frame(*p),
                    [self = shared_from_this()](const std::string& err) {
                      if (!err.empty())
                        self->close("");
                    });
        return next();
      }
      if (auto* p = std::get_if<proof>(&*f)) {
        auto who = hs.on_proof(*p);
        if (!who)
          return refuse(who.err().message);
        peer = *who;
        timer.cancel();
        if (owner->cfg_.on_admitted)
          owner->cfg_.on_admitted(*peer, hs.theirs()->http,
                                  hs.theirs()->msgpack);
        owner->log_("peer link from " + node_name(*peer) + " (" + where
                    + ") admitted" + secured_by(*conn));
        // A peer dials again after its link broke: an older connection
        // from it (perhaps half-open) goes.
        for (auto& w : owner->in_)
          if (auto other = w.lock();
              other && other.get() != this && other->peer == peer)
            other->close("replaced by a new link from the same peer");
        return next();
      }
      return refuse("a replication message before the handshake");
    }
    auto* m = std::get_if<slot_message>(&*f);
    if (m == nullptr || m->env.from != *peer || m->env.to != owner->cfg_.self) {
      ++owner->n_.dropped;
      return next();
    }
    auto size = body.size();
    ++owner->n_.received;
    owner->pending_in_ += size;
    owner->on_receive_(std::move(*m), size);
    if (owner->pending_in_.load() > owner->cfg_.max_pending_in) {
      paused = true; // resumed by `consumed`
      return;
    }
    next();
  }
};

links::links(asio::io_context& io, links_config cfg, receive_fn on_receive,
             log_fn log) :
    io_(io),
    cfg_(std::move(cfg)),
    on_receive_(std::move(on_receive)),
    log_(std::move(log)),
    acceptor_(io),
    accept_retry_(io) {
  for (auto& [n, a] : cfg_.nodes)
    if (n != cfg_.self)
      out_.emplace(n,
                   std::make_shared<outgoing>(io_, n, a, cfg_.reconnect_min));
}

links::~links() = default;

std::string links::listen() {
  auto it = cfg_.nodes.find(cfg_.self);
  if (it == cfg_.nodes.end())
    return "this node is not among --peers";
  std::error_code ec;
  auto addr = asio::ip::make_address(it->second.host, ec);
  if (ec)
    return "peer address '" + it->second.host + "' is not an IP address";
  tcp::endpoint ep{addr, it->second.port};
  acceptor_.open(ep.protocol(), ec);
  if (!ec)
    acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec)
    acceptor_.bind(ep, ec);
  if (!ec)
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return "cannot listen on " + it->second.host + ":"
           + std::to_string(it->second.port) + ": " + ec.message();
  return "";
}

std::uint16_t links::port() const {
  std::error_code ec;
  auto ep = acceptor_.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void links::set_address(cluster::node_id n, peer_address a) {
  if (auto it = out_.find(n); it != out_.end())
    it->second->addr = a;
  cfg_.nodes[n] = std::move(a);
}

bool links::up(cluster::node_id n) const {
  auto it = out_.find(n); // made at construction, never changed
  return it != out_.end() && it->second->ready.load();
}

void links::set_client_addresses(std::string http, std::string msgpack) {
  cfg_.http = std::move(http);
  cfg_.msgpack = std::move(msgpack);
}

void links::start() {
  asio::post(io_, [self = shared_from_this()] {
    self->accept();
    for (auto& [n, o] : self->out_)
      self->dial(o);
  });
}

void links::accept() {
  acceptor_.async_accept(
      [self = shared_from_this()](std::error_code ec, tcp::socket s) {
        if (self->stopped_)
          return;
        if (ec) {
          // Out of descriptors, most likely: wait, rather than spin.
          self->accept_retry_.expires_after(100ms);
          self->accept_retry_.async_wait([self](std::error_code ec2) {
            if (!ec2 && !self->stopped_)
              self->accept();
          });
          return;
        }
        s.set_option(tcp::no_delay(true), ec);
        std::erase_if(self->in_, [](auto& w) { return w.expired(); });
        auto in = std::make_shared<incoming>(self, std::move(s));
        self->in_.push_back(in);
        in->start();
        self->accept();
      });
}

void links::dial(const std::shared_ptr<outgoing>& o) {
  if (stopped_)
    return;
  auto gen = ++o->generation;
  o->ready = false;
  o->writing = false;
  auto self = shared_from_this();
  auto fail = [self, o, gen](const std::string& why) {
    if (o->generation != gen || self->stopped_)
      return;
    if (!why.empty())
      self->log_("peer link to " + node_name(o->peer) + " (" + o->addr.host
                 + ":" + std::to_string(o->addr.port) + "): " + why);
    self->redial(o);
  };
  o->resolver.async_resolve(
      o->addr.host, std::to_string(o->addr.port),
      [self, o, gen, fail](std::error_code ec, tcp::resolver::results_type r) {
        if (o->generation != gen || self->stopped_)
          return;
        if (ec)
          return fail("cannot resolve: " + ec.message());
        asio::async_connect(o->sock, r,
                            [self, o, gen, fail](std::error_code ec2, auto) {
                              if (o->generation != gen)
                                return;
                              if (ec2)
                                return fail(""); // not up yet: quietly again
                              self->handshake_out(o, gen, fail);
                            });
      });
}

void links::handshake_out(const std::shared_ptr<outgoing>& o, std::uint64_t gen,
                          const fail_fn& fail) {
  std::error_code ignore;
  o->sock.set_option(tcp::no_delay(true), ignore);
  // The --peers host is the name (or address) the peer's certificate
  // must carry.
  o->conn = std::make_shared<stream>(std::move(o->sock), cfg_.tls_client, false,
                                     o->addr.host);
  if (auto err = o->conn->start(); !err.empty())
    return fail(err);
  o->timer.expires_after(cfg_.handshake_timeout);
  o->timer.async_wait([o, gen, fail](std::error_code ec) {
    if (!ec && o->generation == gen && !o->ready)
      fail("refused: no handshake within the timeout");
  });
  o->hs.emplace(handshake_of(cfg_), random_nonce());
  o->conn->write(encode_frame(o->hs->start()));
  auto self = shared_from_this();
  // A refusal by either side counts once, here or in the peer's log.
  auto failed = [self, fail](read_status s, const std::string& why) {
    if (s == read_status::refused)
      ++self->n_.refused;
    fail((s == read_status::closed ? "closed: " : "refused: ") + why);
  };
  o->conn->read_frame(max_handshake_frame, [self, o, gen, fail,
                                            failed](read_status s,
                                                    const std::string& why) {
    if (o->generation != gen)
      return;
    if (s != read_status::frame)
      return failed(s, why);
    auto f = decode(o->conn->body());
    auto* h = f ? std::get_if<hello>(&*f) : nullptr;
    if (h == nullptr)
      return fail("refused: no hello");
    auto p = o->hs->on_hello(*h);
    if (!p) {
      ++self->n_.refused;
      return fail("refused: " + p.err().message);
    }
    o->conn->write(encode_frame(*p));
    o->conn->read_frame(max_handshake_frame, [self, o, gen, fail,
                                              failed](read_status s2,
                                                      const std::string& why2) {
      if (o->generation != gen)
        return;
      if (s2 != read_status::frame)
        return failed(s2, why2);
      auto f2 = decode(o->conn->body());
      auto* pr = f2 ? std::get_if<proof>(&*f2) : nullptr;
      auto who = pr != nullptr ? o->hs->on_proof(*pr)
                               : expected<cluster::node_id>{
                                   make_error(errc::bad_request, "no proof")};
      if (!who || *who != o->peer) {
        ++self->n_.refused;
        return fail("refused: "
                    + (who ? std::string{"another node"} : who.err().message));
      }
      self->admitted(o, gen, fail);
    });
  });
}

void links::admitted(const std::shared_ptr<outgoing>& o, std::uint64_t gen,
                     const fail_fn& fail) {
  o->ready = true;
  o->timer.cancel();
  o->backoff = cfg_.reconnect_min;
  if (cfg_.on_admitted)
    cfg_.on_admitted(o->peer, o->hs->theirs()->http, o->hs->theirs()->msgpack);
  ++n_.connects;
  log_("peer link to " + node_name(o->peer) + " admitted"
       + secured_by(*o->conn));
  // The other side sends nothing more: a read ends only when the link
  // does (TLS's own records, as session tickets, open to nothing).
  o->conn->read_frame(
      max_handshake_frame,
      [fail, o, gen](read_status s, const std::string& why) {
        if (o->generation != gen)
          return;
        fail(s == read_status::frame ? "refused: a frame after the handshake"
             : s == read_status::refused ? "refused: " + why
                                         : "closed by the peer");
      });
  write_next(o);
}

void links::redial(const std::shared_ptr<outgoing>& o) {
  o->close();
  o->ready = false;
  o->writing = false;
  ++o->generation;
  auto wait = o->backoff;
  o->backoff = std::min(o->backoff * 2, cfg_.reconnect_max);
  o->timer.expires_after(wait);
  o->timer.async_wait([self = shared_from_this(), o](std::error_code ec2) {
    if (!ec2)
      self->dial(o);
  });
}

void links::write_next(const std::shared_ptr<outgoing>& o) {
  if (!o->ready || o->writing || o->queue.empty())
    return;
  // Frames together up to about 1 MB: one write, one wake-up of the peer.
  std::string batch;
  while (!o->queue.empty()
         && (batch.empty()
             || batch.size() + o->queue.front().size() <= (1u << 20))) {
    if (batch.empty())
      batch = std::move(o->queue.front());
    else
      batch += o->queue.front();
    o->queued -= o->queue.front().size();
    o->queue.pop_front();
  }
  o->writing = true;
  auto gen = o->generation;
  o->conn->write(std::move(batch), [self = shared_from_this(), o,
                                    gen](const std::string& err) {
    if (o->generation != gen)
      return;
    o->writing = false;
    if (!err.empty()) {
      self->log_("peer link to " + node_name(o->peer) + " broke: " + err);
      return self->redial(o);
    }
    self->write_next(o);
  });
}

void links::send(cluster::slot_message m) {
  auto frame = std::make_shared<std::string>(encode_frame(m));
  if (frame->size() > cfg_.max_frame || frame->size() > cfg_.max_queued_bytes) {
    // It would never pass (or would close the link for every slot): the
    // core's retry would send it again and again.
    ++n_.dropped;
    asio::post(
        io_, [self = shared_from_this(), size = frame->size(), slot = m.slot] {
          self->log_("slot " + std::to_string(slot) + ": a message of "
                     + std::to_string(size) + " bytes is over the peer link's "
                     + "bound: not sent");
        });
    return;
  }
  asio::post(io_, [self = shared_from_this(), to = m.env.to, frame] {
    auto it = self->out_.find(to);
    if (it == self->out_.end() || self->stopped_) {
      ++self->n_.dropped;
      return;
    }
    auto& o = it->second;
    if (o->queued + frame->size() > self->cfg_.max_queued_bytes) {
      ++self->n_.dropped;
      return;
    }
    o->queued += frame->size();
    o->queue.push_back(std::move(*frame));
    ++self->n_.sent;
    self->write_next(o);
  });
}

void links::consumed(std::size_t bytes) {
  auto before = pending_in_.fetch_sub(bytes);
  if (before > cfg_.max_pending_in && before - bytes <= cfg_.max_pending_in)
    asio::post(io_, [self = shared_from_this()] { self->resume_reading(); });
}

void links::resume_reading() {
  for (auto& w : in_)
    if (auto in = w.lock(); in && in->paused) {
      in->paused = false;
      in->next();
    }
}

void links::stop() {
  asio::post(io_, [self = shared_from_this()] {
    self->stopped_ = true;
    std::error_code ec;
    self->acceptor_.close(ec);
    self->accept_retry_.cancel();
    for (auto& [n, o] : self->out_) {
      ++o->generation;
      o->ready = false;
      o->timer.cancel();
      o->resolver.cancel();
      o->close();
    }
    for (auto& w : self->in_)
      if (auto in = w.lock())
        in->close("");
  });
}

void links::set_tls(std::shared_ptr<const tls::context> server,
                    std::shared_ptr<const tls::context> client) {
  asio::post(io_, [self = shared_from_this(), server = std::move(server),
                   client = std::move(client)]() mutable {
    self->cfg_.tls_server = std::move(server);
    self->cfg_.tls_client = std::move(client);
  });
}

links_stats links::stats() const {
  return {n_.sent.load(), n_.received.load(), n_.dropped.load(),
          n_.refused.load(), n_.connects.load()};
}

} // namespace spool::peer
