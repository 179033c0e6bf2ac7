#pragma once

// A cursor on offsets 0..9 holding a live lease of its first frames, for
// the ack tests (ack_by_txid_test.cpp, ack_through_test.cpp).

#include <catch2/catch.hpp>

#include "core/cursor/cursor_core.hpp"

namespace spool::core::test {

using namespace std::chrono_literals;

inline const mono_time t0 = mono_time{} + 1000h;

/// Leased `n` frames (lease `id`, 30 s) with ids "tx<offset>".
struct leased {
  cursor_core cur{storage::cursor_record{}, [] {
                    cursor_policy p;
                    p.lease_time = 30s;
                    return p;
                  }()};
  lease_info lease;

  explicit leased(std::size_t n, std::string id = "L1") {
    auto plan = cur.plan(t0, offset{0}, offset{9}, n);
    REQUIRE(std::holds_alternative<delivery_plan>(plan));
    auto& p = std::get<delivery_plan>(plan);
    auto g = cur.grant(p, p.deliver.size(), std::move(id), t0);
    REQUIRE(g.lease);
    lease = *g.lease;
    std::vector<std::uint64_t> hashes;
    for (auto o : p.deliver)
      hashes.push_back(cursor_core::txid_hash("tx" + std::to_string(o.value)));
    cur.note_lease_txids(std::move(hashes));
  }

  /// An ack naming its frame by transactionId.
  ack_outcome ack(std::string txid, mono_time now = t0) {
    ack_request r;
    r.transaction_id = std::move(txid);
    r.off = offset{999}; // ignored: the id names the frame
    return cur.ack(r, offset{9}, now);
  }

  /// A cumulative ack up to offset `o`, naming `lease_id`.
  ack_outcome up_to(std::int64_t o, mono_time now = t0,
                    std::optional<std::string> lease_id = "L1") {
    ack_request r;
    r.lease_id = std::move(lease_id);
    r.up_to = offset{o};
    return cur.ack(r, offset{9}, now);
  }

  /// An ack of offset `o` with status `s`, naming lease L1.
  ack_outcome one(std::int64_t o, ack_status s = ack_status::completed) {
    ack_request r;
    r.lease_id = "L1";
    r.off = offset{o};
    r.status = s;
    return cur.ack(r, offset{9}, t0);
  }
};

} // namespace spool::core::test
