// A queue's acks and its leases by id (core::lease_directory): what its
// pops granted, acked by partition uuid, extended and released by lease id
// across the partitions one lease holds. An index of what its cursors
// granted (each cursor owns its lease); the broker routes a lease id or a
// partition uuid here by the queue id the id carries.

#include "actors/fan_out.hpp"
#include "actors/queue/queue_state.hpp"

namespace spool::actors::queue_detail {

namespace {

/// Expired entries removed per grant (the directory stays at the live
/// leases without a timer of its own).
constexpr std::size_t lease_sweep_step = 16;

/// Removes a bounded step of expired entries, at every grant, ack release,
/// extend and release (a queue that no longer hears of leases keeps its
/// expired entries, at most those granted within one lease time, until the
/// next such message).
void sweep(queue_ptr self) {
  self->state.leases.sweep(self->clock().now(), lease_sweep_step);
}

/// The partitions a lease holds (those the queue has) and their names.
std::pair<std::vector<partition_actor>, std::vector<std::string>>
partitions_of(queue_ptr self, const core::lease_entry& lease) {
  std::pair<std::vector<partition_actor>, std::vector<std::string>> out;
  for (auto& p : lease.partitions)
    if (auto it = self->state.partitions.find(p);
        it != self->state.partitions.end()) {
      out.first.push_back(live(self, it->second));
      out.second.push_back(p);
    }
  return out;
}

} // namespace

void lease_granted(queue_ptr self, const std::string& id,
                   const std::string& group, const std::string& partition,
                   mono_time expires) {
  auto& leases = self->state.leases;
  sweep(self);
  leases.granted(id, group, {partition}, expires);
}

void lease_ended(queue_ptr self, const std::string& id,
                 const std::string& partition) {
  self->state.leases.ended(id, partition);
  sweep(self);
}

caf::result<lease_extend_reply> on_extend(queue_ptr self, const std::string& id,
                                          std::chrono::milliseconds by) {
  auto& st = self->state;
  auto now = self->clock().now();
  if (st.leases.expired(id, now)) {
    st.leases.erase(id);
    lease_extend_reply late;
    late.error = extend_error::expired;
    return late;
  }
  sweep(self);
  auto* entry = st.leases.find(id, now);
  if (entry == nullptr) {
    lease_extend_reply none;
    none.error = extend_error::not_found;
    return none;
  }
  auto rp = promise_for<lease_extend_reply>(self);
  auto [parts, names] = partitions_of(self, *entry);
  fan_out<extend_reply>(
      self, parts,
      [self, rp, id,
       names = std::move(names)](std::vector<fanned<extend_reply>> rs) mutable {
        lease_extend_reply out;
        std::optional<mono_time> latest;
        for (std::size_t i = 0; i < rs.size(); ++i) {
          auto r = or_failed(rs[i]);
          if (r.error == extend_error::not_found
              || r.error == extend_error::expired)
            lease_ended(self, id, names[i]); // over there
          else if (r.expires && (!latest || *r.expires > *latest))
            latest = r.expires;
          out.partitions.push_back(
              {names[i], self->state.partitions.at(names[i]).rec.uuid,
               std::move(r)});
        }
        if (latest)
          self->state.leases.extended(id, *latest);
        if (out.partitions.empty())
          out.error = extend_error::not_found;
        rp.deliver(std::move(out));
      },
      extend_atom::value, entry->group, id, by);
  return rp.later();
}

caf::result<bool> on_release(queue_ptr self, const std::string& id) {
  auto& st = self->state;
  sweep(self);
  auto* entry = st.leases.find(id, self->clock().now());
  if (entry == nullptr)
    return false;
  auto rp = promise_for<bool>(self);
  auto [parts, names] = partitions_of(self, *entry);
  auto group = entry->group;
  st.leases.erase(id);
  fan_out<bool>(
      self, parts,
      [self, rp, names = std::move(names),
       group](std::vector<fanned<bool>> rs) mutable {
        bool any = false;
        for (auto& r : rs)
          any = any || (r.reply && *r.reply);
        if (any)
          wake_for(self, names, group);
        rp.deliver(any);
      },
      release_atom::value, group, id);
  return rp.later();
}

// -- ack ----------------------------------------------------------------------

namespace {

/// After partition `partition`'s cursor answered acks: the leases they
/// ended leave the directory. Whether any did (a released lease may serve a
/// parked pop: woken after the answer).
bool end_leases(queue_ptr self, const std::string& partition,
                const std::vector<ack_reply>& rs) {
  bool released = false;
  for (auto& r : rs)
    if (r.lease_released) {
      released = true;
      lease_ended(self, r.released_lease, partition);
    }
  return released;
}

/// The acks of one (partition, group) of a located list, with their item
/// indices.
struct ack_share {
  partition_entry* part;
  std::string group;
  std::vector<std::size_t> items;
  std::vector<ack_request> reqs;
};

} // namespace

caf::result<std::vector<located_ack_reply>>
on_located_ack(queue_ptr self, std::vector<located_ack>& acks) {
  auto& st = self->state;
  std::vector<located_ack_reply> out(acks.size());
  std::vector<ack_share> shares;
  std::map<std::pair<partition_entry*, std::string_view>, std::size_t>
      index; // the group views point into `acks`
  for (std::size_t i = 0; i < acks.size(); ++i) {
    auto* part = find_partition(st, {{}, acks[i].partition_uuid});
    if (part == nullptr) { // not (or no longer) a partition of this queue
      out[i].reply.error = ack_error::not_found;
      continue;
    }
    out[i].queue = st.cfg.record.name;
    out[i].partition = part->rec.name;
    auto [it, fresh] = index.try_emplace({part, acks[i].group}, shares.size());
    if (fresh)
      shares.push_back({part, acks[i].group, {}, {}});
    shares[it->second].items.push_back(i);
    shares[it->second].reqs.push_back(std::move(acks[i].ack));
  }
  if (shares.empty())
    return out;
  auto rp = promise_for<std::vector<located_ack_reply>>(self);
  auto run = std::make_shared<
      std::pair<std::vector<ack_share>, std::vector<located_ack_reply>>>(
      std::move(shares), std::move(out));
  gather<std::vector<ack_reply>>(
      run->first.size(),
      [self, run](std::size_t k) {
        auto& s = run->first[k]; // asked once: its acks are not needed after
        return self->request(live(self, *s.part), caf::infinite,
                             ack_atom::value, s.group, std::move(s.reqs));
      },
      [self, rp, run](std::vector<fanned<std::vector<ack_reply>>> rs) mutable {
        auto& [shares, out] = *run;
        std::vector<const ack_share*> woke;
        for (std::size_t k = 0; k < shares.size(); ++k) {
          auto& s = shares[k];
          if (!rs[k].reply) { // the partition did not answer
            for (auto i : s.items)
              out[i].reply.failure = unreachable(rs[k].error);
            continue;
          }
          auto& replies = *rs[k].reply;
          if (end_leases(self, s.part->rec.name, replies))
            woke.push_back(&s);
          for (std::size_t j = 0; j < s.items.size(); ++j)
            out[s.items[j]].reply
                = j < replies.size()
                      ? std::move(replies[j])
                      : ack_reply{ack_error::none,
                                  false,
                                  false,
                                  make_error(errc::internal, "partition ",
                                             s.part->rec.name, " answered ",
                                             replies.size(), " replies for ",
                                             s.items.size(), " acks"),
                                  {}};
        }
        rp.deliver(std::move(out));
        for (auto* s : woke) // after the answer
          wake_for(self, {s->part->rec.name}, s->group);
      });
  return rp.later();
}

} // namespace spool::actors::queue_detail
