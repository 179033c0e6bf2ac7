#include "core/broker/trace_reads.hpp"

#include <algorithm>

#include "storage/log.hpp"
#include "storage/tables.hpp"

namespace spool::core {

namespace {

/// The ids of the queues not being deleted.
storage::expected<std::vector<storage::queue_id>>
live_ids(storage::txn& t, const std::vector<live_queue>& queues) {
  std::vector<storage::queue_id> ids;
  for (auto& q : queues) {
    auto doomed = storage::tables::is_doomed(t, q.id);
    if (!doomed)
      return std::move(doomed).err();
    if (!*doomed)
      ids.push_back(q.id);
  }
  return ids;
}

/// The message at `off`, if still stored.
storage::expected<std::optional<storage::stored_frame>>
message_at(storage::txn& t, const storage::partition_record& p,
           storage::offset off, std::size_t max_bytes) {
  if (off < p.watermark || off >= p.next_offset)
    return std::optional<storage::stored_frame>{};
  auto r = storage::read_frames(t, p.queue, p.id, off, 1, max_bytes);
  if (!r)
    return std::move(r).err();
  if (r->frames.empty() || r->frames.front().off != off)
    return std::optional<storage::stored_frame>{};
  return std::optional<storage::stored_frame>{std::move(r->frames.front())};
}

} // namespace

storage::expected<trace_hits>
traces_named(storage::txn& t, const std::vector<live_queue>& queues,
             const std::string& name, std::size_t limit, std::size_t skip) {
  auto ids = live_ids(t, queues);
  if (!ids)
    return std::move(ids).err();
  auto page
      = storage::traces::named(t, *ids, name, limit, skip, max_trace_scan);
  if (!page)
    return std::move(page).err();
  trace_hits out;
  out.total = page->total;
  std::size_t budget = max_trace_page_bytes;
  for (auto& h : page->hits) {
    auto p = storage::tables::get_partition(t, h.queue, h.partition);
    if (!p)
      return std::move(p).err();
    if (!*p)
      continue; // its queue's rows are going
    trace_hit hit;
    hit.rec = std::move(h.rec);
    auto q = std::find_if(queues.begin(), queues.end(),
                          [&](auto& x) { return x.id == h.queue; });
    hit.queue = q->name; // named() reads only `queues`
    hit.partition = (*p)->name;
    hit.partition_uuid = (*p)->uuid;
    if (budget > 0) {
      auto m = message_at(t, **p, h.off, budget);
      if (!m)
        return std::move(m).err();
      if (*m && (*m)->data.payload.size() <= budget) {
        budget -= (*m)->data.payload.size();
        hit.message = std::move(*m);
      } else if (*m) {
        budget = 0; // the rest come without their message
      }
    }
    out.hits.push_back(std::move(hit));
  }
  return out;
}

storage::expected<trace_names_page>
trace_names(storage::txn& t, const std::vector<live_queue>& queues,
            std::size_t limit, std::size_t skip) {
  auto ids = live_ids(t, queues);
  if (!ids)
    return std::move(ids).err();
  auto all = storage::traces::names(t, *ids, max_trace_scan);
  if (!all)
    return std::move(all).err();
  trace_names_page out;
  out.total = all->size();
  for (std::size_t i = skip; i < all->size() && out.names.size() < limit; ++i)
    out.names.push_back(std::move((*all)[i]));
  return out;
}

} // namespace spool::core
