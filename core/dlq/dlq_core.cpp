#include "core/dlq/dlq_core.hpp"

#include <algorithm>

namespace spool::core {

expected<void> check(const dlq_filter& f) {
  if (f.from && f.to && *f.from > *f.to)
    return make_error(errc::invalid_argument,
                      "Invalid DLQ filter: from is after to");
  for (auto& name : {f.queue, f.group, f.partition})
    if (name && name->empty())
      return make_error(errc::invalid_argument,
                        "Invalid DLQ filter: empty name");
  if (f.ids.size() > dlq_max_batch)
    return make_error(errc::invalid_argument, "Invalid DLQ filter: at most ",
                      dlq_max_batch, " ids");
  return {};
}

expected<void> check(const dlq_query& q) {
  SPOOL_TRY(check(q.filter));
  if (q.limit == 0 || q.limit > dlq_max_limit)
    return make_error(errc::invalid_argument,
                      "Invalid DLQ filter: limit must be 1..", dlq_max_limit);
  if (q.offset > dlq_max_offset)
    return make_error(errc::invalid_argument,
                      "Invalid DLQ filter: offset must be 0..", dlq_max_offset,
                      " (use after for deeper pages)");
  return {};
}

bool matches(const dlq_filter& f, std::string_view queue,
             std::string_view group, std::string_view partition,
             const storage::dlq_entry& e) {
  if (f.queue && *f.queue != queue)
    return false;
  if (f.group && *f.group != group)
    return false;
  if (f.partition && *f.partition != partition)
    return false;
  if (f.from && e.failed_at < *f.from)
    return false;
  if (f.to && e.failed_at > *f.to)
    return false;
  if (!f.ids.empty()
      && std::find(f.ids.begin(), f.ids.end(), e.id) == f.ids.end())
    return false;
  return true;
}

void sort_newest_first(std::vector<dlq_item>& items) {
  std::sort(items.begin(), items.end(),
            [](auto& a, auto& b) { return a.entry.id > b.entry.id; });
}

dlq_page paginate(std::vector<dlq_item> items, const dlq_query& q) {
  dlq_page page;
  page.total = items.size();
  sort_newest_first(items);
  auto first = items.begin();
  if (q.after)
    first = std::find_if(items.begin(), items.end(),
                         [&](auto& x) { return x.entry.id < *q.after; });
  auto skip = std::min<std::size_t>(
      q.offset, static_cast<std::size_t>(items.end() - first));
  first += static_cast<std::ptrdiff_t>(skip);
  auto take = std::min<std::size_t>(
      q.limit, static_cast<std::size_t>(items.end() - first));
  page.items.assign(
      std::make_move_iterator(first),
      std::make_move_iterator(first + static_cast<std::ptrdiff_t>(take)));
  return page;
}

bool expired(const storage::dlq_entry& e, storage::micros now,
             std::int64_t retention_s) {
  return retention_s > 0 && !e.requeued
         && e.failed_at + retention_s * 1'000'000 <= now;
}

dlq_sweeper::dlq_sweeper(storage::micros now, std::int64_t retention_s,
                         std::size_t max_step, storage::micros min_gap) :
    now_(now),
    retention_us_(retention_s * 1'000'000),
    max_step_(max_step),
    min_gap_(min_gap) {
}

void dlq_sweeper::see(std::string_view group, const storage::dlq_entry& e) {
  if (retention_us_ <= 0 || e.requeued)
    return;
  auto expires = e.failed_at + retention_us_;
  if (expires <= now_) {
    if (expired_.size() < max_step_)
      expired_.emplace_back(std::string{group}, e.id);
    else
      next_ = now_;
    return;
  }
  expires = std::max(expires, now_ + min_gap_);
  if (!next_ || expires < *next_)
    next_ = expires;
}

} // namespace spool::core
