// POST /api/v1/push and the three pops (api.md): the body or query read
// into the node API's request, the gateway's answer written in Queen's
// shape. A pop's token is cancelled when its client leaves, and a lease
// whose answer could not be written is released.

#include "protocol/api/encode.hpp"
#include "protocol/api/metrics.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/api/router.hpp"
#include "protocol/api/shapes.hpp"

namespace spool::api {

namespace {

void push(service& svc, call& c) {
  auto items = read_push_body(c.req.body);
  if (!items)
    return reply_error(*c.ex, items.err());
  if (items->empty()) // Queen: 201 [] without touching the store
    return reply_json(*c.ex, 201, "[]");
  stamp_producer(c.who, *items);
  node::push_request req{std::move(*items)};
  c.gw.push(std::move(req),
            answer<node::push_reply>(
                c.ex, [m = svc.stats](const node::push_reply& r) {
                  count_push(m, r);
                  json::writer w;
                  write_push_items(w, r);
                  return std::pair{201, w.take()};
                }));
}

void pop(service& svc, call& c, node::pop_request req) {
  auto gw = c.gw;
  auto token = gw.new_token();
  req.token = token;
  auto ex = c.ex;
  gw.pop(std::move(req), [gw, ex, m = svc.stats](expected<node::pop_reply> r) {
    if (!r)
      return reply_error(*ex, r.err());
    count_pop(m, *r);
    if (r->messages.empty()) {
      http::response resp;
      resp.status = 204;
      resp.headers.emplace_back("X-Spool-Empty", to_string(r->reason));
      return ex->respond(std::move(resp));
    }
    http::response resp;
    resp.status = 200;
    resp.headers.emplace_back("Content-Type", "application/json");
    json::writer w;
    // About 330 bytes of names, numbers, quotes, the id and createdAt per
    // message beside its strings. Reserved room never written costs no
    // memory, so the guess errs high.
    w.reserve(api::pop_answer_hint(*r, true, 512));
    w.begin_object();
    write_pop_fields(w, *r);
    w.end_object();
    resp.body = w.take();
    auto lease = r->messages.front().lease_id;
    if (!lease.empty()) // the client left before reading it: release now
      resp.on_unwritten
          = [gw, lease]() mutable { gw.release(lease, [](expected<bool>) {}); };
    ex->respond(std::move(resp));
  });
  // A client that leaves while the pop is parked cancels it (nothing is
  // leased for it); after the answer this does nothing.
  c.ex->on_abandon([gw, token]() mutable { gw.cancel(token); });
}

void pop_queue(service& svc, call& c) {
  auto req = read_pop_query(c, true);
  if (!req)
    return reply_error(*c.ex, req.err());
  req->queue = c.params.at(0);
  pop(svc, c, std::move(*req));
}

void pop_partition(service& svc, call& c) {
  auto req = read_pop_query(c, false);
  if (!req)
    return reply_error(*c.ex, req.err());
  req->queue = c.params.at(0);
  req->partition = c.params.at(1);
  pop(svc, c, std::move(*req));
}

void pop_namespace(service& svc, call& c) {
  auto req = read_pop_query(c, true);
  if (!req)
    return reply_error(*c.ex, req.err());
  req->name_space = query_str(c, "namespace");
  req->task = query_str(c, "task");
  if (!req->name_space)
    return reply_error(
        *c.ex, make_error(errc::invalid_argument, "namespace is required"));
  pop(svc, c, std::move(*req));
}

} // namespace

void add_push_pop_routes(std::vector<route>& t) {
  // A push reads no query key; a queue's pops read all but the last two.
  std::span<const std::string_view> all{pop_query_keys};
  auto queue_pop = all.first(all.size() - 2);
  t.push_back({"POST", "/api/v1/push", auth::access::read_write, &push,
               std::span<const std::string_view>{}});
  t.push_back({"GET", "/api/v1/pop/queue/:queue", auth::access::read_write,
               &pop_queue, queue_pop});
  t.push_back({"GET", "/api/v1/pop/queue/:queue/partition/:partition",
               auth::access::read_write, &pop_partition, queue_pop});
  t.push_back(
      {"GET", "/api/v1/pop", auth::access::read_write, &pop_namespace, all});
}

} // namespace spool::api
