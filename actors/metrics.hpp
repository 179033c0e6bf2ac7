#pragma once

/// Counters the broker-core actors bump; shared by every actor of a node
/// (atomics: actors run on several threads). Read by metrics endpoints.

#include <atomic>
#include <cstdint>
#include <memory>

namespace spool::actors {

struct node_metrics {
  /// Messages acks made done (completed or dead-lettered; an `upTo`
  /// counts every frame it completed), counted once their write is
  /// durable. Acks inside a transaction are not counted.
  std::atomic<std::uint64_t> messages_acked{0};
  /// Frames dropped instead of dead-lettered (`deadLetterQueue=false` and
  /// `dlqAfterMaxRetries=false`).
  std::atomic<std::uint64_t> dead_letters_dropped{0};
  /// DLQ entries removed by `dlqRetentionSeconds`.
  std::atomic<std::uint64_t> dead_letters_expired{0};
  /// Messages a cursor jumped over because retention or purge deleted them
  /// before the group consumed them (the `skipped` of pop responses).
  std::atomic<std::uint64_t> retention_skipped{0};
  /// Pops the queues asked partitions (a wildcard pop asks only the
  /// partitions that may have something for the group).
  std::atomic<std::uint64_t> partition_pops{0};
  /// Frames deleted by retention (retentionSeconds,
  /// completedRetentionSeconds), and the writes that deleted them.
  std::atomic<std::uint64_t> retention_frames_deleted{0};
  std::atomic<std::uint64_t> retention_writes{0};
  /// Frames dead-lettered by maxWaitTimeSeconds.
  std::atomic<std::uint64_t> max_wait_dead_letters{0};
  /// Writes that failed (the change they carried was undone).
  std::atomic<std::uint64_t> failed_writes{0};
  /// Actors that died (a bug) and were restarted from storage by their
  /// parent.
  std::atomic<std::uint64_t> actor_restarts{0};
  /// Long polls parked in the node now, across its queues and namespaces
  /// (the pop.maxParked cap counts these): the broker's count itself.
  std::atomic<std::size_t> pops_parked{0};
  /// Partitions in the node's loaded queues, and of those the ones with a
  /// live actor now (spawned at first contact; issue 38).
  std::atomic<std::int64_t> partitions_loaded{0};
  std::atomic<std::int64_t> partition_actors{0};
};

/// A share of one of the node's gauges, taken back when it goes (a
/// queue's partitions, a partition's actor).
class gauge_share {
public:
  using field = std::atomic<std::int64_t> node_metrics::*;
  gauge_share(std::shared_ptr<node_metrics> m, field f) :
      m_(std::move(m)), f_(f) {
  }
  gauge_share(const gauge_share&) = delete;
  gauge_share& operator=(const gauge_share&) = delete;
  ~gauge_share() {
    add(-n_);
  }
  void add(std::int64_t n) {
    if (m_) {
      (m_.get()->*f_) += n;
      n_ += n;
    }
  }

private:
  std::shared_ptr<node_metrics> m_;
  field f_;
  std::int64_t n_ = 0;
};

} // namespace spool::actors
