// The cluster's operator route (docs/api.md, "Cluster"): promote, an
// election for one slot or for every slot the node holds.

#include "protocol/api/router.hpp"
#include "protocol/api/shapes.hpp"
#include "protocol/json/write.hpp"

namespace spool::api {

namespace {

void promote(service&, call& c) {
  auto whole = c.gw.whole();
  if (!whole)
    return reply_error(*c.ex, whole.err());
  node::promote_request req;
  auto slot = query_int(c, "slot");
  if (!slot)
    return reply_error(*c.ex, slot.err());
  auto all = query_bool(c, "all");
  if (!all)
    return reply_error(*c.ex, all.err());
  req.slot = *slot;
  req.all = all->value_or(false);
  req.to = query_str(c, "to");
  (*whole)->promote(std::move(req),
                    answer<node::promote_reply>(c.ex, [](auto& r) {
                      json::writer w;
                      w.begin_object();
                      write_promote_fields(w, r);
                      w.end_object();
                      return std::pair{200, w.take()};
                    }));
}

} // namespace

void add_cluster_routes(std::vector<route>& t) {
  t.push_back(
      {"POST", "/api/v1/cluster/promote", auth::access::admin, &promote});
}

} // namespace spool::api
