// Message flow: callers `request(writer, write_atom, batch)`. The writer
// queues the batch with its response promise and, if no flush is on its way,
// sends itself `flush_atom`. Mailboxes are FIFO, so every batch already in
// the mailbox is queued before the flush runs: the flush commits them all in
// one LMDB transaction (one sync), then delivers each promise. Batches that
// arrive during the commit wait for the next flush.

#include "actors/writer/writer_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <deque>
#include <vector>

#include "storage/group_commit.hpp"

namespace spool::actors {

namespace {

struct writer_state {
  static inline const char* name = "spool.writer";
  struct pending_batch {
    storage::write_batch batch;
    caf::typed_response_promise<write_result> promise;
  };
  writer_config cfg;
  std::deque<pending_batch> pending;
  bool flush_scheduled = false;
};

using writer_ptr = writer_actor::stateful_pointer<writer_state>;

void flush(writer_ptr self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  while (!st.pending.empty()) {
    std::vector<writer_state::pending_batch> group;
    std::size_t bytes = 0;
    while (!st.pending.empty()) {
      auto size = st.pending.front().batch.byte_size();
      if (!group.empty() && bytes + size > st.cfg.max_group_bytes)
        break;
      bytes += size;
      group.push_back(std::move(st.pending.front()));
      st.pending.pop_front();
    }
    std::vector<const storage::write_batch*> batches;
    batches.reserve(group.size());
    for (auto& g : group)
      batches.push_back(&g.batch);
    auto results = storage::commit_group(*st.cfg.env, batches);
    for (std::size_t i = 0; i < group.size(); ++i) {
      write_result r;
      if (!results[i])
        r.failure = results[i].err();
      group[i].promise.deliver(std::move(r));
    }
  }
}

writer_actor::behavior_type writer(writer_ptr self, writer_config cfg) {
  self->state.cfg = cfg;
  // Stopped: batches that arrived before the stop are committed (synced)
  // and answered first; their flush message would come after it.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    flush(self);
    self->quit(std::move(msg.reason));
  });
  return {
      [self](write_atom, storage::write_batch& batch)
          -> caf::typed_response_promise<write_result> {
        auto& st = self->state;
        auto rp = self->make_response_promise<write_result>();
        st.pending.push_back({std::move(batch), rp});
        if (!st.flush_scheduled) {
          st.flush_scheduled = true;
          self->send(self, flush_atom::value);
        }
        return rp;
      },
      [self](flush_atom) { flush(self); },
  };
}

} // namespace

storage::expected<void> writer_config::validate() const {
  if (env == nullptr)
    return storage::make_error(storage::ec::invalid_argument,
                               "writer: no storage environment");
  if (max_group_bytes == 0)
    return storage::make_error(storage::ec::invalid_argument,
                               "writer: max_group_bytes must be positive");
  return {};
}

storage::expected<writer_actor> spawn_writer(caf::actor_system& sys,
                                             writer_config cfg, bool detached) {
  if (auto ok = cfg.validate(); !ok)
    return std::move(ok).err();
  if (detached)
    return sys.spawn<caf::detached>(writer, cfg);
  return sys.spawn(writer, cfg);
}

} // namespace spool::actors
