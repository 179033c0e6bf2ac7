#include "server/replication.hpp"

#include <future>
#include <mutex>

namespace spool::server {

namespace {

cluster::millis steady_millis() {
  return static_cast<cluster::millis>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::string describe(slot_t s, const cluster::notice& n,
                     const core::cluster_names& names) {
  auto node_name = [&](cluster::node_id p) { return names.name(p); };
  using cluster::notice_kind;
  auto head = "slot " + std::to_string(s) + ": ";
  switch (n.kind) {
  case notice_kind::leading:
    return head + "leads epoch " + std::to_string(n.epoch);
  case notice_kind::serving:
    return head + "serves epoch " + std::to_string(n.epoch);
  case notice_kind::deposed:
    return head + "deposed (epoch " + std::to_string(n.epoch) + ")";
  case notice_kind::damaged:
    return head + "damaged: waits for a snapshot from its leader";
  case notice_kind::peer_refusing:
    return head + "follower " + (n.peer ? node_name(*n.peer) : std::string{"?"})
           + " refuses entries ("
           + (n.why == cluster::refusal::disk_full ? "disk full" : "damaged")
           + ")";
  case notice_kind::installed:
    return head + "installed a snapshot from "
           + (n.peer ? node_name(*n.peer) : std::string{"?"}) + " (epoch "
           + std::to_string(n.epoch) + ", " + std::to_string(n.pieces)
           + " piece(s))";
  case notice_kind::restart_election:
    return head + "led epoch " + std::to_string(n.epoch)
           + " before a restart: asks a majority before it serves";
  }
  return head + "notice";
}

} // namespace

replication::replication(std::shared_ptr<actors::committer> commits,
                         std::shared_ptr<core::replica_host> host) :
    commits_(std::move(commits)),
    host_(std::move(host)),
    work_(io_.get_executor()),
    tick_timer_(io_) {
}

expected<std::unique_ptr<replication>>
replication::start(storage::env& env, std::uint32_t slots,
                   std::shared_ptr<actors::committer> commits,
                   replication_options opts) {
  auto log = opts.log ? opts.log : [](const std::string&) {};
  auto cfg = opts.host;
  cfg.self = opts.self;
  cfg.nodes.clear();
  for (auto& [n, a] : opts.nodes)
    cfg.nodes.push_back(n);
  cfg.replication_factor = opts.replication_factor;
  cfg.slots = slots;
  cfg.names = opts.names;
  core::cluster_names names{cfg.self, cfg.nodes, cfg.names,
                            cfg.replication_factor};
  // The links exist only once the host does: the host's sender finds them
  // here.
  auto wire = std::make_shared<std::shared_ptr<peer::links>>();
  core::host_events ev;
  // The host, for its notices: set once it exists (they run inside it).
  auto self_host = std::make_shared<core::replica_host*>(nullptr);
  ev.notice = [log, names, self_host, marks = opts.marks,
               serving = opts.serving](slot_t s, const cluster::notice& n) {
    log(describe(s, n, names));
    using cluster::notice_kind;
    if (n.kind == notice_kind::serving) {
      if (marks && *self_host) {
        storage::slot_seq m{s, (*self_host)->commit_of(s)};
        marks->raise(std::span{&m, 1});
      }
      if (serving)
        serving(s, n.epoch);
    } else if (n.kind == notice_kind::deposed && serving)
      serving(s, 0);
  };
  ev.election_failed = [log](slot_t s, const std::string& why) {
    log("slot " + std::to_string(s) + ": election failed: " + why);
  };
  ev.fatal = [log, serving = opts.serving](slot_t s, const storage::error& e) {
    log("slot " + std::to_string(s) + ": the store failed (" + e.message
        + "): the slot stops");
    if (serving) // whatever it served of the slot stops with it
      serving(s, 0);
  };
  auto host = core::replica_host::make(
      env, cfg,
      [wire](cluster::slot_message m) {
        if (*wire)
          (*wire)->send(std::move(m));
      },
      steady_millis, ev);
  if (!host)
    return std::move(host).err();
  *self_host = host->get();
  auto r = std::make_unique<replication>(commits, *host);
  r->tick_ = opts.tick;
  r->wire_ = wire;
  peer::links_config lc;
  lc.self = opts.self;
  lc.nodes = opts.nodes;
  lc.cluster_id = opts.cluster_id;
  lc.secret = opts.secret;
  lc.tls_server = opts.tls_server;
  lc.tls_client = opts.tls_client;
  lc.on_admitted = [dir = (*host)->directory()](cluster::node_id n,
                                                const std::string& http,
                                                const std::string& msgpack) {
    dir->set_addresses(n, {http, msgpack});
  };
  auto h = *host;
  r->links_ = std::make_shared<peer::links>(
      r->io_, lc,
      [commits, h, wire](cluster::slot_message m, std::size_t bytes) {
        commits->run([h, wire, m = std::move(m), bytes]() mutable {
          h->on_message(std::move(m));
          if (*wire)
            (*wire)->consumed(bytes);
        });
      },
      log);
  *wire = r->links_;
  if (auto err = r->links_->listen(); !err.empty())
    return make_error(errc::invalid_argument, "cluster: ", err);
  // On the committer's thread, where every commit reads it.
  commits->run([commits, h] {
    commits->set_hook(h);
    h->start();
  });
  r->io_thread_ = std::thread{[io = &r->io_] { io->run(); }};
  r->schedule_tick();
  return r;
}

replication::~replication() {
  stop();
}

std::shared_ptr<actors::durability_policy> replication::durability() const {
  return core::quorum_durability(commits_, host_);
}

std::shared_ptr<const core::slot_directory> replication::directory() const {
  return host_->directory();
}

std::uint16_t replication::peer_port() const {
  return links_->port();
}

void replication::set_address(cluster::node_id n, peer::peer_address a) {
  links_->set_address(n, std::move(a));
}

void replication::set_tls(std::shared_ptr<const tls::context> server,
                          std::shared_ptr<const tls::context> client) {
  links_->set_tls(std::move(server), std::move(client));
}

void replication::connect(core::client_addresses self) {
  host_->directory()->set_addresses(host_->config().self, self);
  links_->set_client_addresses(self.http, self.msgpack);
  links_->start();
}

void replication::with_host(const std::function<void(core::replica_host&)>& f) {
  with_host(f, std::chrono::steady_clock::time_point::max());
}

bool replication::with_host(const std::function<void(core::replica_host&)>& f,
                            std::chrono::steady_clock::time_point until) {
  // `f` (and what it refers to) lives only while this call waits: a job
  // that starts after the wait gave up must not touch it.
  struct call {
    std::mutex m;
    bool abandoned = false;
    std::promise<void> done;
  };
  auto c = std::make_shared<call>();
  auto ran = c->done.get_future();
  commits_->run([c, &f, host = host_] {
    std::lock_guard lock{c->m};
    if (c->abandoned)
      return;
    f(*host);
    c->done.set_value();
  });
  if (until == std::chrono::steady_clock::time_point::max()) {
    ran.wait();
    return true;
  }
  if (ran.wait_until(until) == std::future_status::ready)
    return true;
  std::lock_guard lock{c->m}; // waits for a run that just began
  if (ran.wait_for(std::chrono::seconds{0}) == std::future_status::ready)
    return true;
  c->abandoned = true;
  return false;
}

void replication::promote(
    std::optional<slot_t> slot, std::optional<cluster::node_id> to,
    std::function<void(std::vector<core::promote_outcome>)> done) {
  commits_->run([host = host_, slot, to, done = std::move(done)]() mutable {
    std::vector<slot_t> slots;
    if (slot)
      slots.push_back(*slot);
    else
      for (std::uint32_t s = 0; s < host->config().slots; ++s)
        if (host->holds(static_cast<slot_t>(s)))
          slots.push_back(static_cast<slot_t>(s));
    if (slots.empty())
      return done({});
    struct tally {
      std::vector<core::promote_outcome> out;
      std::size_t left = 0;
      std::function<void(std::vector<core::promote_outcome>)> done;
    };
    auto t = std::make_shared<tally>();
    t->out.resize(slots.size());
    t->left = slots.size();
    t->done = std::move(done);
    for (std::size_t i = 0; i < slots.size(); ++i)
      host->promote(slots[i], to, [t, i](const core::promote_outcome& o) {
        t->out[i] = o;
        if (--t->left == 0)
          t->done(std::move(t->out));
      });
  });
}

void replication::report(
    std::function<void(std::vector<core::slot_report>)> done) {
  commits_->run(
      [host = host_, done = std::move(done)] { done(host->report()); });
}

void replication::schedule_tick() {
  tick_timer_.expires_after(tick_);
  tick_timer_.async_wait([this](std::error_code ec) {
    if (ec || stopped_)
      return;
    // One tick waits on the committer at most: a busy writer skips some.
    if (!tick_queued_->exchange(true))
      commits_->run([host = host_, queued = tick_queued_] {
        queued->store(false);
        host->tick();
      });
    schedule_tick();
  });
}

void replication::stop() {
  if (stopped_.exchange(true))
    return;
  links_->stop();
  asio::post(io_, [this] { tick_timer_.cancel(); });
  work_.reset();
  if (io_thread_.joinable())
    io_thread_.join();
  // After every job queued before it: the host fails what waits and its
  // messages go nowhere from now on. Waited for itself (`wait_idle` counts
  // commits only).
  std::promise<void> cut;
  commits_->run([host = host_, wire = wire_, &cut] {
    host->stop();
    *wire = nullptr;
    cut.set_value();
  });
  cut.get_future().wait();
}

peer::links_stats replication::link_stats() const {
  return links_->stats();
}

} // namespace spool::server
