// The msgpack ops (protocol/api/mp_ops.hpp).

#include "protocol/api/mp_ops.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>

#include "protocol/api/encode.hpp"
#include "protocol/api/metrics.hpp"
#include "protocol/api/mp_requests.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/api/shapes.hpp"
#include "vocab/slot_ranges.hpp"
#include "wire/writer.hpp"

namespace spool::mp {

namespace {

using exchange_ptr = std::shared_ptr<exchange>;

/// One request being answered.
struct ctx {
  api::service& svc;
  const door_info& info;
  const object& req;
  std::uint64_t id;
  exchange_ptr ex;
  session& sess;
  /// The node as the connection's token sees it.
  api::scoped_gateway gw;

  void fail(const api_error& e) const {
    ex->respond(error_frame(id, e));
  }
  /// `{id, ok: true, …fill(w)}`.
  template <class Fill>
  void ok(Fill fill) const {
    ex->respond(ok_frame(id, fill));
  }
  template <class Fill>
  static std::string ok_frame(std::uint64_t id, Fill& fill,
                              std::size_t size_hint = 0) {
    writer w;
    w.reserve(size_hint);
    w.begin_object();
    w.kv("id", id);
    w.kv("ok", true);
    fill(w);
    w.end_object();
    if (w.size() > 0xffffffffu) // a frame's length has 32 bits
      return error_frame(id, make_error(errc::too_large,
                                        "The answer exceeds 4 GiB: ask for "
                                        "less (limit, maxBytes)"));
    return w.take_frame();
  }
  /// A gateway completion answering `fill(w, reply)`, or the error.
  template <class T, class Fill>
  gateway::done<T> answer(Fill fill) const {
    return [ex = ex, id = id, fill = std::move(fill)](expected<T> r) {
      if (!r)
        return ex->respond(error_frame(id, r.err()));
      auto body = [&](writer& w) { fill(w, *r); };
      ex->respond(ok_frame(id, body));
    };
  }
};

/// An op's request read, or its error answered: `SPOOL_READ(x, reader)`.
#define SPOOL_READ(var, expr)                                                  \
  auto var = (expr);                                                           \
  if (!var)                                                                    \
    return c.fail(var.err());

void hello(const ctx& c) {
  SPOOL_READ(h, read_hello(c.req));
  if (h->version != protocol_version)
    return c.fail(make_error(errc::invalid_argument, "protocol version ",
                             h->version,
                             " is not supported (this server "
                             "speaks ",
                             protocol_version, ")"));
  if (auto& sec = c.svc.sec; sec.enabled()) {
    // A new hello replaces who the connection is; a refused one ends it
    // (docs/security.md).
    c.sess.who.reset();
    c.sess.token.clear();
    c.sess.key_generation = sec.gate->generation();
    auto who
        = api::authenticate(sec, h->token.value_or(""), c.sess.cert_subject,
                            c.sess.peer, "msgpack", "op hello");
    if (!who) {
      c.sess.close_after_answer = true;
      return c.fail(who.err());
    }
    c.sess.who = std::move(*who);
    c.sess.token = h->token.value_or("");
  }
  c.sess.greeted = true;
  c.sess.version = h->version;
  c.ok([&](writer& w) {
    w.kv("protocol", protocol_version);
    w.kv("server", "spool");
    w.key("ops").begin_array();
    for (auto op : op_names())
      w.str(op);
    w.end_array();
    w.key("features").begin_array();
    for (auto f : {"pipelining", "long_poll", "binary_payloads", "transactions",
                   "seek", "dlq", "cumulative_ack", "compact_pop"})
      w.str(f);
    w.end_array();
    w.kv("maxFrameBytes", c.info.max_frame_bytes);
    w.kv("maxInFlight", c.info.max_in_flight);
  });
}

void health(const ctx& c) {
  c.ok([&](writer& w) {
    w.kv("status", "healthy");
    w.kv("server", "spool");
    w.kv("state", api::to_string(c.svc.state.load()));
  });
}

void push(const ctx& c) {
  SPOOL_READ(items, api::read_push_body(c.req));
  api::stamp_producer(c.sess.who, *items);
  if (items->empty())
    return c.ok([](writer& w) { w.key("items").begin_array().end_array(); });
  c.gw.push(node::push_request{std::move(*items)},
            c.answer<node::push_reply>(
                [m = c.svc.stats](writer& w, const node::push_reply& r) {
                  api::count_push(m, r);
                  w.key("items");
                  api::write_push_items(w, r);
                }));
}

void pop(const ctx& c) {
  SPOOL_READ(req, read_pop(c.req));
  SPOOL_READ(compact, read_compact(c.req));
  auto gw = c.gw;
  auto token = gw.new_token();
  req->token = token;
  gw.pop(std::move(*req), [gw, ex = c.ex, id = c.id, compact = *compact,
                           stats = c.svc.stats](expected<node::pop_reply> r) {
    if (!r)
      return ex->respond(error_frame(id, r.err()));
    api::count_pop(stats, *r);
    auto body = [&](writer& w) {
      if (r->messages.empty()) {
        w.key("messages").begin_array().end_array();
        w.kv("empty", to_string(r->reason));
      } else if (compact) {
        api::write_pop_compact(w, *r);
      } else {
        api::write_pop_fields(w, *r);
      }
    };
    // About 250 bytes of names, numbers, the id and createdAt per message
    // beside its strings (compact: about 60). Reserved room never written
    // costs no memory, so the guess errs high.
    auto frame = ctx::ok_frame(
        id, body, api::pop_answer_hint(*r, false, compact ? 96 : 384));
    auto lease
        = r->messages.empty() ? std::string{} : r->messages.front().lease_id;
    std::function<void()> release;
    if (!lease.empty()) // the client left before reading it: release now
      release = [gw, lease] { gw.release(lease, [](expected<bool>) {}); };
    ex->respond(std::move(frame), std::move(release));
  });
  // A client that leaves while the pop is parked cancels it.
  c.ex->on_abandon([gw, token] { gw.cancel(token); });
}

void ack(const ctx& c) {
  SPOOL_READ(req, api::read_ack_batch_body(c.req));
  if (req->items.empty())
    return c.ok([](writer& w) { w.key("items").begin_array().end_array(); });
  auto txids = api::ack_txids(*req);
  c.gw.ack(std::move(*req), c.answer<node::ack_reply>(
                                [txids = std::move(txids), m = c.svc.stats](
                                    writer& w, const node::ack_reply& r) {
                                  api::count_ack(m, r);
                                  w.key("items");
                                  api::write_ack_items(w, r, txids);
                                }));
}

void extend(const ctx& c) {
  SPOOL_READ(req, read_extend(c.req));
  auto lease = req->lease_id;
  c.gw.extend(std::move(*req),
              c.answer<node::extend_reply>(
                  [lease](writer& w, const node::extend_reply& r) {
                    w.key("items");
                    api::write_extend_items(w, lease, r);
                  }));
}

void seek(const ctx& c) {
  SPOOL_READ(req, read_seek(c.req));
  auto echo = *req;
  c.gw.seek(std::move(*req), c.answer<node::seek_reply>(
                                 [echo = std::move(echo), m = c.svc.stats](
                                     writer& w, const node::seek_reply& r) {
                                   api::count_seek(m, echo.dry_run);
                                   api::write_seek_fields(w, echo, r);
                                 }));
}

void subscription(const ctx& c) {
  SPOOL_READ(req, read_subscription(c.req));
  auto echo = *req;
  c.gw.update_subscription(
      std::move(*req),
      c.answer<node::subscription_reply>(
          [echo](writer& w, const node::subscription_reply& r) {
            api::write_subscription_fields(w, echo, r);
          }));
}

void configure(const ctx& c) {
  SPOOL_READ(body, api::read_configure_body(c.req));
  c.gw.configure(std::move(body->req),
                 c.answer<node::configure_reply>(
                     [unknown = std::move(body->unknown_options)](
                         writer& w, const node::configure_reply& r) {
                       api::write_configure_fields(w, r, unknown);
                     }));
}

void transaction(const ctx& c) {
  SPOOL_READ(req, api::read_txn_body(c.req));
  api::stamp_producer(c.sess.who, *req);
  auto ops = api::txn_echo(*req);
  c.gw.transaction(
      std::move(*req), [ex = c.ex, id = c.id,
                        ops = std::move(ops)](expected<node::txn_reply> r) {
        // api.md: a rolled-back transaction is msgpack's `tx_aborted`.
        if (r && !r->success)
          return ex->respond(
              error_frame(id, make_error(errc::tx_aborted, r->error)));
        if (!r)
          return ex->respond(error_frame(id, r.err()));
        auto body = [&](writer& w) { api::write_txn_fields(w, *r, ops); };
        ex->respond(ctx::ok_frame(id, body));
      });
}

/// A cluster node's listing says which slots it covered, as HTTP's
/// `X-Spool-Slots` does: `slots`, the same ranges.
void write_served(writer& w, const api::scoped_gateway& gw) {
  if (auto served = gw.served_slots())
    w.kv("slots", show_slot_ranges(std::move(*served)));
}

void queues(const ctx& c) {
  SPOOL_READ(name, read_queue_name(c.req, false));
  c.gw.queues(
      std::move(*name),
      c.answer<std::vector<node::queue_info>>(
          [gw = c.gw](writer& w, const std::vector<node::queue_info>& qs) {
            write_served(w, gw);
            w.key("queues").begin_array();
            for (auto& q : qs) {
              w.begin_object();
              api::write_queue_detail_fields(w, q);
              w.end_object();
            }
            w.end_array();
          }));
}

void delete_queue(const ctx& c) {
  SPOOL_READ(name, read_queue_name(c.req, true));
  c.gw.delete_queue(**name,
                    c.answer<bool>([name = **name](writer& w, bool existed) {
                      api::write_delete_queue_fields(w, name, existed);
                    }));
}

void purge(const ctx& c) {
  SPOOL_READ(req, read_purge(c.req));
  auto name = req->queue;
  c.gw.purge(std::move(*req),
             c.answer<std::size_t>([name](writer& w, std::size_t n) {
               api::write_purge_fields(w, name, n);
             }));
}

void browse(const ctx& c) {
  SPOOL_READ(req, read_browse(c.req));
  c.gw.browse(std::move(*req), c.answer<node::browse_reply>(
                                   [](writer& w, const node::browse_reply& r) {
                                     api::write_browse_fields(w, r);
                                   }));
}

void groups(const ctx& c) {
  SPOOL_READ(req, read_groups(c.req));
  c.gw.groups(
      std::move(*req),
      c.answer<std::vector<node::cursor_view>>(
          [gw = c.gw](writer& w, const std::vector<node::cursor_view>& cs) {
            write_served(w, gw);
            auto now = system_wall_now();
            w.key("groups").begin_array();
            for (auto& v : cs) {
              w.begin_object();
              w.kv("consumerGroup", v.group);
              w.kv("queue", v.queue);
              api::write_cursor_fields(w, v, now);
              w.kv("doneAbove", v.done_above);
              w.kv("inFlight", v.in_flight);
              w.end_object();
            }
            w.end_array();
          }));
}

void delete_group(const ctx& c) {
  SPOOL_READ(req, read_delete_group(c.req));
  auto echo = *req;
  c.gw.delete_group(std::move(*req),
                    c.answer<node::delete_group_reply>(
                        [echo = std::move(echo)](
                            writer& w, const node::delete_group_reply& r) {
                          api::write_delete_group_fields(w, echo, r);
                        }));
}

void dlq(const ctx& c) {
  SPOOL_READ(q, read_dlq_query(c.req));
  auto echo = *q;
  c.gw.dlq_list(std::move(*q), c.answer<node::dlq_page>(
                                   [echo = std::move(echo), gw = c.gw](
                                       writer& w, const node::dlq_page& p) {
                                     write_served(w, gw);
                                     api::write_dlq_page_fields(w, p, echo);
                                   }));
}

void dlq_requeue(const ctx& c) {
  SPOOL_READ(f, api::read_dlq_filter_body(c.req));
  c.gw.dlq_requeue(
      std::move(*f),
      c.answer<node::dlq_count>([](writer& w, const node::dlq_count& n) {
        api::write_dlq_count_fields(w, "requeued", n);
      }));
}

void dlq_delete(const ctx& c) {
  SPOOL_READ(f, read_dlq_delete(c.req));
  c.gw.dlq_delete(
      std::move(*f),
      c.answer<node::dlq_count>([](writer& w, const node::dlq_count& n) {
        api::write_dlq_count_fields(w, "deleted", n);
      }));
}
void promote(const ctx& c) {
  SPOOL_READ(req, read_promote(c.req));
  auto whole = c.gw.whole();
  if (!whole)
    return c.fail(whole.err());
  (*whole)->promote(std::move(*req),
                    c.answer<node::promote_reply>(
                        [](writer& w, const node::promote_reply& r) {
                          api::write_promote_fields(w, r);
                        }));
}

#undef SPOOL_READ

using op_fn = void (*)(const ctx&);

struct op_entry {
  std::string_view name;
  /// The role it needs when tokens are on (docs/security.md, "Roles").
  auth::access level;
  op_fn fn;
};

using auth::access;

constexpr op_entry ops[] = {
    {"hello", access::open, &hello},
    {"health", access::open, &health},
    {"push", access::read_write, &push},
    {"pop", access::read_write, &pop},
    {"ack", access::read_write, &ack},
    {"extend", access::read_write, &extend},
    {"seek", access::read_write, &seek},
    {"subscription", access::read_write, &subscription},
    {"configure", access::admin, &configure},
    {"transaction", access::read_write, &transaction},
    {"queues", access::read_only, &queues},
    {"delete_queue", access::admin, &delete_queue},
    {"purge", access::admin, &purge},
    {"groups", access::read_only, &groups},
    {"delete_group", access::admin, &delete_group},
    {"dlq", access::read_only, &dlq},
    {"dlq_requeue", access::read_write, &dlq_requeue},
    {"dlq_delete", access::admin, &dlq_delete},
    {"browse", access::read_only, &browse},
    {"promote", access::admin, &promote},
};

} // namespace

std::optional<auth::access> op_level(std::string_view op) {
  for (auto& o : ops)
    if (o.name == op)
      return o.level;
  return std::nullopt;
}

const std::vector<std::string_view>& op_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> n;
    for (auto& o : ops)
      n.push_back(o.name);
    return n;
  }();
  return names;
}

namespace {

/// Records each answer's latency and outcome under its op.
class metered : public exchange {
public:
  metered(exchange_ptr inner, api::metrics& m, std::size_t op) :
      inner_(std::move(inner)),
      m_(m),
      op_(op),
      start_(std::chrono::steady_clock::now()) {
  }
  void respond(std::string frame, std::function<void()> on_unwritten) override {
    if (!recorded_.exchange(true)) // the first answer counts (exchange)
      m_.record_op(op_, !answer_ok(frame),
                   std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::steady_clock::now() - start_));
    inner_->respond(std::move(frame), std::move(on_unwritten));
  }
  void on_abandon(std::function<void()> f) override {
    inner_->on_abandon(std::move(f));
  }

private:
  exchange_ptr inner_;
  api::metrics& m_;
  std::size_t op_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> recorded_{false};
};

/// Writes an audit line for an admin op once it is answered.
class audited : public exchange {
public:
  audited(exchange_ptr inner, const api::security& sec, auth::principal who,
          std::string from, std::string what) :
      inner_(std::move(inner)),
      sec_(sec),
      who_(std::move(who)),
      from_(std::move(from)),
      what_(std::move(what)) {
  }
  void respond(std::string frame, std::function<void()> on_unwritten) override {
    sec_.write({who_.subject.empty() ? "-" : who_.subject,
                auth::to_string(who_.granted), from_, "msgpack", what_,
                answer_ok(frame) ? "ok" : "error"});
    inner_->respond(std::move(frame), std::move(on_unwritten));
  }
  void on_abandon(std::function<void()> f) override {
    inner_->on_abandon(std::move(f));
  }

private:
  exchange_ptr inner_;
  const api::security& sec_;
  auth::principal who_;
  std::string from_;
  std::string what_;
};

/// Tokens on: the connection's token still holds (each op is checked
/// against its expiry as it arrives) and its role may use the op; else
/// the error. An admin op is audited once answered (`ex` wrapped).
std::optional<api_error> admit(const api::security& sec, session& sess,
                               const op_entry& op, exchange_ptr& ex) {
  auto what = concat("op ", op.name);
  if (sess.who && sess.key_generation != sec.gate->generation()) {
    // The keys were reloaded: the token must still verify under them.
    sess.key_generation = sec.gate->generation();
    auto again = api::authenticate(sec, sess.token, sess.cert_subject,
                                   sess.peer, "msgpack", what);
    if (!again) {
      sess.who.reset();
      return again.err();
    }
    sess.who = std::move(*again);
  }
  if (!sess.who || !sess.who->holds_at(sec.seconds(), 0)) {
    bool expired = sess.who.has_value();
    sec.write({sess.who && !sess.who->subject.empty() ? sess.who->subject : "-",
               sess.who ? auth::to_string(sess.who->granted) : "-", sess.peer,
               "msgpack", what,
               expired ? "401 expired: send hello with a fresh token"
                       : "401 no token"});
    return make_error(errc::unauthenticated, expired
                                                 ? "Token has expired"
                                                 : "Authentication required");
  }
  if (auto refused
      = api::authorize(sec, *sess.who, op.level, sess.peer, "msgpack", what))
    return refused;
  if (op.level == auth::access::admin)
    ex = std::make_shared<audited>(std::move(ex), sec, *sess.who, sess.peer,
                                   std::move(what));
  return std::nullopt;
}

} // namespace

handler make_handler(api::service& svc, door_info info) {
  return [&svc, info](request_frame& f, std::shared_ptr<exchange> ex,
                      session& sess) {
    auto it = std::find_if(std::begin(ops), std::end(ops),
                           [&](const op_entry& o) { return o.name == f.op; });
    if (svc.stats != nullptr)
      ex = std::make_shared<metered>(
          std::move(ex), *svc.stats,
          it == std::end(ops) ? api::metrics::unmatched
                              : static_cast<std::size_t>(it - std::begin(ops)));
    if (it == std::end(ops))
      return ex->respond(error_frame(
          f.id, make_error(errc::unknown_op, "Unknown op: ", f.op)));
    if (!sess.greeted && it->fn != &hello)
      return ex->respond(
          error_frame(f.id, make_error(errc::bad_request,
                                       "hello must be the first request")));
    // A draining node answers health (an operator watches it drain).
    if (svc.state.load() == api::readiness::draining && it->fn != &health
        && it->fn != &hello)
      return ex->respond(error_frame(
          f.id, make_error(errc::unavailable, "Server busy: shutting down")));
    if (auto& sec = svc.sec; sec.enabled() && it->level != auth::access::open) {
      if (auto refused = admit(sec, sess, *it, ex))
        return ex->respond(error_frame(f.id, *refused));
    }
    // The audit log's name of the op, made only for a restricted token.
    bool restricted = sess.who && !sess.who->unrestricted();
    auto gw = svc.scoped(sess.who, sess.peer, "msgpack",
                         restricted ? concat("op ", it->name) : std::string{});
    it->fn(ctx{svc, info, *f.root, f.id, std::move(ex), sess, std::move(gw)});
  };
}

} // namespace spool::mp
