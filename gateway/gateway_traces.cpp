// The gateway's calls for message traces (docs/traces.md).

#include "gateway/impl.hpp"

namespace spool {

using namespace gateway_detail;

namespace {

node::trace from_record(storage::trace_record& r,
                        const std::string& partition_id) {
  node::trace t;
  t.id = std::move(r.id);
  t.transaction_id = std::move(r.transaction_id);
  t.partition_id = partition_id;
  t.event_type = std::move(r.event_type);
  t.data = std::move(r.data);
  t.consumer_group = std::move(r.consumer_group);
  t.worker_id = std::move(r.worker_id);
  t.created_at = r.created_at;
  t.names = std::move(r.names);
  return t;
}

} // namespace

void gateway::add_trace(node::trace_request req, done<std::string> k) {
  actors::trace_put_request p;
  p.partition_uuid = std::move(req.partition_id);
  p.transaction_id = std::move(req.transaction_id);
  p.rec.data = std::move(req.data);
  p.rec.event_type = std::move(req.event_type);
  p.rec.consumer_group = std::move(req.consumer_group);
  p.rec.worker_id = std::move(req.worker_id);
  p.rec.names = std::move(req.names);
  impl_->ask<actors::trace_put_reply>(
      std::move(k),
      [](actors::trace_put_reply& r, const clocks&) {
        return or_failure(
            r, [](actors::trace_put_reply& r) { return std::move(r.id); });
      },
      actors::trace_atom::value, std::move(p));
}

void gateway::traces(node::find_request req, done<std::vector<node::trace>> k) {
  auto uuid = req.partition_id; // copied before the request takes it
  impl_->ask<actors::trace_list_reply>(
      std::move(k),
      [uuid](actors::trace_list_reply& r, const clocks&) {
        return or_failure(r, [&](actors::trace_list_reply& r) {
          std::vector<node::trace> out;
          for (auto& t : r.traces)
            out.push_back(from_record(t, uuid));
          return out;
        });
      },
      actors::trace_atom::value,
      actors::find_request{std::move(req.partition_id),
                           std::move(req.transaction_id)});
}

void gateway::traces_named(node::trace_name_query q, done<node::trace_page> k) {
  impl_->ask<actors::trace_named_reply>(
      std::move(k),
      [keys
       = impl_->encryption_keys](actors::trace_named_reply& r,
                                 const clocks&) -> expected<node::trace_page> {
        if (r.failure)
          return *r.failure;
        node::trace_page out;
        out.total = r.total;
        for (auto& h : r.hits) {
          node::named_trace n;
          n.t = from_record(h.rec, h.partition_uuid);
          n.queue = h.queue;
          n.partition = h.partition;
          if (h.message) {
            auto m = from_stored(*h.message, keys.get(), h.queue, h.partition,
                                 h.partition_uuid, unreadable_is::listed);
            if (!m)
              return m.err();
            n.msg = std::move(*m);
          }
          out.traces.push_back(std::move(n));
        }
        return out;
      },
      actors::trace_atom::value,
      actors::trace_named_request{std::move(q.name), q.limit, q.offset});
}

void gateway::trace_names(node::trace_names_query q,
                          done<node::trace_names_page> k) {
  impl_->ask<actors::trace_names_reply>(
      std::move(k),
      [](actors::trace_names_reply& r, const clocks&) {
        return or_failure(r, [](actors::trace_names_reply& r) {
          node::trace_names_page out;
          out.total = r.total;
          for (auto& n : r.names)
            out.names.push_back(
                {std::move(n.name), n.traces, n.messages, n.last_seen});
          return out;
        });
      },
      actors::trace_atom::value,
      actors::trace_names_request{q.limit, q.offset});
}

} // namespace spool
