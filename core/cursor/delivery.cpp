#include "core/cursor/delivery.hpp"

namespace spool::core {

delivery_cut cut_delivery(std::span<const storage::micros> created_at,
                          std::span<const std::size_t> payload_bytes,
                          storage::micros newest, storage::micros wall,
                          const visibility_policy& visibility,
                          std::size_t max_bytes) {
  auto vis = visible_prefix(created_at, newest, wall, visibility);
  delivery_cut cut;
  std::size_t bytes = 0;
  for (; cut.count < vis.count; ++cut.count) {
    auto size = payload_bytes[cut.count];
    if (cut.count > 0 && bytes + size > max_bytes)
      break;
    bytes += size;
  }
  if (cut.count == 0) {
    cut.held_back = vis.held_back;
    cut.next_change = vis.next_change;
  }
  return cut;
}

std::vector<std::uint64_t> auto_ack(cursor_core& core, const lease_info& lease,
                                    std::span<const offset> offsets,
                                    offset last_offset, mono_time now) {
  std::vector<std::uint64_t> done;
  for (auto off : offsets) {
    ack_request a;
    a.lease_id = lease.id;
    a.off = off;
    if (auto out = core.ack(a, last_offset, now); out.requeue_done)
      done.push_back(*out.requeue_done);
  }
  return done;
}

} // namespace spool::core
