#include "core/queue/claim.hpp"

#include <algorithm>

namespace spool::core {

pop_claim::pop_claim(std::size_t candidates, std::size_t batch,
                     std::size_t partitions, std::size_t max_bytes,
                     bool wildcard) :
    candidates_(candidates),
    frames_left_(std::max<std::size_t>(batch, 1)),
    bytes_left_(max_bytes),
    max_claims_(std::max<std::size_t>(partitions, 1)),
    wildcard_(wildcard) {
}

std::optional<pop_claim::ask> pop_claim::next() {
  if (next_ >= candidates_ || frames_left_ == 0 || claimed_ >= max_claims_)
    return std::nullopt;
  return ask{next_++, frames_left_, bytes_left_};
}

void pop_claim::delivered(std::size_t frames, std::size_t bytes) {
  frames_left_ -= std::min(frames_left_, frames);
  bytes_left_ -= std::min(bytes_left_, bytes);
  ++claimed_;
}

void pop_claim::retry_no_later(std::optional<mono_time> t) {
  if (t && (!retry_at_ || *t < *retry_at_))
    retry_at_ = t;
}

void pop_claim::empty(empty_reason why, std::optional<mono_time> retry_at) {
  reasons_.push_back(why);
  retry_no_later(retry_at);
}

bool pop_claim::restarting(mono_time now) {
  if (!wildcard_)
    return false;
  reasons_.push_back(empty_reason::empty);
  retry_no_later(now + restart_retry);
  return true;
}

empty_reason pop_claim::reason() const {
  for (auto r : {empty_reason::delayed, empty_reason::window_buffer,
                 empty_reason::lease_held})
    if (std::find(reasons_.begin(), reasons_.end(), r) != reasons_.end())
      return r;
  return reasons_.empty() ? empty_reason::no_partition : empty_reason::empty;
}

std::size_t rotation::start(const std::string& group) const {
  auto it = next_.find(group);
  return it == next_.end() ? 0 : it->second;
}

void rotation::claimed(const std::string& group, std::size_t ring_index) {
  next_[group] = ring_index + 1;
}

void rotation::forget(const std::string& group) {
  next_.erase(group);
}

} // namespace spool::core
