#include "core/push/claim_frames.hpp"

#include <algorithm>

#include "vocab/message_id.hpp"

namespace spool::core {

std::vector<std::vector<storage::frame>>
claim_copies(const std::vector<std::vector<storage::frame>>& frames) {
  std::vector<std::vector<storage::frame>> out(frames.size());
  for (std::size_t k = 0; k < frames.size(); ++k) {
    auto n = std::min(frames[k].size(), claim_frames);
    out[k].assign(frames[k].begin(), frames[k].begin() + static_cast<long>(n));
  }
  return out;
}

std::vector<storage::stored_frame>
sealed_frames(const storage::sealed_append& sealed,
              std::span<const storage::frame> copies, std::size_t batch,
              const std::string& uuid) {
  std::vector<storage::stored_frame> out;
  for (std::size_t j = 0; j < copies.size() && out.size() < batch; ++j) {
    auto& r = sealed.results[j];
    if (r.status != storage::frame_result::queued)
      continue;
    out.push_back({r.off, sealed.created_at, copies[j]});
    auto& f = out.back().data;
    if (f.origin == storage::txid_origin::generated && f.transaction_id.empty()
        && !uuid.empty())
      f.transaction_id = message_uuid(uuid, r.off.value);
  }
  return out;
}

} // namespace spool::core
