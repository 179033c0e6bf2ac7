#include "protocol/api/router.hpp"

#include <chrono>

#include "protocol/api/metrics.hpp"
#include "vocab/slot_ranges.hpp"

namespace spool::api {

namespace {

/// Writes an audit line for an admin operation once it is answered: who,
/// from where, what, and the status.
class audited : public http::exchange {
public:
  audited(std::shared_ptr<http::exchange> inner, const security& sec,
          auth::principal who, std::string from, std::string what) :
      inner_(std::move(inner)),
      sec_(sec),
      who_(std::move(who)),
      from_(std::move(from)),
      what_(std::move(what)) {
  }
  void respond(http::response r) override {
    auto status = std::to_string(r.status);
    sec_.write({who_.subject.empty() ? "-" : who_.subject,
                auth::to_string(who_.granted), from_, "http", what_, status});
    inner_->respond(std::move(r));
  }
  void on_abandon(std::function<void()> f) override {
    inner_->on_abandon(std::move(f));
  }

private:
  std::shared_ptr<http::exchange> inner_;
  const security& sec_;
  auth::principal who_;
  std::string from_;
  std::string what_;
};

/// Routes a draining node still serves (an operator watches it drain).
bool serves_while_draining(std::string_view path) {
  return path == "/health" || path == "/health/ready"
         || path == "/metrics/prometheus";
}

/// Records each answer's status and latency under its route.
class metered : public http::exchange {
public:
  metered(std::shared_ptr<http::exchange> inner, metrics& m,
          std::size_t route) :
      inner_(std::move(inner)),
      m_(m),
      route_(route),
      start_(std::chrono::steady_clock::now()) {
  }
  void respond(http::response r) override {
    m_.record(route_, r.status,
              std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - start_));
    inner_->respond(std::move(r));
  }
  void on_abandon(std::function<void()> f) override {
    inner_->on_abandon(std::move(f));
  }

private:
  std::shared_ptr<http::exchange> inner_;
  metrics& m_;
  std::size_t route_;
  std::chrono::steady_clock::time_point start_;
};

/// Adds `X-Spool-Warning` to the answer (and notes it for the access
/// log): the request is answered as it would be without it.
class warned : public http::exchange {
public:
  warned(std::shared_ptr<http::exchange> inner, std::string warning) :
      inner_(std::move(inner)), warning_(std::move(warning)) {
  }
  void respond(http::response r) override {
    r.headers.emplace_back("X-Spool-Warning", warning_);
    r.log_note = warning_;
    inner_->respond(std::move(r));
  }
  void on_abandon(std::function<void()> f) override {
    inner_->on_abandon(std::move(f));
  }

private:
  std::shared_ptr<http::exchange> inner_;
  std::string warning_;
};

/// Adds `X-Spool-Slots` to a listing's answer: the slots this cluster
/// node serves as it answers, which the listing covers. Past
/// `max_listed` characters (many slots, interleaved over the nodes) only
/// their count, so the header stays under what proxies accept.
class slotted : public http::exchange {
public:
  static constexpr std::size_t max_listed = 2048;

  slotted(std::shared_ptr<http::exchange> inner, scoped_gateway gw) :
      inner_(std::move(inner)), gw_(std::move(gw)) {
  }
  void respond(http::response r) override {
    if (auto served = gw_.served_slots(); served && r.status < 300) {
      auto n = served->size();
      auto ranges = show_slot_ranges(std::move(*served));
      if (ranges.size() > max_listed)
        ranges = std::to_string(n) + " slots";
      r.headers.emplace_back("X-Spool-Slots", std::move(ranges));
    }
    inner_->respond(std::move(r));
  }
  void on_abandon(std::function<void()> f) override {
    inner_->on_abandon(std::move(f));
  }

private:
  std::shared_ptr<http::exchange> inner_;
  scoped_gateway gw_;
};

} // namespace

std::vector<std::string> router::patterns() const {
  std::vector<std::string> out;
  for (auto& p : patterns_)
    out.push_back(p.label);
  return out;
}

std::vector<route> all_routes() {
  std::vector<route> table;
  add_push_pop_routes(table);
  add_ack_routes(table);
  add_replay_routes(table);
  add_queue_routes(table);
  add_message_routes(table);
  add_group_routes(table);
  add_dlq_routes(table);
  add_status_routes(table); // before ops: its 501s for the rest of /status
  add_cluster_routes(table);
  add_ops_routes(table);
  add_trace_routes(table);
  add_metrics_routes(table);
  return table;
}

router::router(service& svc) : svc_(svc), routes_(all_routes()) {
  for (auto& r : routes_)
    patterns_.push_back(http::compile(r.method, r.pattern));
}

http::header_list router::common_headers() {
  return {{"Access-Control-Allow-Origin", "*"},
          {"Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS"},
          {"Access-Control-Allow-Headers", "Content-Type, Authorization"},
          // A browser's script reads only the headers named here: Spool's
          // own (an empty pop's reason, a warning, a cluster's leader)
          // would be hidden.
          {"Access-Control-Expose-Headers",
           "X-Spool-Empty, X-Spool-Warning, X-Spool-Leader, X-Spool-Slots"},
          {"Access-Control-Max-Age", "86400"}};
}

std::optional<http::parse_error>
router::check_head(const http::request& head, std::string_view peer,
                   std::string_view client_subject) const {
  auto& sec = svc_.sec;
  if (!sec.enabled() || head.method == "OPTIONS"
      || sec.gate->is_public(head.path))
    return std::nullopt;
  auto w = authenticate(sec, auth::bearer_token(head.header("Authorization")),
                        client_subject, peer, "http",
                        concat(head.method, " ", head.path));
  if (w)
    return std::nullopt; // verified again when the request is handled
  return http::parse_error{wire_of(w.err().code).http_status, w.err().message};
}

void router::handle(http::request req, std::shared_ptr<http::exchange> ex) {
  if (req.method == "OPTIONS") { // CORS preflight, as Queen answers it
    http::response r;
    r.status = 204;
    return ex->respond(std::move(r));
  }
  if (svc_.state.load() == readiness::draining
      && !serves_while_draining(req.path))
    return reply_error(
        *ex, make_error(errc::unavailable, "Server busy: shutting down"));
  // HEAD of the operational routes is their GET (the server writes no body).
  std::string_view method = req.method;
  if (method == "HEAD" && serves_while_draining(req.path))
    method = "GET";
  // Tokens (docs/security.md) before the route is looked up: without one,
  // an unknown route reads as any other.
  std::optional<auth::principal> who;
  auto& sec = svc_.sec;
  bool guarded = sec.enabled() && !sec.gate->is_public(req.path);
  std::string what; // the audit log's name of the request
  if (guarded) {
    what = concat(req.method, " ", req.path);
    auto w = authenticate(sec, auth::bearer_token(req.header("Authorization")),
                          req.client_subject, req.peer, "http", what);
    if (!w)
      return reply_error(*ex, w.err());
    ex->authenticated();
    who = std::move(*w);
  }
  if (auto m = http::match(patterns_, method, req.path)) {
    if (svc_.stats)
      ex = std::make_shared<metered>(std::move(ex), *svc_.stats, m->index);
    if (guarded) {
      auto level = routes_[m->index].level;
      if (auto refused = authorize(sec, *who, level, req.peer, "http", what))
        return reply_error(*ex, *refused);
      if (level == auth::access::admin)
        ex = std::make_shared<audited>(std::move(ex), sec, *who, req.peer,
                                       what);
    }
    if (m->bad_escape)
      return reply_error(*ex, make_error(errc::invalid_argument,
                                         "Invalid path: bad percent-encoding"));
    std::string bad;
    auto query = http::query_params::parse(req.query, &bad);
    if (!query)
      return reply_error(
          *ex, make_error(errc::invalid_argument,
                          "Invalid query: bad percent-encoding in ", bad));
    if (auto& keys = routes_[m->index].keys)
      if (auto w = http::unknown_keys_warning(*query, *keys); !w.empty())
        ex = std::make_shared<warned>(std::move(ex), std::move(w));
    auto gw = svc_.scoped(who, req.peer, "http", what);
    if (routes_[m->index].lists)
      ex = std::make_shared<slotted>(std::move(ex), gw);
    call c{std::move(req), std::move(m->params), std::move(*query), ex,
           std::move(who), std::move(gw)};
    routes_[m->index].fn(svc_, c);
    return;
  }
  if (svc_.stats)
    ex = std::make_shared<metered>(std::move(ex), *svc_.stats,
                                   metrics::unmatched);
  reply_error(*ex, make_error(errc::unknown_op, "Unknown route: ", req.method,
                              " ", req.path));
}

} // namespace spool::api
