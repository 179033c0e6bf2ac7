#pragma once

/// One pop over its candidate partitions (semantics.md §3): the frames and
/// bytes of the pop are one budget shared by the partitions it claims, in
/// the order asked; a wildcard claims at most `partitions` of them, steps
/// over a partition whose cursor is restarting, and starts where the
/// group's last wildcard claim left the rotation. Pure: the queue actor asks
/// the partitions and reports each answer here.

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "vocab/delivery.hpp"

namespace spool::core {

/// When a wildcard pop that met a restarting cursor (and nothing else)
/// looks at that partition again.
inline constexpr milliseconds restart_retry{100};

class pop_claim {
public:
  /// A pop of at most `batch` frames (at least one) and `max_bytes` payload
  /// bytes over `candidates` partitions, asked in order, claiming at most
  /// `partitions` (at least one). A named-partition pop has one candidate
  /// and is not a `wildcard`.
  pop_claim(std::size_t candidates, std::size_t batch, std::size_t partitions,
            std::size_t max_bytes, bool wildcard);

  /// The candidate to ask next and its share of the budget.
  struct ask {
    std::size_t candidate = 0;
    std::size_t batch = 0;
    std::size_t max_bytes = 0;
  };

  /// The next candidate to ask; none when the pop is done (its budget
  /// spent, enough partitions claimed, or no candidate left). A candidate
  /// the caller cannot ask (gone) is simply not reported.
  std::optional<ask> next();

  /// The candidate asked delivered `frames` frames of `bytes` payload
  /// bytes: claimed, the budget lowered.
  void delivered(std::size_t frames, std::size_t bytes);

  /// It had nothing for the group: why, and when it may have.
  void empty(empty_reason why, std::optional<mono_time> retry_at);

  /// Its cursor for the group is restarting (nothing was taken). A wildcard
  /// goes on, and looks again `restart_retry` after `now` should it find
  /// nothing elsewhere: true. A named-partition pop answers the error:
  /// false.
  bool restarting(mono_time now);

  /// Its write failed (nothing of its share was taken): whether the failure
  /// is the answer. Only with nothing claimed: shares claimed before it are
  /// durable and are answered (their leases would otherwise be orphaned).
  bool failure_answers() const noexcept {
    return claimed_ == 0;
  }

  std::size_t claimed() const noexcept {
    return claimed_;
  }

  /// The reason of an answer with nothing claimed: a delay, then a
  /// windowBuffer, then a held lease, then `empty`; `no_partition` when no
  /// partition answered.
  empty_reason reason() const;

  /// The earliest time an asked partition may have something.
  const std::optional<mono_time>& retry_at() const noexcept {
    return retry_at_;
  }

private:
  void retry_no_later(std::optional<mono_time> t);

  std::size_t candidates_;
  std::size_t next_ = 0;
  std::size_t frames_left_;
  std::size_t bytes_left_;
  std::size_t max_claims_;
  bool wildcard_;
  std::size_t claimed_ = 0;
  std::vector<empty_reason> reasons_;
  std::optional<mono_time> retry_at_;
};

/// Per group, where its next wildcard pop starts in the queue's ring: after
/// the partition of its last wildcard claim, so every partition with
/// deliverable frames is served within ceil(P / partitions) pops of the
/// group (semantics.md §3, "Wildcard choice").
class rotation {
public:
  /// The ring position the group's next wildcard pop starts from.
  std::size_t start(const std::string& group) const;
  /// A wildcard pop of `group` claimed the partition at `ring_index`.
  void claimed(const std::string& group, std::size_t ring_index);
  /// The group is gone (deleted): its next pop starts at the ring's head.
  void forget(const std::string& group);

private:
  std::unordered_map<std::string, std::size_t> next_;
};

} // namespace spool::core
