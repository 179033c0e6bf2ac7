// GET /metrics/prometheus: the door's counters and latency histograms, the
// process (connections, parked pops, RSS, storage files, the LMDB map's
// use), in cluster mode each slot's replica (role, epoch, followers' lag),
// and per queue, partition and group the node's exact positions, read at
// each scrape: last offset, watermark, committed, lag in messages and in
// seconds, the lease, and DLQ sizes.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <unistd.h>

#include "protocol/api/metrics.hpp"
#include "protocol/api/router.hpp"

namespace spool::api {

namespace {

std::uint64_t rss_bytes() {
  std::ifstream in{"/proc/self/statm"};
  std::uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::uint64_t dir_bytes(const std::string& dir) {
  std::error_code ec;
  std::uint64_t total = 0;
  for (auto& e : std::filesystem::directory_iterator{dir, ec})
    if (e.is_regular_file(ec))
      total += e.file_size(ec);
  return total;
}

void gauge(std::string& out, const char* name, const std::string& labels,
           std::int64_t v) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  out += ' ';
  out += std::to_string(v);
  out += '\n';
}

std::string
labels(std::initializer_list<std::pair<const char*, std::string>> kv) {
  std::string s;
  for (auto& [k, v] : kv) {
    if (!s.empty())
      s += ',';
    s += k;
    s += "=\"";
    s += prom::label(v);
    s += '"';
  }
  return s;
}

/// The scrape under way: its text, and the DLQ totals still to come.
struct scrape {
  std::string out;
  std::mutex mx;
  std::size_t waiting = 0;
  std::vector<std::pair<std::string, std::size_t>> dlq;
  exchange_ptr ex;
};

void finish(scrape& s) {
  std::sort(s.dlq.begin(), s.dlq.end());
  prom::help(s.out, "spool_dlq_messages", "gauge",
             "Dead letters stored per queue (every group).");
  for (auto& [q, n] : s.dlq)
    gauge(s.out, "spool_dlq_messages", labels({{"queue", q}}),
          static_cast<std::int64_t>(n));
  http::response r;
  r.headers.emplace_back("Content-Type", "text/plain; version=0.0.4");
  r.body = std::move(s.out);
  s.ex->respond(std::move(r));
}

void render_groups(std::string& out, const std::vector<node::cursor_view>& cs) {
  auto now = system_wall_now();
  struct series {
    const char* name;
    const char* text;
    std::int64_t (*value)(const node::cursor_view&, micros);
  };
  static const series all[] = {
      {"spool_group_committed_offset", "A group's committed offset.",
       [](const node::cursor_view& v, micros) { return v.committed; }},
      {"spool_group_lag_messages", "Messages after a group's position (exact).",
       [](const node::cursor_view& v, micros) { return v.lag; }},
      {"spool_group_lag_seconds",
       "Age of the oldest message a group has not consumed.",
       [](const node::cursor_view& v, micros t) -> std::int64_t {
         if (v.lag <= 0 || v.oldest_unconsumed_at <= 0)
           return 0;
         return std::max<std::int64_t>(0, (t - v.oldest_unconsumed_at)
                                              / 1'000'000);
       }},
      {"spool_group_lease_active", "1 while a group holds a lease.",
       [](const node::cursor_view& v, micros) -> std::int64_t {
         return v.lease ? 1 : 0;
       }},
      {"spool_group_redeliveries", "Frames delivered again above committed.",
       [](const node::cursor_view& v, micros) {
         return static_cast<std::int64_t>(v.redeliveries);
       }},
  };
  for (auto& s : all) {
    prom::help(out, s.name, "gauge", s.text);
    for (auto& v : cs)
      gauge(out, s.name,
            labels({{"queue", v.queue},
                    {"partition", v.partition},
                    {"group", v.group}}),
            s.value(v, now));
  }
}

void render_queues(std::string& out, const std::vector<node::queue_info>& qs) {
  prom::help(out, "spool_partition_last_offset", "gauge",
             "A partition's highest durable offset (-1: none yet).");
  for (auto& q : qs)
    for (auto& p : q.partitions)
      gauge(out, "spool_partition_last_offset",
            labels({{"queue", q.name}, {"partition", p.name}}), p.last_offset);
  prom::help(out, "spool_partition_watermark", "gauge",
             "A partition's lowest retained offset.");
  for (auto& q : qs)
    for (auto& p : q.partitions)
      gauge(out, "spool_partition_watermark",
            labels({{"queue", q.name}, {"partition", p.name}}), p.watermark);
}

/// Cluster mode: each slot's replica here, and as leader its followers'
/// lag (nothing on one node).
void render_slots(std::string& out, const std::vector<node::slot_replica>& ss) {
  if (ss.empty())
    return;
  struct series {
    const char* name;
    const char* text;
    std::int64_t (*value)(const node::slot_replica&);
  };
  static const series all[] = {
      {"spool_slot_leader",
       "1 while this node leads the slot (serving or taking office).",
       [](const node::slot_replica& s) -> std::int64_t {
         return s.leader ? 1 : 0;
       }},
      {"spool_slot_serving",
       "1 while this node serves the slot (its epoch start committed).",
       [](const node::slot_replica& s) -> std::int64_t {
         return s.serving ? 1 : 0;
       }},
      {"spool_slot_epoch", "The slot's epoch as this node knows it.",
       [](const node::slot_replica& s) {
         return static_cast<std::int64_t>(s.epoch);
       }},
      {"spool_slot_commit_seq",
       "The slot's commit point as this node knows it.",
       [](const node::slot_replica& s) {
         return static_cast<std::int64_t>(s.commit);
       }},
      {"spool_slot_last_seq", "The last seq of the slot's log here.",
       [](const node::slot_replica& s) {
         return static_cast<std::int64_t>(s.last);
       }},
      {"spool_slot_damaged",
       "1 while this replica is damaged (it re-syncs from the leader).",
       [](const node::slot_replica& s) -> std::int64_t {
         return s.damaged ? 1 : 0;
       }},
  };
  for (auto& s : all) {
    prom::help(out, s.name, "gauge", s.text);
    for (auto& r : ss)
      gauge(out, s.name, labels({{"slot", std::to_string(r.slot)}}),
            s.value(r));
  }
  prom::help(out, "spool_slot_follower_lag_entries", "gauge",
             "Entries a follower lacks of the slot's log (on its leader).");
  for (auto& r : ss)
    for (auto& f : r.followers)
      gauge(out, "spool_slot_follower_lag_entries",
            labels({{"slot", std::to_string(r.slot)}, {"follower", f.node}}),
            static_cast<std::int64_t>(f.entries));
  prom::help(out, "spool_slot_follower_lag_bytes", "gauge",
             "Payload bytes of those entries (past 1 MiB read per scrape, "
             "estimated from the mean entry).");
  for (auto& r : ss)
    for (auto& f : r.followers)
      gauge(out, "spool_slot_follower_lag_bytes",
            labels({{"slot", std::to_string(r.slot)}, {"follower", f.node}}),
            static_cast<std::int64_t>(f.bytes));
}

void render_counters(std::string& out, const node::node_counters& c) {
  struct row {
    const char* name;
    const char* help;
    std::uint64_t value;
  };
  const row rows[] = {
      {"spool_messages_acked_total",
       "Messages acks made done (completed or dead-lettered), once durable.",
       c.messages_acked},
      {"spool_dead_letters_expired_total",
       "DLQ entries removed by dlqRetentionSeconds.", c.dead_letters_expired},
      {"spool_retention_deleted_total", "Frames retention deleted.",
       c.retention_deleted},
      {"spool_actor_restarts_total",
       "Actors that died (a bug) and were restarted from storage.",
       c.actor_restarts},
  };
  for (auto& r : rows) {
    prom::help(out, r.name, "counter", r.help);
    gauge(out, r.name, "", static_cast<std::int64_t>(r.value));
  }
  prom::help(out, "spool_pops_parked", "gauge",
             "Long polls parked in the node now (pop.maxParked caps them).");
  gauge(out, "spool_pops_parked", "", static_cast<std::int64_t>(c.pops_parked));
  prom::help(out, "spool_partitions", "gauge",
             "Partitions of the queues this node serves, by state: live (an "
             "actor now) or passive (its rows only; spawned at first "
             "contact).");
  gauge(out, "spool_partitions", labels({{"state", "live"}}),
        c.partition_actors);
  gauge(out, "spool_partitions", labels({{"state", "passive"}}),
        c.partitions_loaded - c.partition_actors);
}

void render_usage(std::string& out, const node::storage_usage& u) {
  prom::help(out, "spool_storage_map_bytes", "gauge",
             "Size of the LMDB map now (it grows by doubling).");
  gauge(out, "spool_storage_map_bytes", "",
        static_cast<std::int64_t>(u.map_bytes));
  prom::help(out, "spool_storage_map_used_bytes", "gauge",
             "Bytes of the LMDB map in use (pages up to the last one).");
  gauge(out, "spool_storage_map_used_bytes", "",
        static_cast<std::int64_t>(u.used_bytes));
  prom::help(out, "spool_storage_map_max_bytes", "gauge",
             "The size the LMDB map may grow to (storage full beyond).");
  gauge(out, "spool_storage_map_max_bytes", "",
        static_cast<std::int64_t>(u.max_map_bytes));
}

void scrape_node(std::shared_ptr<scrape> s, gateway& gw);

void prometheus(service& svc, call& c) {
  auto whole = c.gw.whole();
  if (!whole)
    return reply_error(*c.ex, whole.err());
  gateway& gw = **whole;
  gateway* node_gw = *whole;
  auto s = std::make_shared<scrape>();
  s->ex = c.ex;
  if (svc.stats)
    svc.stats->render(s->out);
  prom::help(s->out, "spool_http_open_connections", "gauge",
             "Open connections of the front doors.");
  gauge(s->out, "spool_http_open_connections", "",
        svc.open_connections ? static_cast<std::int64_t>(svc.open_connections())
                             : 0);
  prom::help(s->out, "spool_parked_pops", "gauge",
             "Pops in flight in the node (parked long polls among them).");
  gauge(s->out, "spool_parked_pops", "",
        static_cast<std::int64_t>(gw.pops_in_flight()));
  render_counters(s->out, gw.counters());
  if (svc.certificates) {
    prom::help(s->out, "spool_tls_certificate_expiry_timestamp_seconds",
               "gauge",
               "When each TLS certificate in force expires (notAfter, unix "
               "seconds); a SIGHUP reload replaces it.");
    for (auto& [name, not_after] : svc.certificates())
      gauge(s->out, "spool_tls_certificate_expiry_timestamp_seconds",
            labels({{"certificate", name}}), not_after);
  }
  prom::help(s->out, "spool_process_resident_bytes", "gauge",
             "Resident set size of spoold.");
  gauge(s->out, "spool_process_resident_bytes", "",
        static_cast<std::int64_t>(rss_bytes()));
  if (!svc.data_dir.empty()) {
    prom::help(s->out, "spool_storage_bytes", "gauge",
               "Bytes of the store's files on disk.");
    gauge(s->out, "spool_storage_bytes", "",
          static_cast<std::int64_t>(dir_bytes(svc.data_dir)));
  }
  gw.storage_usage([s, node_gw](expected<node::storage_usage> u) {
    if (!u)
      return reply_error(*s->ex, u.err());
    render_usage(s->out, *u);
    scrape_node(s, *node_gw);
  });
}

void scrape_groups(std::shared_ptr<scrape> s, gateway& gw);

/// The slots' replicas (cluster mode), the node's listings, one after the
/// other, then the DLQ sizes.
void scrape_node(std::shared_ptr<scrape> s, gateway& gw) {
  gw.slot_replicas([s, &gw](expected<std::vector<node::slot_replica>> ss) {
    if (!ss)
      return reply_error(*s->ex, ss.err());
    render_slots(s->out, *ss);
    scrape_groups(s, gw);
  });
}

void scrape_groups(std::shared_ptr<scrape> s, gateway& gw) {
  gw.groups({}, [s, &gw](expected<std::vector<node::cursor_view>> cs) {
    if (!cs)
      return reply_error(*s->ex, cs.err());
    render_groups(s->out, *cs);
    gw.queues(
        std::nullopt, [s, &gw](expected<std::vector<node::queue_info>> qs) {
          if (!qs)
            return reply_error(*s->ex, qs.err());
          render_queues(s->out, *qs);
          if (qs->empty())
            return finish(*s);
          s->waiting = qs->size();
          for (auto& q : *qs) {
            dlq_query dq;
            dq.filter.queue = q.name;
            dq.limit = 1;
            gw.dlq_list(dq, [s, name = q.name](expected<node::dlq_page> p) {
              std::lock_guard lock{s->mx};
              s->dlq.emplace_back(name, p ? p->total : 0);
              if (--s->waiting == 0)
                finish(*s);
            });
          }
        });
  });
}

} // namespace

void add_metrics_routes(std::vector<route>& t) {
  t.push_back(
      {"GET", "/metrics/prometheus", auth::access::read_only, &prometheus});
}

} // namespace spool::api
