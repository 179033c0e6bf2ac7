#include "storage/store.hpp"

#include <cstdio>
#include <set>

#include "storage/tables.hpp"

namespace spool::storage {

expected<std::unique_ptr<store>> store::open(store_options opts) {
  auto e = env::open(opts.env);
  if (!e)
    return std::move(e).err();
  std::unique_ptr<store> s{new store()};
  s->env_ = std::move(*e);
  auto cat = s->load_catalog();
  if (!cat)
    return std::move(cat).err();
  s->recovered_ = std::move(*cat);
  s->next_queue_ = s->recovered_.counters.next_queue;
  s->next_partition_ = s->recovered_.counters.next_partition;
  auto dlq_floor = s->first_free_dlq_id();
  if (!dlq_floor)
    return std::move(dlq_floor).err();
  s->next_dlq_ = *dlq_floor;
  std::random_device rd;
  s->rng_.seed((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
  s->commit_opts_ = opts.commit;
  return s;
}

group_commit& store::writer() {
  std::call_once(writer_once_, [this] {
    writer_ = std::make_unique<group_commit>(*env_, commit_opts_);
  });
  return *writer_;
}

store::~store() {
  (void)close();
}

expected<void> store::close() {
  if (writer_)
    writer_->stop();
  writer_.reset();
  expected<void> synced;
  if (env_ && env_->mode() == durability::relaxed)
    synced = env_->sync();
  env_.reset();
  return synced;
}

expected<catalog> store::load_catalog() {
  auto t = env_->read();
  if (!t)
    return std::move(t).err();
  catalog cat;
  auto queues = tables::all_queues(*t);
  if (!queues)
    return std::move(queues).err();
  cat.queues = std::move(*queues);
  auto parts = tables::all_partitions(*t);
  if (!parts)
    return std::move(parts).err();
  // A deleted queue's partition records stay until its sweep removes them:
  // they are not part of what is served.
  std::set<std::uint64_t> live;
  for (auto& q : cat.queues)
    live.insert(q.id.value);
  std::erase_if(*parts, [&](auto& p) { return !live.contains(p.queue.value); });
  cat.partitions = std::move(*parts);
  auto doomed = tables::doomed_queues(*t);
  if (!doomed)
    return std::move(doomed).err();
  cat.doomed = std::move(*doomed);
  auto counters = tables::get_counters(*t);
  if (!counters)
    return std::move(counters).err();
  cat.counters = *counters;
  return cat;
}

queue_id store::next_queue_id() noexcept {
  return queue_id{next_queue_.fetch_add(1)};
}

partition_id store::next_partition_id() noexcept {
  return partition_id{next_partition_.fetch_add(1)};
}

std::uint64_t store::next_dlq_id(micros now) noexcept {
  auto clock = static_cast<std::uint64_t>(std::max<micros>(now, 0));
  auto next = next_dlq_.load(std::memory_order_relaxed);
  std::uint64_t id = 0;
  do
    id = std::max(next, clock);
  while (!next_dlq_.compare_exchange_weak(next, id + 1,
                                          std::memory_order_relaxed));
  return id;
}

expected<std::uint64_t> store::first_free_dlq_id() {
  auto t = env_->read();
  if (!t)
    return std::move(t).err();
  // Stores written before DLQ ids followed the clock kept a node counter:
  // it stays a floor (a deleted entry's id is never given again).
  auto floor = recovered_.counters.next_dlq;
  auto highest = tables::highest_dlq_id(*t);
  if (!highest)
    return std::move(highest).err();
  if (*highest && **highest == UINT64_MAX)
    return make_error(ec::corrupt_record, "dlq: id ", **highest,
                      " leaves no id after it");
  if (*highest)
    floor = std::max(floor, **highest + 1);
  return floor;
}

std::string store::make_uuid() {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  {
    std::lock_guard<std::mutex> guard{rng_mtx_};
    hi = rng_();
    lo = rng_();
  }
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL; // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL; // variant 10
  char buf[37];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx",
                static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff),
                static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

} // namespace spool::storage
