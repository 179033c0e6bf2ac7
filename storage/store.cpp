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
  SPOOL_TRY(s->check_format(opts.slot_count));
  SPOOL_TRY(s->load_counters());
  auto cat = s->load_catalog();
  if (!cat)
    return std::move(cat).err();
  s->recovered_ = std::move(*cat);
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
  return cat;
}

expected<catalog> store::load_catalog(slot_t s) {
  auto cat = load_catalog();
  if (!cat)
    return cat;
  auto other = [s](std::uint64_t id) { return slot_of_id(id) != s; };
  std::erase_if(cat->queues, [&](auto& q) { return other(q.id.value); });
  std::erase_if(cat->partitions, [&](auto& p) { return other(p.queue.value); });
  std::erase_if(cat->doomed, [&](auto& q) { return other(q.value); });
  return cat;
}

expected<void> store::reload_slot(slot_t s) {
  if (s >= slot_count_)
    return make_error(ec::invalid_argument, "slot ", s, " of ", slot_count_);
  {
    auto t = env_->read();
    if (!t)
      return std::move(t).err();
    auto c = tables::get_counters(*t, s);
    if (!c)
      return std::move(c).err();
    // Never below what this node minted itself (a creation in flight).
    auto raise = [](std::atomic<std::uint32_t>& a, std::uint32_t v) {
      auto cur = a.load();
      while (cur < v && !a.compare_exchange_weak(cur, v)) {
      }
    };
    raise(next_queue_[s], c->next_queue);
    raise(next_partition_[s], c->next_partition);
    // DLQ ids above the slot's stored ones (another leader's clock may be
    // ahead of this node's): one key range, not the whole table.
    auto highest = tables::highest_dlq_id(*t, s);
    if (!highest)
      return std::move(highest).err();
    if (*highest && **highest == UINT64_MAX)
      return make_error(ec::corrupt_record, "dlq: id ", **highest,
                        " leaves no id after it");
    if (*highest) {
      auto floor = **highest + 1;
      auto cur = next_dlq_.load();
      while (cur < floor && !next_dlq_.compare_exchange_weak(cur, floor)) {
      }
    }
  }
  return {};
}

expected<void> store::check_format(std::uint32_t wanted_slots) {
  auto dir = env_->dir().string();
  {
    auto t = env_->read();
    if (!t)
      return std::move(t).err();
    auto f = tables::get_format(*t);
    if (!f)
      return std::move(f).err();
    if (f->format == store_format_version) {
      if (f->slot_count == 0 || f->slot_count > max_slot_count)
        return make_error(ec::corrupt_record, "meta: the store in ", dir,
                          " has ", f->slot_count, " slots");
      slot_count_ = f->slot_count;
      return {};
    }
    if (f->format == 2)
      return make_error(
          ec::invalid_argument, "the store in ", dir,
          " was written by a spoold from before partition ids carried their "
          "queue (store format 2); this spoold reads format ",
          store_format_version,
          " and does not migrate it: drain it with the spoold that wrote "
          "it, or move the folder away to start with an empty store");
    if (f->format != 0)
      return make_error(ec::invalid_argument, "the store in ", dir,
                        " has format ", f->format,
                        "; this spoold reads format ", store_format_version,
                        " only: run the spoold that wrote it");
    // No format: a store created now, or one written before slots.
    for (auto dbi : {t->db().meta, t->db().queues}) {
      auto cur = t->open_cursor(dbi);
      if (!cur)
        return std::move(cur).err();
      auto any = cur->first();
      if (!any)
        return std::move(any).err();
      if (*any)
        return make_error(
            ec::invalid_argument, "the store in ", dir,
            " was written by a spoold from before slots (store format 1); "
            "this spoold reads format ",
            store_format_version,
            " and does not migrate it: drain it with the spoold that wrote "
            "it, or move the folder away to start with an empty store");
    }
  }
  if (wanted_slots == 0 || wanted_slots > max_slot_count)
    return make_error(ec::invalid_argument, "a store has 1 to ", max_slot_count,
                      " slots, not ", wanted_slots);
  auto w = env_->write();
  if (!w)
    return std::move(w).err();
  SPOOL_TRY(tables::put_format(
      *w, tables::store_format{store_format_version, wanted_slots}));
  SPOOL_TRY(w->commit());
  slot_count_ = wanted_slots;
  return {};
}

expected<void> store::load_counters() {
  next_queue_ = std::make_unique<std::atomic<std::uint32_t>[]>(slot_count_);
  next_partition_ = std::make_unique<std::atomic<std::uint32_t>[]>(slot_count_);
  auto t = env_->read();
  if (!t)
    return std::move(t).err();
  for (std::uint32_t s = 0; s < slot_count_; ++s) {
    auto c = tables::get_counters(*t, static_cast<slot_t>(s));
    if (!c)
      return std::move(c).err();
    next_queue_[s] = c->next_queue;
    next_partition_[s] = c->next_partition;
  }
  return {};
}

queue_id store::next_queue_id(std::string_view name) noexcept {
  auto s = slot_of(name);
  return queue_id{slot_id(s, next_queue_[s].fetch_add(1))};
}

partition_id store::next_partition_id(queue_id queue) noexcept {
  auto s = slot_of_id(queue.value);
  return partition_id{slot_id(s, next_partition_[s].fetch_add(1))};
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
  std::uint64_t floor = 1;
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

namespace {

/// An RFC 4122 version 4 UUID of 128 random bits (version and variant set).
std::string format_uuid(std::uint64_t hi, std::uint64_t lo) {
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

} // namespace

std::string store::make_partition_uuid(queue_id q, partition_id p) {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  {
    std::lock_guard<std::mutex> guard{rng_mtx_};
    hi = rng_();
    lo = rng_();
  }
  // `%08x-%04x-` of the queue's 48 bits (as a lease id starts), the version
  // nibble, the partition's 32-bit number (12 bits, then 20 after the two
  // variant bits), then 42 random bits.
  auto n = std::uint64_t{slot_local_id(p.value)};
  hi = (q.value << 16) | (n >> 20);
  lo = ((n & 0xfffffULL) << 42) | (lo & ((1ULL << 42) - 1));
  return format_uuid(hi, lo);
}

std::string store::make_uuid() {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  {
    std::lock_guard<std::mutex> guard{rng_mtx_};
    hi = rng_();
    lo = rng_();
  }
  return format_uuid(hi, lo);
}

} // namespace spool::storage
