#pragma once

// A broker fixture for the failure tests: pops, acks and reads of what the
// actors hold (memory) next to what the store holds, for faults injected
// through the gate (`gate_st->inject`).

#include "sim/broker_sim.hpp"

namespace spool::test {

struct fault_fixture : broker_sim {
  actors::queue_pop_reply pop(const std::string& q,
                              actors::queue_pop_request r) {
    auto out = request<actors::queue_pop_reply>(broker, actors::pop_atom::value,
                                                q, r);
    REQUIRE(out);
    REQUIRE_FALSE(out->failure);
    return *out;
  }

  /// The offsets of (q, p) a pop by `group` gets (no ack).
  std::vector<std::int64_t> popped(const std::string& q, const std::string& p,
                                   const std::string& group) {
    std::vector<std::int64_t> out;
    for (auto& c : pop(q, pop_request(group, p)).claimed)
      for (auto& m : c.reply.messages)
        out.push_back(m.frame.off.value);
    return out;
  }

  /// Acks one frame; the reply as the broker gives it.
  actors::ack_reply ack_reply(const std::string& q, const std::string& p,
                              const std::string& group,
                              const std::string& lease, std::int64_t off,
                              ack_status s = ack_status::completed) {
    ack_request a;
    a.lease_id = lease;
    a.off = storage::offset{off};
    a.status = s;
    a.error = "boom";
    auto r = ack_located(q, p, group, std::vector{a});
    REQUIRE(r);
    REQUIRE(r->size() == 1);
    return r->front();
  }

  /// Acks one frame (its write must succeed); the ack's error.
  ack_error ack(const std::string& q, const std::string& p,
                const std::string& group, const std::string& lease,
                std::int64_t off, ack_status s = ack_status::completed) {
    auto r = ack_reply(q, p, group, lease, off, s);
    REQUIRE_FALSE(r.failure);
    return r.error;
  }

  /// Pops everything of (q, p) for `group` and acks it.
  void consume(const std::string& q, const std::string& p,
               const std::string& group) {
    auto r = pop(q, pop_request(group, p, 100));
    for (auto& c : r.claimed)
      for (auto& m : c.reply.messages)
        REQUIRE(ack(q, p, group, c.reply.lease->id, m.frame.off.value)
                == ack_error::none);
  }

  /// Partition p of q as the queue's actors hold it (memory).
  storage::partition_record live(const std::string& q, const std::string& p) {
    auto r = request<actors::queues_reply>(broker, actors::info_atom::value,
                                           std::optional<std::string>{q});
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    for (auto& part : r->queues.at(0).partitions)
      if (part.name == p)
        return part;
    FAIL("no partition " << p);
    return {};
  }

  /// The partition's watermark in memory, checked equal to the stored one.
  std::int64_t watermark(const std::string& q, const std::string& p) {
    auto in_memory = live(q, p);
    auto stored = partition(q, p);
    CHECK(in_memory.watermark == stored.watermark);
    CHECK(in_memory.next_offset == stored.next_offset);
    return stored.watermark.value;
  }

  /// The offsets a browse of (q, p) from 0 reads.
  std::vector<std::int64_t> browse(const std::string& q, const std::string& p) {
    actors::browse_request b;
    b.partition = p;
    b.from = storage::offset{0};
    b.max_frames = 100;
    auto r = request<actors::browse_reply>(broker, actors::browse_atom::value,
                                           q, b);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    std::vector<std::int64_t> out;
    for (auto& f : r->frames)
      out.push_back(f.off.value);
    return out;
  }
};

} // namespace spool::test
