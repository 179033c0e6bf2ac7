// POST /api/v1/ack, /ack/batch, /lease/:leaseId/extend and /transaction
// (api.md): per-item outcomes stay 200 with `success` and `error`.

#include "protocol/api/encode.hpp"
#include "protocol/api/metrics.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/api/router.hpp"
#include "protocol/api/shapes.hpp"
#include "wire/rfc3339.hpp"

namespace spool::api {

namespace {

/// The answer of an ack list: one item per ack, in order.
void ack_list(service& svc, call& c, node::ack_request req) {
  if (req.items.empty()) // Queen never answers this; Spool answers []
    return reply_json(*c.ex, 200, "[]");
  auto txids = ack_txids(req);
  c.gw.ack(std::move(req), answer<node::ack_reply>(
                               c.ex, [txids = std::move(txids),
                                      m = svc.stats](const node::ack_reply& r) {
                                 count_ack(m, r);
                                 json::writer w;
                                 write_ack_items(w, r, txids);
                                 return std::pair{200, w.take()};
                               }));
}

void ack(service& svc, call& c) {
  auto req = read_ack_body(c.req.body);
  if (!req)
    return reply_error(*c.ex, req.err());
  ack_list(svc, c, std::move(*req));
}

void ack_batch(service& svc, call& c) {
  auto req = read_ack_batch_body(c.req.body);
  if (!req)
    return reply_error(*c.ex, req.err());
  ack_list(svc, c, std::move(*req));
}

void extend(service&, call& c) {
  auto by = read_extend_body(c.req.body);
  if (!by)
    return reply_error(*c.ex, by.err());
  node::extend_request req{c.params.at(0), *by};
  c.gw.extend(std::move(req),
              answer<node::extend_reply>(
                  c.ex, [id = c.params.at(0)](const node::extend_reply& r) {
                    json::writer w;
                    write_extend_items(w, id, r);
                    return std::pair{200, w.take()};
                  }));
}

void transaction(service&, call& c) {
  auto req = read_txn_body(c.req.body);
  if (!req)
    return reply_error(*c.ex, req.err());
  stamp_producer(c.who, *req);
  auto ops = txn_echo(*req);
  c.gw.transaction(std::move(*req),
                   answer<node::txn_reply>(
                       c.ex, [ops = std::move(ops)](const node::txn_reply& r) {
                         json::writer w;
                         w.begin_object();
                         write_txn_fields(w, r, ops);
                         w.end_object();
                         return std::pair{200, w.take()};
                       }));
}

} // namespace

void add_ack_routes(std::vector<route>& t) {
  t.push_back({"POST", "/api/v1/ack", auth::access::read_write, &ack});
  t.push_back(
      {"POST", "/api/v1/ack/batch", auth::access::read_write, &ack_batch});
  t.push_back({"POST", "/api/v1/lease/:leaseId/extend",
               auth::access::read_write, &extend});
  t.push_back(
      {"POST", "/api/v1/transaction", auth::access::read_write, &transaction});
}

} // namespace spool::api
