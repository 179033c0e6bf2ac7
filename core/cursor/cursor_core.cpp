#include "core/cursor/cursor_core.hpp"

#include <algorithm>
#include <memory>
#include <string_view>

#include <xxhash.h>

namespace spool::core {

cursor_policy cursor_policy::from(const storage::queue_options& opts) {
  cursor_policy p;
  p.lease_time = milliseconds{opts.lease_time_s * 1000};
  p.retry_limit = opts.retry_limit;
  p.retry_delay = milliseconds{opts.retry_delay_ms};
  for (auto ms : opts.retry_backoff_ms)
    p.retry_backoff.emplace_back(ms);
  p.max_deliveries = opts.max_deliveries;
  // Either flag alone (or unset) keeps the DLQ; both false drop.
  p.drop_dead_letters
      = opts.dead_letter_queue == false && opts.dlq_after_max_retries == false;
  return p;
}

expected<void> check_ack(const ack_request& req) {
  if (req.transaction_id && req.transaction_id->empty())
    return make_error(errc::invalid_argument, "transactionId is empty");
  if (req.up_to && req.transaction_id)
    return make_error(errc::invalid_argument,
                      "upTo names frames by offset: no transactionId with it");
  if (req.up_to && req.status != ack_status::completed)
    return make_error(errc::invalid_argument,
                      "upTo completes frames: its status is completed");
  // A range must not land on a newer lease of another consumer.
  if (req.up_to && !req.lease_id)
    return make_error(errc::invalid_argument, "upTo needs a leaseId");
  if (req.delay && (req.delay->count() < 0 || *req.delay > max_ack_delay))
    return make_error(errc::invalid_argument, "delayMs must be between 0 and ",
                      max_ack_delay.count(), ", got ", req.delay->count());
  return {};
}

lag_info lag_of(offset committed, offset watermark, offset last_offset) {
  auto consumed = std::max(committed, watermark - 1);
  return {consumed, std::max<std::int64_t>(0, last_offset - consumed)};
}

std::size_t cursor_core::redeliveries() const {
  std::size_t n = 0;
  for (auto& c : counters_)
    if (c.deliveries > 1)
      ++n;
  return n;
}

std::size_t cursor_core::done_above(offset from) const {
  std::size_t n = 0;
  for (auto& c : counters_)
    if (c.done && c.off >= from)
      ++n;
  return n;
}

std::size_t cursor_core::in_flight(mono_time now, offset from) const {
  if (!live_lease(now) || lease_->requeued)
    return 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < lease_offsets_.size(); ++i)
    if (!settled_[i] && lease_offsets_[i] >= from)
      ++n;
  return n;
}

namespace {

std::optional<offset_range>
to_range(const std::optional<std::pair<offset, offset>>& p) {
  if (!p)
    return std::nullopt;
  return offset_range{p->first, p->second};
}

std::optional<std::pair<offset, offset>>
to_pair(const std::optional<offset_range>& r) {
  if (!r)
    return std::nullopt;
  return std::pair{r->first, r->last};
}

} // namespace

cursor_core::cursor_core(storage::cursor_record rec, cursor_policy policy) :
    policy_(std::move(policy)),
    committed_(rec.committed),
    epoch_(rec.lease_epoch),
    isolated_(to_range(rec.isolated)),
    leased_(to_range(rec.leased)),
    last_activity_(rec.last_activity),
    requeued_(std::move(rec.requeued)),
    exempt_(rec.exempt) {
  // Stored records list the counters ascending; keep the first of any
  // duplicate offset, as the map this replaced did.
  std::stable_sort(rec.counters.begin(), rec.counters.end(),
                   [](auto& a, auto& b) { return a.off < b.off; });
  for (auto& c : rec.counters)
    if (c.off > committed_
        && (counters_.empty() || counters_.back().off != c.off))
      counters_.push_back(c);
}

// -- inspection ---------------------------------------------------------------

storage::cursor_record cursor_core::record() const {
  storage::cursor_record rec;
  rec.committed = committed_;
  rec.lease_epoch = epoch_;
  rec.isolated = to_pair(isolated_);
  rec.leased = to_pair(leased_);
  rec.counters.assign(counters_.begin(), counters_.end());
  rec.last_activity = last_activity_;
  rec.requeued = requeued_;
  rec.exempt = exempt_;
  return rec;
}

std::uint32_t cursor_core::head_failures() const {
  auto* c = find_counters(committed_ + 1);
  return c == nullptr ? 0 : c->failures;
}

std::uint32_t cursor_core::deliveries_of(offset off) const {
  auto* c = find_counters(off);
  return c == nullptr ? 0 : c->deliveries;
}

std::optional<mono_time> cursor_core::next_deadline() const {
  std::optional<mono_time> result = not_before_;
  if (lease_ && (!result || lease_->expires < *result))
    result = lease_->expires;
  return result;
}

// -- delivery -----------------------------------------------------------------

std::variant<delivery_plan, empty_reason>
cursor_core::plan(mono_time now, offset watermark, offset last_visible,
                  std::size_t max_frames) const {
  if (lease_)
    return empty_reason::lease_held;
  if (not_before_ && now < *not_before_)
    return empty_reason::delayed;
  delivery_plan p;
  if (!requeued_.empty()) {
    // Requeued entries go first, one per lease: each is a known failure, so
    // a crash charges exactly that entry (as isolation does).
    auto& r = requeued_.front();
    p.requeued = r.dlq_id;
    if (policy_.max_deliveries > 0
        && r.deliveries >= static_cast<std::uint64_t>(policy_.max_deliveries))
      p.dead.push_back(r.off);
    else
      p.deliver.push_back(r.off);
    return p;
  }
  auto start = committed_ + 1;
  if (start < watermark) {
    p.skipped = offset_range{start, watermark - 1};
    start = watermark;
  }
  std::size_t limit = std::max<std::size_t>(max_frames, 1);
  if (isolated_ && start <= isolated_->last)
    limit = 1;
  for (auto o = start;
       o <= last_visible && p.deliver.size() < limit && p.dead.size() < limit;
       o = o + 1) {
    if (is_done(o))
      continue;
    if (policy_.max_deliveries > 0
        && deliveries_of(o)
               >= static_cast<std::uint64_t>(policy_.max_deliveries)) {
      p.dead.push_back(o);
      continue;
    }
    p.deliver.push_back(o);
  }
  if (p.deliver.empty() && p.dead.empty())
    return empty_reason::empty;
  return p;
}

grant_result cursor_core::grant(const delivery_plan& plan,
                                std::size_t delivered, std::string lease_id,
                                mono_time now) {
  grant_result result;
  if (plan.requeued) {
    auto* r = find_requeued(*plan.requeued);
    if (r == nullptr)
      return result;
    if (!plan.dead.empty()) {
      result.dead.push_back(
          return_requeued(*plan.requeued, "maxDeliveries reached"));
      return result;
    }
    if (delivered == 0 || plan.deliver.empty())
      return result;
    not_before_.reset();
    r->deliveries += 1;
    r->leased = true;
    result.delivery_counts.emplace_back(r->off, r->deliveries);
    lease_offsets_.assign(1, r->off);
    epoch_ += 1;
    lease_ = lease_info{std::move(lease_id), epoch_, now + policy_.lease_time,
                        offset_range{r->off, r->off}, r->dlq_id};
    settled_.assign(1, false);
    unsettled_ = 1;
    result.lease = lease_;
    return result;
  }
  if (plan.skipped && plan.skipped->last > committed_) {
    committed_ = plan.skipped->last;
    while (!counters_.empty() && counters_.front().off <= committed_)
      counters_.pop_front();
  }
  for (auto o : plan.dead)
    result.dead.push_back(bury(o, "maxDeliveries reached"));
  delivered = std::min(delivered, plan.deliver.size());
  not_before_.reset();
  if (delivered > 0) {
    lease_offsets_.assign(plan.deliver.begin(),
                          plan.deliver.begin()
                              + static_cast<std::ptrdiff_t>(delivered));
    for (auto o : lease_offsets_) {
      auto& c = counters(o);
      c.deliveries += 1;
      result.delivery_counts.emplace_back(o, c.deliveries);
    }
    epoch_ += 1;
    lease_ = lease_info{std::move(lease_id),
                        epoch_,
                        now + policy_.lease_time,
                        {lease_offsets_.front(), lease_offsets_.back()},
                        std::nullopt};
    leased_ = lease_->range;
    settled_.assign(lease_offsets_.size(), false);
    unsettled_ = lease_offsets_.size();
    result.lease = lease_;
  }
  advance();
  return result;
}

void cursor_core::note_lease_txids(std::vector<std::uint64_t> hashes) {
  hashes.resize(std::min(hashes.size(), lease_offsets_.size()));
  lease_txids_ = std::make_shared<const lease_txid_list>(
      lease_txid_list{std::move(hashes), lease_offsets_});
}

std::optional<offset>
cursor_core::frame_of(std::string_view transaction_id) const {
  // Ids repeat only past a queue's dedup window: the first frame with the
  // id that is not settled yet, else the first with it.
  auto h = txid_hash(transaction_id);
  std::optional<offset> first;
  if (!lease_txids_)
    return std::nullopt;
  auto& list = *lease_txids_;
  // By hash, built at the first ack by transactionId of a lease (a lease
  // acked by offset never pays for it): a list of n acks costs n log n.
  if (list.index.empty() && !list.hashes.empty()) {
    list.index.reserve(list.hashes.size());
    for (std::size_t i = 0; i < list.hashes.size(); ++i)
      list.index.emplace_back(list.hashes[i], i);
    std::sort(list.index.begin(), list.index.end());
  }
  auto lo = std::lower_bound(list.index.begin(), list.index.end(),
                             std::pair<std::uint64_t, std::size_t>{h, 0});
  for (auto it = lo; it != list.index.end() && it->first == h; ++it) {
    auto off = list.offsets[it->second];
    if (!first)
      first = off;
    auto idx = lease_index(off);
    if (off > committed_ && !is_done(off) && idx && !settled_[*idx])
      return off;
  }
  return first;
}

std::uint64_t cursor_core::txid_hash(std::string_view transaction_id) noexcept {
  return XXH3_64bits(transaction_id.data(), transaction_id.size());
}

bool cursor_core::release_unwritten(const std::string& lease_id) {
  if (!lease_ || lease_->id != lease_id)
    return false;
  if (lease_->requeued) {
    if (auto* r = find_requeued(*lease_->requeued)) {
      if (r->deliveries > 0)
        r->deliveries -= 1;
      r->leased = false;
    }
    lease_offsets_.clear();
  }
  for (auto o : lease_offsets_) {
    auto it = std::lower_bound(
        counters_.begin(), counters_.end(), o,
        [](const storage::frame_counters& c, offset x) { return c.off < x; });
    if (it == counters_.end() || it->off != o)
      continue;
    auto& c = *it;
    if (c.deliveries > 0)
      c.deliveries -= 1;
    if (c.deliveries == 0 && c.failures == 0 && !c.done)
      counters_.erase(it);
  }
  lease_.reset();
  leased_.reset();
  lease_offsets_.clear();
  settled_.clear();
  not_before_.reset();
  return true;
}

std::pair<bool, std::vector<dead_letter>> cursor_core::expire(mono_time now) {
  std::vector<dead_letter> dead;
  if (!lease_ || now < lease_->expires)
    return {false, std::move(dead)};
  settle_deleted();
  if (lease_->requeued) {
    if (auto d = charge_requeued(*lease_->requeued, "lease expired"))
      dead.push_back(std::move(*d));
    end_lease(now, milliseconds{0});
    return {true, std::move(dead)};
  }
  auto unsettled = unsettled_in_lease();
  if (unsettled.size() == 1) {
    if (auto d = charge(unsettled.front(), "lease expired"))
      dead.push_back(std::move(*d));
  } else if (unsettled.size() > 1) {
    isolated_ = offset_range{unsettled.front(), unsettled.back()};
  }
  end_lease(now, milliseconds{0});
  advance();
  return {true, std::move(dead)};
}

std::pair<bool, std::vector<dead_letter>> cursor_core::recover_lost_lease() {
  std::vector<dead_letter> dead;
  bool changed = false;
  for (std::size_t i = 0; i < requeued_.size(); ++i) {
    if (!requeued_[i].leased)
      continue;
    changed = true;
    requeued_[i].leased = false;
    if (auto d
        = charge_requeued(requeued_[i].dlq_id, "lease lost to a restart")) {
      dead.push_back(std::move(*d));
      break; // at most one is leased
    }
  }
  if (!leased_)
    return {changed, std::move(dead)};
  std::vector<offset> unsettled;
  for (auto o = std::max(leased_->first, committed_ + 1); o <= leased_->last;
       o = o + 1) {
    if (o < watermark_) // deleted under the lost lease: counts as completed
      counters(o).done = true;
    if (!is_done(o))
      unsettled.push_back(o);
  }
  if (unsettled.size() == 1) {
    if (auto d = charge(unsettled.front(), "lease lost to a restart"))
      dead.push_back(std::move(*d));
  } else if (unsettled.size() > 1) {
    isolated_ = offset_range{unsettled.front(), unsettled.back()};
  }
  leased_.reset();
  advance();
  return {true, std::move(dead)};
}

std::variant<mono_time, extend_error>
cursor_core::extend(const std::string& lease_id, milliseconds by,
                    mono_time now) {
  if (by < std::chrono::seconds{1} || by > policy_.max_extend)
    return extend_error::out_of_range;
  if (!lease_ || lease_->id != lease_id)
    return extend_error::not_found;
  if (now >= lease_->expires)
    return extend_error::expired;
  lease_->expires = std::max(lease_->expires, now + by);
  return lease_->expires;
}

void cursor_core::seek(offset new_committed) {
  // What was overdue when a group asks for it again is delivered, not
  // dead-lettered at once (maxWait judges frames that become overdue later).
  exempt_ = std::max(exempt_, overdue_); // a boundary not known yet keeps it
  committed_ = new_committed;
  epoch_ += 1;
  lease_.reset();
  leased_.reset();
  isolated_.reset();
  counters_.clear();
  lease_offsets_.clear();
  settled_.clear();
  not_before_.reset();
  for (auto& r : requeued_)
    r.leased = false;
}

storage::cursor_record
cursor_core::record_after_seek(offset new_committed,
                               storage::micros wall) const {
  storage::cursor_record rec;
  rec.committed = new_committed;
  rec.lease_epoch = epoch_ + 1;
  rec.last_activity = std::max(last_activity_, wall);
  rec.requeued = requeued_;
  for (auto& r : rec.requeued)
    r.leased = false;
  rec.exempt = std::max(exempt_, overdue_); // as `seek` sets it
  return rec;
}

// -- retention ----------------------------------------------------------------

std::vector<dead_letter> cursor_core::judge_overdue(std::size_t max) {
  std::vector<dead_letter> out;
  auto o = std::max({committed_ + 1, watermark_, exempt_ + 1});
  for (; o <= overdue_ && out.size() < max; o = o + 1) {
    // The live lease's range holds its frames and done ones only: skip it.
    if (lease_ && !lease_->requeued && o >= lease_->range.first
        && o <= lease_->range.last) {
      o = lease_->range.last;
      continue;
    }
    if (!is_done(o))
      out.push_back(bury(o, "maxWaitTimeSeconds exceeded"));
  }
  advance();
  return out;
}

void cursor_core::settle_deleted() {
  if (!lease_ || lease_->requeued)
    return;
  for (std::size_t i = 0;
       i < lease_offsets_.size() && lease_offsets_[i] < watermark_; ++i) {
    auto o = lease_offsets_[i];
    if (settled_[i] || o <= committed_ || is_done(o))
      continue;
    counters(o).done = true;
    settled_[i] = true;
    --unsettled_;
  }
}

// -- internals ----------------------------------------------------------------

namespace {

/// Index of the element with key `off` in a container sorted by key, or
/// end: first tries the index the key would have if the keys were dense
/// (the usual case: leases and counters cover runs of offsets).
template <class C, class Key>
std::size_t index_of(const C& c, offset off, Key key) {
  if (c.empty())
    return 0;
  auto guess = off - key(c.front());
  if (guess >= 0 && static_cast<std::size_t>(guess) < c.size()
      && key(c[static_cast<std::size_t>(guess)]) == off)
    return static_cast<std::size_t>(guess);
  auto it
      = std::lower_bound(c.begin(), c.end(), off,
                         [&](const auto& x, offset o) { return key(x) < o; });
  return static_cast<std::size_t>(it - c.begin());
}

offset counters_key(const storage::frame_counters& c) {
  return c.off;
}

offset offset_key(offset o) {
  return o;
}

} // namespace

storage::frame_counters& cursor_core::counters(offset off) {
  // Grants append ascending offsets: the back is the usual place.
  if (counters_.empty() || counters_.back().off < off)
    return counters_.emplace_back(storage::frame_counters{off});
  auto i = index_of(counters_, off, counters_key);
  if (i < counters_.size() && counters_[i].off == off)
    return counters_[i];
  return *counters_.insert(counters_.begin() + static_cast<std::ptrdiff_t>(i),
                           storage::frame_counters{off});
}

const storage::frame_counters* cursor_core::find_counters(offset off) const {
  auto i = index_of(counters_, off, counters_key);
  return i < counters_.size() && counters_[i].off == off ? &counters_[i]
                                                         : nullptr;
}

std::optional<std::size_t> cursor_core::lease_index(offset off) const {
  auto i = index_of(lease_offsets_, off, offset_key);
  if (i >= lease_offsets_.size() || lease_offsets_[i] != off)
    return std::nullopt;
  return i;
}

bool cursor_core::is_done(offset off) const {
  auto* c = find_counters(off);
  return c != nullptr && c->done;
}

void cursor_core::advance() {
  while (!counters_.empty() && counters_.front().off == committed_ + 1
         && counters_.front().done) {
    committed_ = counters_.front().off;
    counters_.pop_front();
  }
  if (isolated_ && committed_ >= isolated_->last)
    isolated_.reset();
}

void cursor_core::end_lease(mono_time now, milliseconds delay) {
  settle_deleted();
  for (auto& r : requeued_)
    r.leased = false;
  lease_.reset();
  leased_.reset();
  lease_offsets_.clear();
  settled_.clear();
  // Bounded (checked at the edge; clamped here so no time can overflow).
  delay = std::min(delay, max_ack_delay);
  if (delay.count() > 0)
    not_before_ = now + delay;
  else
    not_before_.reset();
}

std::optional<dead_letter> cursor_core::charge(offset off,
                                               const std::string& error) {
  auto& c = counters(off);
  c.failures += 1;
  if (static_cast<std::int64_t>(c.failures) > policy_.retry_limit)
    return bury(off, error);
  return std::nullopt;
}

dead_letter cursor_core::bury(offset off, std::string error) {
  auto& c = counters(off);
  c.done = true;
  return dead_letter{off, std::move(error), c.deliveries, c.failures,
                     std::nullopt};
}

std::vector<offset> cursor_core::unsettled_in_lease() const {
  std::vector<offset> out;
  for (std::size_t i = 0; i < lease_offsets_.size(); ++i)
    if (!settled_[i] && !is_done(lease_offsets_[i]))
      out.push_back(lease_offsets_[i]);
  return out;
}

milliseconds cursor_core::retry_delay_for(std::uint32_t failures) const {
  if (policy_.retry_backoff.empty() || failures == 0)
    return policy_.retry_delay;
  auto idx
      = std::min<std::size_t>(failures - 1, policy_.retry_backoff.size() - 1);
  return policy_.retry_backoff[idx];
}

} // namespace spool::core
