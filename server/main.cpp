// spoold: the Spool broker daemon.
//
// Opens the store (LMDB in --data-dir), recovers and logs the catalog,
// starts the broker core as actors (the store writer on its own thread, the
// broker with a coordinator per recovered queue), the gateway over it, and
// the two front doors (protocol/: HTTP and msgpack/TCP) on one set of io
// threads; then it is ready.
//
// SIGTERM/SIGINT: /health/ready answers 503 (draining) and new requests
// are refused with 503; the listener stops accepting; parked pops are
// answered empty; requests in flight (commits among them) get
// --shutdown-grace-ms to be answered (both doors together); then the
// connections close, the broker stops, then the writer (which commits what
// it was sent before), and the store closes: exit 0. If the broker ends by
// itself (storage fatally broken), spoold exits 1.

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <pthread.h>
#include <sys/resource.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#ifdef SPOOL_MIMALLOC
#include <mimalloc.h>
#endif

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "actors/broker/broker_actor.hpp"
#include "actors/scheduler.hpp"
#include "actors/writer/writer_actor.hpp"
#include "config/options.hpp"
#include "gateway/start.hpp"
#include "protocol/api/metrics.hpp"
#include "protocol/api/mp_ops.hpp"
#include "protocol/api/router.hpp"
#include "protocol/http/server.hpp"
#include "protocol/io/pool.hpp"
#include "protocol/tcp/server.hpp"
#include "server/cluster_node.hpp"
#include "server/security.hpp"
#include "storage/store.hpp"
#include "vocab/fail_point.hpp"

namespace {

spool::storage::store_options
to_store_options(const spool::config::server_options& opts) {
  spool::storage::store_options s;
  s.env.dir = opts.data_dir;
  s.env.mode = opts.durability == spool::config::durability_mode::strict
                   ? spool::storage::durability::strict
                   : spool::storage::durability::relaxed;
  s.env.initial_map_bytes = static_cast<std::size_t>(opts.initial_map_mib)
                            << 20;
  s.slot_count = static_cast<std::uint32_t>(opts.slots);
  s.env.slot_log.entries = opts.slot_log_entries;
  s.env.slot_log.bytes = opts.slot_log_mib << 20;
  return s;
}

/// Tests only (docs/cluster.md, "Fail points"): the points
/// `SPOOL_FAIL_POINTS` names, armed by SIGUSR2. False: it cannot be read.
bool arm_fail_points_on_sigusr2() {
  const char* spec = std::getenv("SPOOL_FAIL_POINTS");
  if (spec == nullptr || *spec == '\0')
    return true;
  if (auto err = spool::fail_points::configure(spec)) {
    std::fprintf(stderr, "spoold: %s\n", err->c_str());
    return false;
  }
  if (!spool::fail_points::named())
    return true;
  struct sigaction on_usr2 {};
  on_usr2.sa_handler = [](int) { spool::fail_points::arm(); };
  on_usr2.sa_flags = SA_RESTART;
  sigemptyset(&on_usr2.sa_mask);
  ::sigaction(SIGUSR2, &on_usr2, nullptr);
  spdlog::warn("fail points named ({}): SIGUSR2 makes this process kill "
               "itself at them; never in production",
               spec);
  return true;
}

} // namespace

int main(int argc, char** argv) {
#ifdef SPOOL_MIMALLOC
  // A freed segment (32 MiB and up) goes back to the OS at once, not after
  // a 500 ms delay whose purge waits for a later allocation that an idle
  // thread never makes: most of a big pop answer's memory is returned once
  // it is written (docs/architecture.md, "The allocator";
  // bench/pop_memory_bench). Pages keep their 25 ms delay: at 0 a consume
  // run spends 65% more CPU in madvise and page faults.
  mi_option_set(mi_option_segment_decommit_delay, 0);
#endif
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = spool::config::parse(
      args, [](const char* name) { return std::getenv(name); });
  if (parsed.help) {
    std::fputs(spool::config::usage().c_str(), stdout);
    return 0;
  }
  if (parsed.version) {
    std::puts("spoold " SPOOL_VERSION " (protocol 1)");
    return 0;
  }
  if (!parsed.options) {
    std::fprintf(stderr, "spoold: %s\nRun spoold --help for the options.\n",
                 parsed.error.c_str());
    return 2;
  }
  auto& opts = *parsed.options;
  if (opts.cluster.enabled())
    if (auto secret = spool::server::read_secret(opts.cluster.secret_file);
        !secret) {
      std::fprintf(stderr, "spoold: %s\n", secret.err().message.c_str());
      return 2;
    }
  spdlog::set_level(spdlog::level::from_str(opts.log_level));
  // Tokens (docs/security.md): keys that cannot be read or cannot verify
  // safely stop the start, as a wrong option does.
  std::unique_ptr<spool::auth::gate> gate;
  if (opts.auth.enabled) {
    auto g = spool::server::make_gate(opts.auth);
    if (!g) {
      std::fprintf(stderr, "spoold: %s\n", g.err().message.c_str());
      return 2;
    }
    gate = std::move(*g);
  }
  auto door_sec = spool::server::door_security(gate.get(), opts.auth);
  if (!door_sec) {
    std::fprintf(stderr, "spoold: %s\n", door_sec.err().message.c_str());
    return 2;
  }
  auto tls_ctx = spool::server::door_tls(opts.tls);
  if (!tls_ctx) {
    std::fprintf(stderr, "spoold: %s\n", tls_ctx.err().message.c_str());
    return 2;
  }
  auto encryption = spool::server::encryption_keys(opts.encryption);
  if (!encryption) {
    std::fprintf(stderr, "spoold: %s\n", encryption.err().message.c_str());
    return 2;
  }
  spool::server::warn_if_open(opts);
  if (!arm_fail_points_on_sigusr2())
    return 2;
  // Every connection is a descriptor: take the hard limit.
  if (rlimit lim{};
      ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }

  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGUSR1); // the main thread wakes the waiter
  sigaddset(&stop_signals, SIGHUP);  // reload the key files
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // --jwt-jwks-url: fetched at start (make_gate) and every refresh
  // interval, on a thread made once the signals are blocked (it inherits
  // the mask: a signal never lands on it). It outlives the doors (its
  // hook in the gate is called from their checks).
  spool::server::key_refresher refresher{gate.get(), opts.auth};

  spdlog::info("spoold starting: data dir {}, durability {}", opts.data_dir,
               opts.durability == spool::config::durability_mode::strict
                   ? "strict"
                   : "relaxed");
  auto st = spool::storage::store::open(to_store_options(opts));
  if (!st) {
    spdlog::critical("cannot open the store: {}", to_string(st.err()));
    return 1;
  }
  auto& cat = (*st)->recovered();
  spdlog::info("recovered {} queue(s), {} partition(s)", cat.queues.size(),
               cat.partitions.size());
  if (auto refused
      = spool::server::check_encrypted_queues(cat.queues, encryption->get());
      !refused.empty()) {
    spdlog::critical("{}", refused);
    std::fprintf(stderr, "spoold: %s\n", refused.c_str());
    return 2;
  }
  for (auto& p : cat.partitions)
    spdlog::info("  queue {} partition '{}' ({}): lastOffset {}, watermark {}",
                 p.queue.value, p.name, p.uuid, p.last_offset().value,
                 p.watermark.value);
  // Cluster mode (docs/cluster.md): replication over the store, before
  // the writer, which commits through its committer.
  std::unique_ptr<spool::server::cluster_node> cluster;
  if (opts.cluster.enabled()) {
    auto node = spool::server::cluster_node::start(
        **st, opts.cluster,
        [](const std::string& line) { spdlog::info("cluster: {}", line); });
    if (!node) {
      spdlog::critical("cannot start cluster mode: {}", to_string(node.err()));
      return 1;
    }
    cluster = std::move(*node);
    spdlog::info("cluster mode: node {} of {}, replication factor {}, peer "
                 "links {}",
                 opts.cluster.node_id, opts.cluster.peers.size(),
                 opts.cluster.replication_factor,
                 opts.cluster.peer_tls()
                     ? "over mutual TLS (certificate "
                           + opts.cluster.peer_tls_cert_file + ")"
                     : std::string{"in clear"});
  }
  int exit_code = 0;
  {
    // The broker core runs as actors: the store writer on a thread of its
    // own (it blocks in fsync), the broker and its queues on the scheduler.
    caf::actor_system_config cfg;
    spool::actors::use_scheduler(cfg, "spool", 2);
    caf::actor_system sys{cfg};
    // Cluster mode: replication stops before the actor system ends, on
    // every way out of this block (waiting writes answered, the links
    // closed, the broker's handle dropped).
    struct stop_cluster {
      std::unique_ptr<spool::server::cluster_node>& node;
      ~stop_cluster() {
        if (node)
          node->stop();
      }
    } cluster_guard{cluster};
    // How far each slot is durable: raised by the writer, read by answers
    // that write nothing.
    // A cluster node's start at each slot's commit point, when it serves.
    auto marks
        = cluster ? spool::storage::expected<
              std::shared_ptr<spool::actors::durable_marks>>{cluster->marks()}
                  : spool::actors::durable_marks::of((*st)->db());
    if (!marks) {
      spdlog::critical("cannot read the slot log: {}", marks.err().message);
      return 1;
    }
    auto writer = spool::actors::spawn_writer(
        sys,
        {.env = &(*st)->db(),
         .commits = cluster ? cluster->committer() : nullptr,
         .durability = cluster ? cluster->durability() : nullptr,
         .marks = *marks},
        true);
    if (!writer) {
      spdlog::critical("cannot start the writer: {}", to_string(writer.err()));
      return 1;
    }
    spool::actors::broker_config bc;
    bc.node.store = st->get();
    bc.node.writer = *writer;
    bc.node.durable = *marks;
    bc.pop = opts.pop;
    bc.push = opts.push;
    bc.node.max_extend = std::chrono::seconds{
        static_cast<std::int64_t>(opts.lease.max_extend_s)};
    bc.node.default_subscription
        = opts.default_subscription_new
              ? spool::storage::subscription_mode::new_only
              : spool::storage::subscription_mode::all;
    bc.node.retention_interval = std::chrono::seconds{
        static_cast<std::int64_t>(opts.retention.interval_s)};
    bc.node.partition_idle = std::chrono::seconds{
        static_cast<std::int64_t>(opts.partitions.idle_s)};
    bc.node.max_partition_actors
        = static_cast<std::size_t>(opts.partitions.max_live);
    bc.node.wall = spool::system_wall_now;
    bc.node.metrics = std::make_shared<spool::actors::node_metrics>();
    bc.node.encryption_keys = *encryption;
    bc.node.codec = opts.segment_compression
                        ? spool::storage::compression::zstd_when_smaller
                        : spool::storage::compression::off;
    if (cluster)
      bc.slots = cluster->directory();
    auto broker = spool::actors::spawn_broker(sys, bc);
    if (!broker) {
      spdlog::critical("cannot start the broker: {}", to_string(broker.err()));
      caf::anon_send_exit(*writer, caf::exit_reason::user_shutdown);
      return 1;
    }
    if (cluster) { // its queues load slot by slot, as it serves them
      cluster->attach(*broker);
      spdlog::info("broker running: queues load as their slots are served "
                   "here");
    } else
      spdlog::info("broker running: {} queue(s) recovered as actors",
                   cat.queues.size());
    auto gw = spool::make_gateway(sys, *broker, bc.node.wall, bc.node.metrics,
                                  *encryption);
    if (cluster) { // the doors close before the cluster node goes
      gw->set_promoter([c = cluster.get()](auto req, auto k) {
        c->promote(std::move(req), std::move(k));
      });
      gw->set_slot_reporter(
          [c = cluster.get()](auto k) { c->slot_replicas(std::move(k)); });
      gw->set_slot_server([c = cluster.get()] { return c->served_slots(); });
    }
    spool::api::service svc{*gw};
    svc.max_body_bytes = opts.http.max_body_bytes;
    svc.sec = *door_sec;
    spool::api::router routes{svc};
    std::vector<std::string> ops(spool::mp::op_names().begin(),
                                 spool::mp::op_names().end());
    spool::api::metrics stats{routes.patterns(), std::move(ops)};
    svc.stats = &stats;
    svc.data_dir = opts.data_dir;
    spool::http::server_limits limits;
    limits.max_connections = opts.http.max_connections;
    limits.max_pipeline = opts.http.max_pipeline;
    limits.idle_timeout = std::chrono::milliseconds{
        static_cast<std::int64_t>(opts.http.idle_timeout_ms)};
    limits.request_timeout = std::chrono::milliseconds{
        static_cast<std::int64_t>(opts.http.request_timeout_ms)};
    limits.parser.max_body_bytes = opts.http.max_body_bytes;
    limits.parser.max_header_bytes = opts.http.max_header_bytes;
    std::chrono::milliseconds auth_timeout{
        gate ? static_cast<std::int64_t>(opts.auth.auth_timeout_ms) : 0};
    limits.auth_timeout = auth_timeout;
    limits.max_pending = opts.auth.max_pending_connections;
    std::chrono::milliseconds handshake_timeout{
        static_cast<std::int64_t>(opts.tls.handshake_timeout_ms)};
    limits.handshake_timeout = handshake_timeout;
    auto pool = std::make_shared<spool::io::pool>();
    auto http = std::make_unique<spool::http::server>(
        limits,
        [&routes](spool::http::request req,
                  std::shared_ptr<spool::http::exchange> ex) {
          routes.handle(std::move(req), std::move(ex));
        },
        pool);
    spool::mp::server_limits mlimits;
    mlimits.max_connections = opts.msgpack.max_connections;
    mlimits.max_in_flight = opts.msgpack.max_in_flight;
    mlimits.max_frame_bytes = opts.msgpack.max_frame_bytes;
    mlimits.idle_timeout = std::chrono::milliseconds{
        static_cast<std::int64_t>(opts.msgpack.idle_timeout_ms)};
    mlimits.frame_timeout = std::chrono::milliseconds{
        static_cast<std::int64_t>(opts.msgpack.frame_timeout_ms)};
    mlimits.auth_timeout = auth_timeout;
    mlimits.max_pending = opts.auth.max_pending_connections;
    mlimits.handshake_timeout = handshake_timeout;
    auto mp = std::make_unique<spool::mp::server>(
        mlimits,
        spool::mp::make_handler(
            svc, {mlimits.max_frame_bytes, mlimits.max_in_flight}),
        pool);
    http->set_common_headers(spool::api::router::common_headers());
    // The doors' certificate in force (replaced by a reload), for the
    // metrics' expiry gauge.
    std::atomic<std::shared_ptr<const spool::tls::context>> doors_tls{*tls_ctx};
    if (*tls_ctx || opts.cluster.peer_tls())
      svc.certificates = [&doors_tls, &cluster] {
        std::vector<std::pair<std::string, std::int64_t>> out;
        if (auto c = doors_tls.load())
          out.emplace_back("doors", c->not_after());
        if (cluster && cluster->peer_certificate_expiry() != 0)
          out.emplace_back("peers", cluster->peer_certificate_expiry());
        return out;
      };
    if (*tls_ctx) {
      http->set_tls(*tls_ctx);
      mp->set_tls(*tls_ctx);
      spdlog::info("TLS on both doors: certificate {} (expires {})",
                   opts.tls.cert_file, (*tls_ctx)->not_after());
    }
    if (gate) // a client without a valid token sends no body in
      http->set_head_check([&routes](const spool::http::request& head,
                                     std::string_view peer,
                                     std::string_view client_subject) {
        return routes.check_head(head, peer, client_subject);
      });
    svc.open_connections
        = [&http, &mp] { return http->connections() + mp->connections(); };
    if (opts.http.access_log)
      http->set_observer([](const spool::http::request_record& r) {
        // key=value, one line per answer (a log shipper splits it)
        if (r.note.empty())
          spdlog::info("access peer={} method={} path={} status={} us={}",
                       r.peer, r.method, r.path, r.status, r.duration.count());
        else
          spdlog::info(
              "access peer={} method={} path={} status={} us={} note=\"{}\"",
              r.peer, r.method, r.path, r.status, r.duration.count(), r.note);
      });
    auto err = http->listen(opts.http.address,
                            static_cast<std::uint16_t>(opts.http.port));
    if (err.empty())
      err = mp->listen(opts.msgpack.address,
                       static_cast<std::uint16_t>(opts.msgpack.port));
    if (!err.empty()) {
      spdlog::critical("{}", err);
      caf::anon_send_exit(*broker, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(*writer, caf::exit_reason::user_shutdown);
      return 1;
    }
    if (cluster) { // dialed once the doors' addresses are known
      std::string peer_host;
      for (auto& p : opts.cluster.peers)
        if (p.name == opts.cluster.node_id)
          peer_host = p.host;
      spool::core::client_addresses self{
          spool::config::advertised(opts.cluster.advertise_http,
                                    opts.http.address, http->port(), peer_host),
          spool::config::advertised(opts.cluster.advertise_msgpack,
                                    opts.msgpack.address, mp->port(),
                                    peer_host)};
      for (auto* a : {&self.http, &self.msgpack})
        if (auto bad = spool::config::check_advertised("a derived client", *a);
            !bad.empty()) {
          spdlog::critical("{} (give --advertise-http and "
                           "--advertise-msgpack)",
                           bad);
          caf::anon_send_exit(*broker, caf::exit_reason::user_shutdown);
          caf::anon_send_exit(*writer, caf::exit_reason::user_shutdown);
          return 2;
        }
      spdlog::info("cluster: clients reach this node at HTTP {}, msgpack {}",
                   self.http, self.msgpack);
      cluster->connect(std::move(self));
    }
    http->start(static_cast<unsigned>(opts.http.io_threads));
    mp->name_http_port(http->port());
    mp->start();
    pool->start(static_cast<unsigned>(opts.http.io_threads));
    svc.state = spool::api::readiness::ready;
    spdlog::info("HTTP listening on {}:{}, msgpack on {}:{} ({} io "
                 "thread(s)); ready",
                 opts.http.address, http->port(), opts.msgpack.address,
                 mp->port(), opts.http.io_threads);
    // The main thread waits for the broker to end: on a stop signal (the
    // signal thread drains the door, then ends it) or by itself, when
    // storage is fatally broken (a queue it cannot restart): then spoold
    // exits non-zero so that a supervisor restarts it, instead of staying
    // up with no broker inside.
    // (optional: it must be gone before the actors are awaited below)
    std::optional<caf::scoped_actor> waiter{std::in_place, sys};
    (*waiter)->monitor(*broker);
    (*waiter)->monitor(*writer);
    std::atomic<int> signalled{0};
    std::thread signals([&] {
      int sig = 0;
      for (;;) {
        sigwait(&stop_signals, &sig);
        if (sig != SIGHUP)
          break;
        if (opts.tls.enabled()) {
          // New connections take the new certificate; open ones keep theirs.
          auto fresh = spool::server::door_tls(opts.tls);
          if (fresh && *fresh) {
            http->set_tls(*fresh);
            mp->set_tls(*fresh);
            doors_tls.store(*fresh);
            spdlog::info("SIGHUP: TLS certificate reloaded (expires {})",
                         (*fresh)->not_after());
          } else if (!fresh) {
            spdlog::error("SIGHUP: TLS certificate not reloaded, the old one "
                          "stays: {}",
                          fresh.err().message);
          }
        }
        if (cluster && opts.cluster.peer_tls()) {
          auto err = cluster->reload_tls(opts.cluster);
          if (err.empty())
            spdlog::info("SIGHUP: peer TLS certificate reloaded (expires {})",
                         cluster->peer_certificate_expiry());
          else
            spdlog::error("SIGHUP: peer TLS certificate not reloaded, the old "
                          "one stays: {}",
                          err);
        }
        if (!gate) {
          spdlog::info("SIGHUP: tokens are off, no keys to reload");
          continue;
        }
        auto err = spool::server::reload_keys(*gate, opts.auth);
        if (err.empty())
          spdlog::info("SIGHUP: token keys reloaded");
        else
          spdlog::error(
              "SIGHUP: token keys not reloaded, the old ones stay: {}", err);
      }
      signalled = sig;
      if (sig != SIGUSR1) { // SIGUSR1: the main thread's wake-up, no signal
        spdlog::info("signal {} received: draining", sig);
        svc.state = spool::api::readiness::draining;
        http->stop_accepting();
        mp->stop_accepting();
        auto parked = gw->cancel_all();
        spdlog::info("answered {} pop(s) in flight empty; waiting up to {} ms "
                     "for requests in flight",
                     parked, opts.shutdown_grace_ms);
        auto grace = std::chrono::milliseconds{
            static_cast<std::int64_t>(opts.shutdown_grace_ms)};
        // Both doors drain together, against the same grace.
        std::thread mp_drain{[&] { mp->shutdown(grace); }};
        http->shutdown(grace);
        mp_drain.join();
        // docs/cluster.md, "Handoff": the slots led here go to up-to-date
        // followers while the links still run.
        if (cluster) {
          spdlog::info("front doors closed: handing off the slots led here");
          auto r = cluster->hand_off(grace);
          for (auto& line : r.lines)
            spdlog::info("handoff: {}", line);
          spdlog::info("handoff: {} of the {} slot(s) led here handed to "
                       "other nodes",
                       r.handed, r.led);
        }
        spdlog::info("front doors closed: stopping the broker");
      }
      caf::anon_send_exit(*broker, caf::exit_reason::user_shutdown);
    });
    caf::error why;
    bool broker_down = false;
    bool writer_down = false;
    while (!broker_down)
      (*waiter)->receive([&](caf::down_msg& dm) {
        if (dm.source == broker->address()) {
          broker_down = true;
          why = dm.reason;
        } else { // the writer ended first: nothing can be stored any more
          writer_down = true;
          spdlog::critical("the store writer stopped: {}",
                           caf::to_string(dm.reason));
          exit_code = 1;
          caf::anon_send_exit(*broker, caf::exit_reason::user_shutdown);
        }
      });
    if (signalled == 0) {
      if (exit_code == 0)
        spdlog::critical("the broker stopped by itself ({}): exiting so that "
                         "a supervisor restarts spoold",
                         caf::to_string(why));
      exit_code = 1;
      pthread_kill(signals.native_handle(), SIGUSR1);
    }
    signals.join();
    http->shutdown(std::chrono::milliseconds{0}); // (done already on a signal)
    mp->shutdown(std::chrono::milliseconds{0});
    pool->stop();
    // Writes waiting for a quorum are answered (unavailable: outcome
    // unknown) and the peer links close before the writer stops.
    if (cluster)
      cluster->stop();
    // The writer ends after the broker: batches sent before it stopped are
    // committed (synced) and answered first (writer_actor's exit handler).
    if (!writer_down) {
      caf::anon_send_exit(*writer, caf::exit_reason::user_shutdown);
      (*waiter)->receive([&](caf::down_msg&) {});
    }
    if (cluster)
      cluster->leave_actor_system();
    // The gateway's helpers answer what was still in flight (with errors,
    // the broker is gone); then the door and the gateway go, before the
    // actor system they use.
    waiter.reset();
    sys.await_all_actors_done();
    mp.reset();
    http.reset();
    gw.reset();
  }                // the actor system ends here
  cluster.reset(); // before the store it replicates closes
  spdlog::info("actors stopped: closing the store");
  if (auto closed = (*st)->close(); !closed) {
    spdlog::critical("closing the store failed: {}", to_string(closed.err()));
    return 1;
  }
  spdlog::info("store closed; bye");
  return exit_code;
}
