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

namespace {

std::uint64_t piece_checksum(const snapshot_piece& p) noexcept {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  std::uint8_t last = p.last ? 1 : 0;
  XXH3_64bits_update(&st, &p.copy, sizeof p.copy);
  XXH3_64bits_update(&st, &p.through.epoch, sizeof p.through.epoch);
  XXH3_64bits_update(&st, &p.through.seq, sizeof p.through.seq);
  XXH3_64bits_update(&st, &p.index, sizeof p.index);
  XXH3_64bits_update(&st, &last, sizeof last);
  XXH3_64bits_update(&st, p.data.data(), p.data.size());
  return XXH3_64bits_digest(&st);
}

} // namespace

snapshot_piece make_piece(std::uint64_t copy, log_pos through,
                          std::uint32_t index, bool last, std::string data) {
  snapshot_piece p{copy, through, index, last, std::move(data), 0};
  p.checksum = piece_checksum(p);
  return p;
}

bool checksum_ok(const snapshot_piece& p) noexcept {
  return p.checksum == piece_checksum(p);
}

} // namespace spool::cluster
