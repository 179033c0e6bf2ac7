#pragma once

/// How far each slot's log is durable: the highest seq of each slot that
/// the durability policy has declared durable. The writer raises it, in
/// seq order, when it releases a group's answers; a reader checks what it
/// read against it before it answers (docs/architecture.md, "Answers wait
/// for durability"). One writer, many readers: plain atomics. No CAF.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "storage/slot_log.hpp"

namespace spool::actors {

class durable_marks {
public:
  /// Every slot at seq 0 (nothing durable yet).
  explicit durable_marks(std::uint32_t slots);
  /// Every slot of the store in `e` at its last seq: on one node what a
  /// store holds when it opens is durable (it was synced before it was
  /// answered).
  static storage::expected<std::shared_ptr<durable_marks>> of(storage::env& e);

  std::uint32_t slots() const noexcept {
    return slots_;
  }
  /// Whether seq `m.seq` of slot `m.slot` is durable (a slot outside the
  /// store's count never is).
  bool covers(storage::slot_seq m) const noexcept;
  bool covers(std::span<const storage::slot_seq> marks) const noexcept;
  /// Raises each named slot to at least its seq (never lowers it; any
  /// thread).
  void raise(std::span<const storage::slot_seq> marks) noexcept;

private:
  std::uint32_t slots_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> seqs_;
};

/// Where slot `s`'s log stood in the snapshot `t` reads: the seq an answer
/// built from that snapshot depends on.
storage::expected<storage::slot_seq> read_mark(storage::txn& t,
                                               storage::slot_t s);

} // namespace spool::actors
