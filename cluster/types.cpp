#include "cluster/types.hpp"

#include <utility>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace spool::cluster {

std::uint64_t checksum_of(epoch_t epoch, seq_t seq, entry_kind kind,
                          const std::string& payload) noexcept {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, &epoch, sizeof epoch);
  XXH3_64bits_update(&st, &seq, sizeof seq);
  XXH3_64bits_update(&st, &kind, sizeof kind);
  XXH3_64bits_update(&st, payload.data(), payload.size());
  return XXH3_64bits_digest(&st);
}

entry make_entry(epoch_t epoch, seq_t seq, entry_kind kind,
                 std::string payload) {
  entry e{epoch, seq, kind, std::move(payload), 0};
  e.checksum = checksum_of(e.epoch, e.seq, e.kind, e.payload);
  return e;
}

snapshot make_snapshot(log_pos through, std::string data) {
  snapshot s{through, std::move(data), 0};
  s.checksum
      = checksum_of(through.epoch, through.seq, entry_kind::data, s.data);
  return s;
}

bool checksum_ok(const snapshot& s) noexcept {
  return s.checksum
         == checksum_of(s.through.epoch, s.through.seq, entry_kind::data,
                        s.data);
}

} // namespace spool::cluster
