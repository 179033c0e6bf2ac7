// Message traces (Queen's traces, docs/traces.md): attaching one to a
// message, through the message's queue (to find it) and the writer; reading
// those of one message here (bounded, one prefix), and those by name and the
// names on a detached reader beside the broker (they may scan a million
// index entries), at most `max_trace_readers` at once.

#include "actors/broker/broker_state.hpp"
#include "core/broker/trace_reads.hpp"
#include "core/limits/traces.hpp"
#include "storage/traces.hpp"

#include <caf/event_based_actor.hpp>

#include <exception>

namespace spool::actors::broker_detail {

namespace {

/// Reads by name running at once (each on a thread of its own).
constexpr std::size_t max_trace_readers = 2;

/// The live queues (their id and name), as the reader reads them.
std::vector<core::live_queue> live_queues(broker_ptr self) {
  auto& st = self->state;
  std::vector<core::live_queue> out;
  for (auto& [name, actor] : st.queues)
    if (auto rec = st.records.find(name); rec != st.records.end())
      out.push_back({rec->second.id, name});
  return out;
}

/// Runs `read(txn)` (answering `Reply`) on a detached actor and answers the
/// current request with its answer; refused while `max_trace_readers` run.
template <class Reply, class Read>
caf::result<Reply> read_aside(broker_ptr self, Read read) {
  auto& st = self->state;
  if (st.trace_readers >= max_trace_readers)
    return failed<Reply>(make_error(errc::unavailable, "trace reads are busy (",
                                    max_trace_readers, " running); retry"));
  auto rp = promise_for<Reply>(self);
  ++st.trace_readers;
  auto reader = self->system().spawn<caf::detached>(
      [store = st.cfg.node.store, read = std::move(read)](
          caf::event_based_actor* me, int) -> caf::behavior {
        return {[me, store, read](trace_atom) {
          me->quit();
          Reply r;
          try { // CAF 0.17 answers no request whose handler threw
            auto t = store.read();
            if (!t)
              r.failure = t.err();
            else if (auto e = read(*t, r); !e)
              r.failure = e.err();
          } catch (const std::exception& e) {
            r = Reply{};
            r.failure = make_error(errc::internal, "trace read: ", e.what());
          }
          return r;
        }};
      },
      0); // the int: see gateway/impl.hpp (CAF 0.17's argument-less spawn)
  self->request(reader, caf::infinite, trace_atom::value)
      .then(
          [self, rp](Reply& r) mutable {
            --self->state.trace_readers;
            rp.deliver(std::move(r));
          },
          [self, rp](caf::error& err) mutable {
            --self->state.trace_readers;
            Reply r;
            r.failure = unreachable(err, "trace reader");
            rp.deliver(std::move(r));
          });
  return rp.later();
}

} // namespace

caf::result<trace_put_reply> on_trace_put(broker_ptr self,
                                          trace_put_request& req) {
  auto& node = self->state.cfg.node;
  if (auto ok = core::check_trace(req.rec); !ok)
    return failed<trace_put_reply>(ok.err());
  auto rp = promise_for<trace_put_reply>(self);
  req.rec.id = node.store.make_uuid();
  req.rec.created_at = node.wall();
  req.rec.transaction_id = req.transaction_id;
  // The term it was asked in: a trace found in one term is not written in
  // another.
  auto s = slot_of_uuid(req.partition_uuid);
  auto term = s ? slot_term(self, *s) : no_term;
  find_then(self, {req.partition_uuid, req.transaction_id},
            [self, rp, term, rec = std::move(req.rec)](find_reply r) mutable {
              if (r.failure)
                return rp.deliver(trace_put_reply{{}, std::move(r.failure)});
              if (!r.frame)
                return rp.deliver(trace_put_reply{
                    {}, make_error(errc::not_found, "Message not found")});
              auto id = rec.id;
              storage::write_batch b;
              b.mutations.emplace_back(storage::mut::put_trace{
                  r.queue_id, r.partition_id, r.frame->off, std::move(rec)});
              write_then(
                  self, self->state.cfg.node.writer, term, std::move(b),
                  [rp, id](std::optional<api_error> failure) mutable {
                    // Deleted since it was found (retention, a purge,
                    // its queue's deletion): as if never found.
                    if (failure && failure->code == errc::not_found)
                      failure
                          = make_error(errc::not_found, "Message not found");
                    rp.deliver(trace_put_reply{failure ? std::string{} : id,
                                               std::move(failure)});
                  });
            });
  return rp.later();
}

caf::result<trace_list_reply> on_trace_list(broker_ptr self,
                                            const find_request& req) {
  auto rp = promise_for<trace_list_reply>(self);
  find_then(self, req, [self, rp](find_reply r) mutable {
    trace_list_reply out;
    if (r.failure && r.failure->code != errc::not_found)
      out.failure = std::move(r.failure);
    if (!r.frame) // unknown: no traces (as Queen)
      return rp.deliver(std::move(out));
    auto t = self->state.cfg.node.store.read();
    if (!t) {
      out.failure = t.err();
      return rp.deliver(std::move(out));
    }
    auto list = storage::traces::of_message(*t, r.queue_id, r.partition_id,
                                            r.frame->off,
                                            storage::traces::max_per_message);
    if (!list)
      out.failure = list.err();
    else
      out.traces = std::move(*list);
    rp.deliver(std::move(out));
  });
  return rp.later();
}

caf::result<trace_named_reply> on_trace_named(broker_ptr self,
                                              const trace_named_request& req) {
  return read_aside<trace_named_reply>(
      self,
      [queues = live_queues(self),
       req](storage::txn& t, trace_named_reply& r) -> expected<void> {
        auto hits
            = core::traces_named(t, queues, req.name, req.limit, req.skip);
        if (!hits)
          return hits.err();
        r.hits = std::move(hits->hits);
        r.total = hits->total;
        return {};
      });
}

caf::result<trace_names_reply> on_trace_names(broker_ptr self,
                                              const trace_names_request& req) {
  return read_aside<trace_names_reply>(
      self,
      [queues = live_queues(self),
       req](storage::txn& t, trace_names_reply& r) -> expected<void> {
        auto page = core::trace_names(t, queues, req.limit, req.skip);
        if (!page)
          return page.err();
        r.names = std::move(page->names);
        r.total = page->total;
        return {};
      });
}

} // namespace spool::actors::broker_detail
