// Message flow: a push seals the frames with the partition log (dedup,
// offsets, one created_at), sends the batch to the writer and answers when it
// is durable; only then do the frames become readable (`log.record()`
// advances over settled seals in seal order). Pops, acks and extends go to
// the group's cursor child, spawned on first contact, with the partition's
// view (watermark, readable end, newest stamp).

#include "actors/partition/partition_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <memory>
#include <unordered_map>

#include "actors/cursor/cursor_actor.hpp"

namespace spool::actors {

namespace {

struct partition_state {
  static inline const char* name = "spool.partition";
  partition_config cfg;
  std::unique_ptr<storage::partition_log> log;
  std::unique_ptr<storage::segment_encoder> enc;
  std::unordered_map<std::string, cursor_actor> cursors;
};

using partition_ptr = partition_actor::stateful_pointer<partition_state>;

partition_view view_of(const storage::partition_log& log) {
  auto& rec = log.record();
  return {rec.watermark, rec.next_offset, rec.last_created_at};
}

/// The group's cursor, spawned on first contact.
storage::expected<cursor_actor> cursor_for(partition_ptr self,
                                           const std::string& group) {
  auto& st = self->state;
  if (auto it = st.cursors.find(group); it != st.cursors.end())
    return it->second;
  cursor_config cc;
  cc.store = st.cfg.node.store;
  cc.writer = st.cfg.node.writer;
  cc.queue = st.cfg.record.queue;
  cc.partition = st.cfg.record.id;
  cc.group = group;
  cc.policy = core::cursor_policy::from(st.cfg.options);
  cc.visibility = core::visibility_policy::from(st.cfg.options);
  cc.wall = st.cfg.node.wall;
  // Until subscription modes exist, a new group starts at the oldest
  // retained frame (mode `all`, the default).
  cc.initial_committed = st.log->record().watermark - 1;
  auto c = spawn_cursor(self, std::move(cc));
  if (c)
    st.cursors.emplace(group, *c);
  return c;
}

/// Seals `frames`; nothing changes on error.
storage::expected<sealed_ptr> seal(partition_ptr self,
                                   const std::vector<storage::frame>& frames) {
  auto& st = self->state;
  auto t = st.cfg.node.store->db().read();
  if (!t)
    return std::move(t).err();
  auto sealed = st.log->seal(*t, frames, st.cfg.node.wall(), *st.enc,
                             st.cfg.options.dedup_window_s);
  if (!sealed)
    return std::move(sealed).err();
  return std::make_shared<storage::sealed_append>(std::move(*sealed));
}

caf::typed_response_promise<push_reply>
on_push(partition_ptr self, std::vector<storage::frame>& frames) {
  auto& st = self->state;
  auto rp = self->make_response_promise<push_reply>();
  auto sealed = seal(self, frames);
  if (!sealed) {
    rp.deliver(push_reply{{}, 0, sealed.err()});
    return rp;
  }
  auto s = *sealed;
  if (s->mutations.empty()) { // only duplicates of stored frames
    st.log->durable(*s);
    rp.deliver(push_reply{s->results, s->created_at, std::nullopt});
    return rp;
  }
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                storage::write_batch{std::move(s->mutations)})
      .then(
          [self, rp, s](write_result& r) mutable {
            if (r.ok()) {
              self->state.log->durable(*s);
              rp.deliver(push_reply{s->results, s->created_at, std::nullopt});
            } else {
              self->state.log->failed(*s);
              rp.deliver(push_reply{{}, 0, r.failure});
            }
          },
          [self, rp, s](caf::error& err) mutable {
            self->state.log->failed(*s);
            rp.deliver(push_reply{{},
                                  0,
                                  storage::make_error(storage::ec::io_error,
                                                      "writer unreachable: ",
                                                      caf::to_string(err))});
          });
  return rp;
}

partition_actor::behavior_type partition(partition_ptr self,
                                         partition_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.log = std::make_unique<storage::partition_log>(
      st.cfg.record, st.cfg.node.segments, st.cfg.node.frames);
  st.enc = std::make_unique<storage::segment_encoder>(st.cfg.node.codec);
  auto failed = [](const storage::error& err) {
    pop_reply r;
    r.failure = err;
    return r;
  };
  return {
      [self](push_atom, std::vector<storage::frame>& frames) {
        return on_push(self, frames);
      },
      [self](seal_atom, const std::vector<storage::frame>& frames) {
        auto sealed = seal(self, frames);
        if (!sealed)
          return seal_reply{nullptr, sealed.err()};
        return seal_reply{*sealed, std::nullopt};
      },
      [self](settle_atom, const sealed_ptr& s, bool durable) {
        if (durable)
          self->state.log->durable(*s);
        else
          self->state.log->failed(*s);
      },
      [self, failed](pop_atom, pop_request& req) -> caf::delegated<pop_reply> {
        auto c = cursor_for(self, req.group);
        if (!c) {
          auto rp = self->make_response_promise<pop_reply>();
          rp.deliver(failed(c.err()));
          return {};
        }
        return self->delegate(*c, pop_atom::value, std::move(req),
                              view_of(*self->state.log));
      },
      [self](ack_atom, const std::string& group,
             std::vector<core::ack_request>& reqs)
          -> caf::delegated<std::vector<ack_reply>> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = self->make_response_promise<std::vector<ack_reply>>();
          rp.deliver(std::vector<ack_reply>(
              reqs.size(),
              ack_reply{core::ack_error::none, false, false, c.err()}));
          return {};
        }
        return self->delegate(*c, ack_atom::value, std::move(reqs),
                              view_of(*self->state.log));
      },
      [self](extend_atom, const std::string& group, const std::string& lease_id,
             std::chrono::milliseconds by) -> caf::delegated<extend_reply> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = self->make_response_promise<extend_reply>();
          rp.deliver(extend_reply{core::extend_error::not_found, std::nullopt});
          return {};
        }
        return self->delegate(*c, extend_atom::value, lease_id, by);
      },
      [self](
          stage_atom, const std::string& group,
          std::vector<core::ack_request>& reqs) -> caf::delegated<stage_reply> {
        auto c = cursor_for(self, group);
        if (!c) {
          auto rp = self->make_response_promise<stage_reply>();
          stage_reply failed;
          failed.failure = c.err();
          rp.deliver(std::move(failed));
          return {};
        }
        return self->delegate(*c, stage_atom::value, std::move(reqs),
                              view_of(*self->state.log));
      },
      [self](settle_atom, const std::string& group, std::uint64_t id,
             bool commit) {
        auto& cursors = self->state.cursors;
        if (auto it = cursors.find(group); it != cursors.end())
          self->send(it->second, settle_atom::value, id, commit);
      },
  };
}

} // namespace

storage::expected<void> partition_config::validate() const {
  return node.validate("partition");
}

storage::expected<partition_actor> spawn_partition(caf::actor_system& sys,
                                                   partition_config cfg) {
  SPOOL_TRY(cfg.validate());
  return sys.spawn(partition, std::move(cfg));
}

} // namespace spool::actors
